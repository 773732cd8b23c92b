"""The rule-based default association: tool readings and layout -> an entry plan.

The plan is the same JSON the model endpoint returns (see :mod:`.endpoint`), so both
paths go through one assembly step.  Rules, in order:

1. **Rows.** A band that holds an arrow is a reaction row.  Reading left to right, the
   structures before the first arrow are stage 0, those between arrow k and k+1 are
   stage k+1; only structures that straddle the row's arrow axis take part (a catalyst
   drawn under the arrow or below a reactant does not).  A row that opens with an arrow
   continues the previous row: its stage 0 is that row's last stage.  Step k is stage k-1 -> stage k (a multi-step scheme gives one reaction per
   arrow; the product of one step is a reactant of the next).
2. **Templates.** A row in which any structure reads with an attachment point ``*`` is
   a template row: stage 0 gives the reactant templates and the last stage the product
   template — a row of several arrows through a drawn intermediate is expanded for its
   net transformation (if one of the end structures was not read, no entry is expanded).  Its entries come from
   a. printed binding lines ``<id> R1 = Me`` (a table under the scheme): one entry each,
      the id printed at the start of the line or on its own to the left of it;
   b. concrete structures drawn in bands below the row (a product scope): one entry
      each, its identifier the text line just under it; binding lines without an id are
      then figure-level bindings (a footnote such as ``X = I``) given to every entry.
3. **Conditions and yields.** Printed lines just above or below an arrow (centre over
   the arrow, within 60 px) are that step's conditions, kept as text; a percentage on a
   binding line is that entry's yield.  Neither enters the primary score.
4. **Template first.**  A concrete structure outside every row and scope that the R-group
   engine relates to a scope's templates becomes one more entry of that scope (a product
   drawn beside the row, or in a grid the layout did not band under it).  Where no arrow
   was found at all, two or more readings with attachment points still make a scope:
   the product template is the one the engine relates the most concrete readings to
   (at least one), the others are the reactant templates, and those readings its
   entries.  Arrows decide the roles wherever they exist.
5. Structures outside any row and not used by a scope are left unassigned (kept in the
   trajectory, not guessed into a reaction).

OCR confusions in identifiers and labels are repaired by a fixed table (``l``/``I``/``|``
-> ``1`` in ``R1`` and ``1a``; ``CI`` -> ``Cl``; ``0`` -> ``O``), applied only when the
repaired value is a known abbreviation.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from labrecord.chemdata.abbreviations import ABBREVIATIONS
from labrecord.chemdata.extract.layout import Segment, contains, overlaps
from labrecord.chemdata.extract.osra import Reading
from labrecord.chemdata.extract.tesseract import TextLine

#: a variable as printed; ``Ry`` and ``Ro`` are R₁ and R₂ as OCR reads small subscripts
_VARIABLE = r"R\s?[0-9lIi|yo]?'*|X|Y|Ar"
_PAIR = re.compile(rf"(?<![A-Za-z])({_VARIABLE})\s*[=:]\s*([^\s,;]+)")
#: variables sharing one printed value: ``R1, R2 = H``
_SHARED = re.compile(rf"(?<![A-Za-z])((?:(?:{_VARIABLE})\s*,\s*)+)({_VARIABLE})\s*[=:]\s*([^\s,;]+)")
_YIELD = re.compile(r"\b\d{1,3}(?:\.\d)?\s?%")
#: a whole value that is a yield: ``77%``, ``(77%)``
_A_YIELD = re.compile(r"^\(?\d{1,3}(?:\.\d)?%\)?[,.;]?$")
_ENTRY_ID = re.compile(r"^\(?([0-9lI|][0-9]*[a-z]?)\)?$")
_OCR_SWAPS = (("I", "l"), ("1", "l"), ("|", "l"), ("0", "O"), ("l", "1"), ("5", "S"), (";", "3"))


def normalize_entry_id(token: str) -> str | None:
    """``la`` -> ``1a``, ``(2b)`` -> ``2b``, ``10b,`` -> ``10b``; None when ``token`` is not an identifier."""
    match = _ENTRY_ID.match(token.strip().rstrip(",.:;"))
    if not match:
        return None
    text = match.group(1)
    return ("1" + text[1:]) if text[0] in "lI|" else text


def normalize_variable(token: str) -> str:
    """``Rl``/``RI``/``Ri``/``R|``/``R!``/``Rt``/``Ry`` -> ``R1``, ``R?``/``Rz``/``Ro`` -> ``R2``
    (superscript and subscript digits as OCR reads them); other variable names unchanged
    (spaces removed)."""
    text = token.replace(" ", "")
    if text.startswith("R") and len(text) > 1 and text[1] in "lIi|!ty":
        text = "R1" + text[2:]
    elif text.startswith("R") and len(text) > 1 and text[1] in "?zZo":
        text = "R2" + text[2:]
    return text


def repair_value(value: str) -> str:
    """An OCR'd substituent: itself if known, else the first single-swap repair that is,
    else a phenyl formula with misread subscripts (:func:`repair_aryl_formula`).  A
    trailing ``.`` or ``_`` (a table rule or underline OCR ran into) is no part of it."""
    text = value.strip().rstrip("._")
    if text in ABBREVIATIONS:
        return text
    for wrong, right in _OCR_SWAPS:
        candidate = text.replace(wrong, right)
        if candidate in ABBREVIATIONS:
            return candidate
    return repair_aryl_formula(value.strip()) or text


#: what OCR makes of the subscript 6 of a phenyl formula (C₆H₄) in journal fonts
_SUBSCRIPT_SIX = frozenset(".,;:'sSoObG6")
#: a phenyl formula as read: locants first, then groups, ``C``, one character, ``H``, at most one more
_ARYL_AS_READ = re.compile(r"^(?P<prefix>[2-6](?:,[2-6])*-?[^\s]+?)C(?P<six>.)H(?P<count>.?)$")


def repair_aryl_formula(text: str) -> str | None:
    """A substituted-phenyl formula whose subscripts OCR misread, written again, or None.

    ``4-BrC.Hy`` -> ``4-BrC6H4``, ``2,4-Cl,C.H`` -> ``2,4-Cl2C6H3``.  Only a formula that
    starts with locants is repaired: the locants fix the ring (a benzene, attached at 1)
    and its hydrogen count (5 minus the groups), so the lost subscripts follow from what
    is legible.  The character read for the 6 must be one OCR makes of a subscript 6; a
    group's subscript 2 read as ``,`` or ``.`` is tried as 2; the hydrogen count is the
    one digit read, else the only count :func:`~labrecord.chemdata.abbreviations.aryl_formula`
    accepts.  Without locants (``CoH``: C₆H₅, C₆H₁₁ or C₆H₁₃?) nothing is repaired —
    unless one character stands for the hydrogen count and it reads as a 5 (``CoHs``):
    of the three only C₆H₅ has a one-digit count."""
    from labrecord.chemdata.abbreviations import aryl_formula

    if re.fullmatch(r"C.H[5sS]", text) and text[1] in _SUBSCRIPT_SIX:
        return "C6H5"  # one character for the hydrogens: of C6H5, C6H11, C6H13 only C6H5
    match = _ARYL_AS_READ.match(text)
    if match is None or match["six"] not in _SUBSCRIPT_SIX:
        return None
    prefix = match["prefix"]
    prefixes = dict.fromkeys([prefix, re.sub(r"(?<=[a-z)])[,.](?=-|$)", "2", prefix)])
    counts = [match["count"]] if match["count"].isdigit() else ["1", "2", "3", "4"]
    found = [f"{p}C6H{h}" for p in prefixes for h in counts if aryl_formula(f"{p}C6H{h}")]
    return found[0] if len(found) == 1 else None


def binding_lines(lines: list[TextLine]) -> list[tuple[str | None, dict[str, str], TextLine]]:
    """Printed lines with at least one ``VAR = value`` pair: (entry id or None, bindings, line).
    Variables listed before one ``=`` share its value (``10b, R1, R2 = H``)."""
    found = []
    for line in lines:
        pairs = _PAIR.findall(line.text)
        if not pairs:
            continue
        first = line.text.split()[0]
        entry = normalize_entry_id(first) if not _PAIR.match(line.text) else \
            (_id_left_of(line, lines) or trailing_entry_id(line.text))
        # a yield is never a substituent (OCR joins ``Ar =`` of one line to ``77%`` of another)
        # a subscript 2 read as a comma inside a formula (``CH,OH``) cut the value short
        pairs = [(k, subscript_commas(line.text[m.start(2):]) or v)
                 for (k, v), m in zip(pairs, _PAIR.finditer(line.text))]
        # ``X: a=OMe`` is the head of a lettered list (:func:`lettered_columns`), not X = "a=OMe"
        bindings = {normalize_variable(k): repair_value(v) for k, v in pairs if not _A_YIELD.match(v) and "=" not in v}
        for names, last, value in _SHARED.findall(line.text):
            for name in re.findall(_VARIABLE, names) + [last]:
                if not _A_YIELD.match(value):
                    bindings.setdefault(normalize_variable(name), repair_value(value))
        if bindings:
            found.append((entry, bindings, line))
    return found


def subscript_commas(text: str) -> str | None:
    """A formula at the start of ``text`` whose subscript 2s OCR read as commas, written
    again, when that makes a group the engine knows: ``CH,OH`` -> ``CH2OH``, ``CH,CH(CH3),``
    -> ``CH2CH(CH3)2`` (isobutyl, :func:`~labrecord.chemdata.abbreviations.condensed_formula`);
    None when the word has no such comma or the repair names nothing (``H, 89%`` is H and
    a yield)."""
    from labrecord.chemdata.abbreviations import lookup

    word = text.split()[0] if text.split() else ""
    if "," not in word.rstrip(","):
        return None
    candidate = re.sub(r"(?<=[A-Za-z)]),(?=[A-Z(]|$)", "2", word)
    return candidate if "," not in candidate and lookup(candidate) else None


#: a column header or drawing label naming a variable: R, R1, R², R', Ar, Ar1, X, Y, Z
LABEL_WORD = re.compile(r"^(R\s?[0-9lIi|!t?zZoy]?'*|Ar[0-9]?|X[0-9]?|Y|Z)[,=:]?$")
#: formulas printed in tables for common groups -> the abbreviation the engine knows
FORMULA_ALIASES = {"CH3": "Me", "CH3O": "OMe", "CH30": "OMe", "MeO": "OMe", "OCH3": "OMe", "C6H5": "Ph", "C2H5": "Et",
                   "CH2OH": "CH2OH", "CO2CH3": "CO2Me", "4-MeOC6H4": "4-MeOC6H4"}


def table_value(token: str) -> str:
    """A table cell as a substituent: a known formula alias, else an OCR repair."""
    text = token.strip().rstrip(",;")
    parts = text.split("/")
    if len(parts) > 1 and all(parts):  # ``I/Br``: the row run with each (:func:`alternatives`)
        values = [table_value(part) for part in parts]
        from labrecord.chemdata.abbreviations import lookup

        if all(lookup(value) for value in values):
            return "/".join(values)
    if text in FORMULA_ALIASES:
        return FORMULA_ALIASES[text]
    for wrong, right in _OCR_SWAPS:
        if text.replace(wrong, right) in FORMULA_ALIASES:
            return FORMULA_ALIASES[text.replace(wrong, right)]
    return repair_value(text)


def ordinal_labels(words: Sequence[str], variables: Collection[str]) -> list[str] | None:
    """The template's variables ``R1 … Rn`` in ascending order for a header's variable
    columns read left to right, or None.

    Superscript digits are what OCR reads worst (``R¹`` -> ``R!``, ``R⁴`` -> ``Rt``, ``R²``
    -> ``R``), and a scope table lists its R columns in ascending order.  So when the
    header's labels as normalized are not the template's variables (one repeats, or one is
    not among them), and the header has exactly as many columns as the template has
    variables, all of them R labels, the columns take the variables in order, provided no
    label read with a plain digit (``R3``) says otherwise.  Hand check: ``R! R R Rt`` under
    a template with R1–R4 normalizes to R1, R, R, R1 (R1 twice): the columns become R1, R2,
    R3, R4.  ``R1 R3`` under R1, R2 is refused (R3 was read plainly and is no template
    variable)."""
    numbered = sorted((v for v in set(variables) if re.fullmatch(r"R\d+", v)), key=lambda v: int(v[1:]))
    cleaned = [w.rstrip(",=:").replace(" ", "") for w in words]
    normalized = [normalize_variable(w) for w in cleaned]
    if len(numbered) < 2 or len(numbered) != len(set(variables)) or len(cleaned) != len(numbered):
        return None
    if len(set(normalized)) == len(normalized) and set(normalized) <= set(numbered):
        return None  # the labels as read are already the template's
    for word, variable in zip(cleaned, numbered):
        if not word.startswith("R") or (re.fullmatch(r"R\d+'*", word) and word != variable):
            return None
    return numbered


def table_entries(lines: list[TextLine], below: float = 0.0,
                  variables: Collection[str] = ()) -> list[tuple[str, dict[str, str], TextLine]]:
    """Entries of a substrate table under ``below`` (y): a header line naming variables
    (``entry R1 R2 conv. yield``), then rows that start with an entry id; each variable's
    cell is the row's word nearest its header's column.  ``variables``: the template's, for
    headers whose superscripts OCR lost (:func:`ordinal_labels`).  Rows repeating an
    earlier row's bindings (an optimization table) are kept once."""
    ordered = sorted((ln for ln in lines if ln.box[1] >= below and ln.words), key=lambda ln: (ln.box[1], ln.box[0]))
    header, columns = None, []
    for line in ordered:
        words = [(w, (b[0] + b[2]) / 2) for w, b in line.words if LABEL_WORD.match(w)]
        found = [(normalize_variable(w.rstrip(",=:")), x) for w, x in words]
        if found and not _PAIR.search(line.text):
            header, columns = line, found
            ordinal = ordinal_labels([w for w, _ in sorted(words, key=lambda item: item[1])], variables)
            if ordinal is not None:
                columns = list(zip(ordinal, sorted(x for _, x in words)))
            break
    if header is None:
        return []
    entries: list[tuple[str, dict[str, str], TextLine]] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for line in ordered:
        if line.box[1] <= header.box[3] or not line.words:
            continue
        entry = normalize_entry_id(line.words[0][0])
        if entry is None or len(line.words) < 2:
            continue  # a stray cell read on its own, a footnote
        cells = [(w, (b[0] + b[2]) / 2) for w, b in line.words[1:]]
        bindings = {}
        for index, (label, x) in enumerate(columns):
            gaps = [abs(x - other) for j, (_, other) in enumerate(columns) if j != index]
            reach = min(gaps) / 2 if gaps else float("inf")
            near = [(abs(cx - x), w) for w, cx in cells if abs(cx - x) <= reach]
            if near:
                bindings[label] = table_value(min(near)[1])
        key = tuple(sorted(bindings.items()))
        if bindings and key not in seen:
            seen.add(key)
            entries.append((entry, bindings, line))
    return entries


#: one item of a lettered list: ``X: a=OMe 69%`` (the head names the variable), ``b=H 71%``
_LETTERED = re.compile(rf"^(?:(?P<var>{_VARIABLE})\s*[:=]\s*)?(?P<id>[a-z])\s*=\s*(?P<value>[^\s%]+)"
                       rf"(?:\s+(?P<yield>\d{{1,3}}(?:\.\d)?\s?%))?$")


@dataclass(frozen=True)
class LetteredColumn:
    """A lettered list printed as one column: ``X: a=OMe 69%``, ``b=H 71%`` … under it.
    ``variable`` is the head's (None when OCR lost it); ``items`` are (letter, value,
    yield or None)."""

    variable: str | None
    items: tuple[tuple[str, str, str | None], ...]
    box: tuple[int, int, int, int]
    first: tuple[int, int, int, int]


def lettered_value(text: str) -> str:
    """An item's value as OCR read it, repaired: a subscript 2 read as a comma
    (``NO,`` -> ``NO2``) where that makes a known group, else :func:`repair_value`."""
    from labrecord.chemdata.abbreviations import lookup

    if text.endswith(",") and lookup(text[:-1] + "2"):
        return text[:-1] + "2"
    return repair_value(text.rstrip(",;"))


def lettered_columns(lines: list[TextLine]) -> list[LetteredColumn]:
    """The lettered lists of a figure, a column each: lines that read ``[VAR:] id=value
    [yield]`` with a one-letter id, stacked (each starts within two line heights under
    the one above, its left edge within two line heights of the column's) under a
    first line; the variable is the one the first line names.  A column whose first
    line names no variable must start at ``a``.

    Hand check: ``X: a=OMe 69%`` at (191, 212) and ``b=H 71%`` at (217, 234), 14 px
    high, make one column of X with items a = OMe (69%) and b = H (71%)."""
    parsed = []
    for line in sorted(lines, key=lambda ln: (ln.box[1], ln.box[0])):
        found = _LETTERED.match(line.text.strip())
        if found:
            parsed.append((line, found))
    columns: list[list[tuple[TextLine, re.Match[str]]]] = []
    for line, found in parsed:
        height = max(1, line.box[3] - line.box[1])
        for column in columns:
            last, _ = column[-1]
            # an item's id starts where the head's id does, right of the head's variable
            left = column[0][0].box[0] if len(column) > 1 or not column[0][1]["var"] else None
            if ord(found["id"]) == ord(column[-1][1]["id"]) + 1 and 0 <= line.box[1] - last.box[3] <= 2 * height \
                    and not found["var"] and \
                    (abs(line.box[0] - last.box[0]) <= 2 * height if left is None else abs(line.box[0] - left) <= 2 * height
                     or abs(line.box[0] - last.box[0]) <= 3 * height):
                column.append((line, found))
                break
        else:
            columns.append([(line, found)])
    out = []
    for column in columns:
        head = column[0][1]["var"]
        if head is None and column[0][1]["id"] != "a":
            continue  # a list that names no variable starts at a; a stray ``d=B`` is no list
        items = tuple((found["id"], lettered_value(found["value"]), (found["yield"] or "").replace(" ", "") or None)
                      for _, found in column)
        boxes = [line.box for line, _ in column]
        out.append(LetteredColumn(normalize_variable(head) if head else None, items,
                                  (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                                   max(b[3] for b in boxes)), column[0][0].box))
    return out


def trailing_entry_id(text: str) -> str | None:
    """An identifier printed in brackets at the end of a line (``R = F, 89% (5e)``,
    ``95% (5c)``), or None; a bracketed yield or amount (``(80%)``) is none."""
    words = text.split()
    last = words[-1].rstrip(".,;:") if words else ""
    return normalize_entry_id(last) if last.startswith("(") and last.endswith(")") else None


def _id_left_of(line: TextLine, lines: list[TextLine]) -> str | None:
    """An identifier printed on its own to the left of ``line``, on the same text row."""
    for other in lines:
        if other.box[2] < line.box[0] and other.box[1] < line.box[3] and line.box[1] < other.box[3]:
            entry = normalize_entry_id(other.text)
            if entry:
                return entry
    return None


def assign_readings(segments: list[Segment], readings: list[Reading]) -> dict[int, Reading]:
    """Map each structure segment (by index) to the reading inside it, crop readings first."""
    assigned: dict[int, Reading] = {}
    for index, seg in enumerate(segments):
        if seg.kind != "structure":
            continue
        inside = [r for r in readings if contains(seg.box, r.box)]
        inside.sort(key=lambda r: (r.source != "crop", -r.confidence))
        if inside:
            assigned[index] = inside[0]
    return assigned


def plan_from_rules(segments: list[Segment], readings: list[Reading], lines: list[TextLine]) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The entry plan and the association failures (each {kind, message})."""
    assigned = assign_readings(segments, readings)
    failures: list[dict[str, str]] = []
    plan: dict[str, Any] = {"reactions": [], "scopes": []}
    used: set[str] = set()
    bands = sorted({s.band for s in segments if s.kind == "arrow"})
    if not bands and not any(s.kind == "fork" for s in segments):
        failures.append({"kind": "no_arrow", "message": "no reaction arrow found; nothing to associate"})
    for number, fork in enumerate(s for s in segments if s.kind == "fork"):
        _fork_rows(number, fork, segments, assigned, lines, used, plan, failures)
    carried: list[Reading] = []
    for band in bands:
        stages = _stages(segments, assigned, band, failures)
        if not stages[0] and carried and len(stages) > 1:
            # a row that opens with an arrow continues the previous row's last product
            stages[0] = list(carried)
        carried = list(stages[-1]) if len(stages) > 1 and all(r.smiles for r in stages[-1]) else []
        readings_in_row = [r for stage in stages for r in stage]
        used.update(r.id for r in readings_in_row)
        if any(r.is_template for r in readings_in_row):
            plan["scopes"].append(_scope(band, stages, segments, assigned, lines, used, failures))
        else:
            plan["reactions"].extend(_steps(band, stages, failures, _arrow_texts(segments, band, lines)))
    if not bands:
        arrowless = _arrowless_scope(segments, assigned, lines, used)
        if arrowless:
            plan["scopes"].append(arrowless)
    _template_first(plan["scopes"], segments, assigned, lines, used)
    shadowed = {r.id for i, chosen in assigned.items() if chosen.id in used
                for r in readings if contains(segments[i].box, r.box)}
    for reading in readings:
        if reading.id not in used and reading.id not in shadowed:
            failures.append({"kind": "unassigned", "message": f"reading {reading.id} ({reading.smiles}) belongs to no reaction"})
    return plan, failures


def _fork_rows(number: int, fork: Segment, segments: list[Segment], assigned: dict[int, Reading],
               lines: list[TextLine], used: set[str], plan: dict[str, Any], failures: list[dict[str, str]]) -> None:
    """One reaction (or scope) per branch of a fork: the structures drawn left of the fork
    across the middle of its bar are the reactants of every branch; each branch's products
    are the structures right of its head across its shaft.  The conditions of a branch are
    the lines printed over it and over the stem."""
    x0, y0, x1, y1 = fork.box
    middle = (y0 + y1) / 2
    arrows = [s.box for s in segments if s.kind == "arrow" and s.box[2] <= x0]
    start = max((box[2] for box in arrows if box[1] <= middle <= box[3] + 20), default=-1)

    def across(index: int, y: float) -> bool:
        bx0, by0, bx1, by1 = segments[index].box
        slack = 0.1 * (by1 - by0)
        return by0 - slack <= y <= by1 + slack

    reactants = [assigned[i] for i in sorted(assigned, key=lambda i: segments[i].box[0])
                 if segments[i].kind == "structure" and start <= segments[i].box[0] and segments[i].box[2] <= x0 + 5
                 and across(i, middle) and assigned[i].id not in used]
    stem = [line.text for line in lines if start <= (line.box[0] + line.box[2]) / 2 <= x0
            and y0 <= (line.box[1] + line.box[3]) / 2 <= y1]
    for k, branch in enumerate(fork.parts):
        axis = (branch[1] + branch[3]) / 2
        products = [assigned[i] for i in sorted(assigned, key=lambda i: segments[i].box[0])
                    if segments[i].kind == "structure" and segments[i].box[0] >= branch[2] - 5 and across(i, axis)]
        products = products[:1] if products else []
        stages = [reactants, products]
        over = [line.text for line in lines if branch[0] <= (line.box[0] + line.box[2]) / 2 <= branch[2]
                and branch[1] - 60 <= (line.box[1] + line.box[3]) / 2 <= branch[3] + 60]
        if any(r.is_template for stage in stages for r in stage):
            scope = _scope(fork.band, stages, segments, assigned, lines, used, failures)
            scope["id"] = f"f{number}b{k + 1}"
            plan["scopes"].append(scope)
        else:
            for reaction in _steps(fork.band, stages, failures, [stem + over]):
                reaction["id"] = f"f{number}b{k + 1}"
                plan["reactions"].append(reaction)
        used.update(r.id for stage in stages for r in stage)


def _stages(segments: list[Segment], assigned: dict[int, Reading], band: int,
            failures: list[dict[str, str]]) -> list[list[Reading]]:
    stages: list[list[Reading]] = [[]]
    row = sorted((i for i, s in enumerate(segments) if s.band == band), key=lambda i: segments[i].box[0])
    arrows = [segments[i] for i in row if segments[i].kind == "arrow"]
    axis = sum((a.box[1] + a.box[3]) / 2 for a in arrows) / len(arrows) if arrows else None
    on_axis = [segments[i] for i in row if segments[i].kind == "structure" and axis is not None
               and _on_axis(segments[i], axis, arrows)]
    pluses = [segments[i] for i in row if segments[i].kind == "plus"]
    for index in row:
        seg = segments[index]
        if seg.kind == "structure" and axis is not None and seg not in on_axis and \
                not any(_stacked(seg, other, pluses) for other in on_axis):
            continue  # drawn above or below the row's arrows (a catalyst, a footnote drawing)
        if seg.kind == "arrow":
            stages.append([])
        elif seg.kind == "structure":
            if index in assigned:
                stages[-1].append(assigned[index])
            else:
                failures.append({"kind": "unread_structure", "message": f"structure at {list(seg.box)} in row {band} was not read"})
                stages[-1].append(Reading(f"unread@{seg.box[0]},{seg.box[1]}", "", 0.0, seg.box, "none"))
    return stages


def _stacked(seg: Segment, other: Segment, pluses: list[Segment]) -> bool:
    """``seg`` is drawn above or below ``other`` with a "+" between them (reactants
    stacked in one column before an arrow): some plus sign lies in the vertical gap
    between the two boxes, its centre over both boxes' horizontal spans."""
    upper, lower = sorted((seg.box, other.box), key=lambda b: b[1])
    for plus in pluses:
        x0, y0, x1, y1 = plus.box
        centre = (x0 + x1) / 2
        if upper[0] <= centre <= upper[2] and lower[0] <= centre <= lower[2] and \
                upper[3] - (y1 - y0) <= y0 and y1 <= lower[1] + (y1 - y0):
            return True
    return False


def _plus_between(a: Segment, b: Segment, pluses: list[Segment]) -> bool:
    """Some "+" stands between two drawings of a row: its centre lies in the horizontal
    gap between their boxes and within the height of either."""
    left, right = sorted((a.box, b.box), key=lambda box: box[0])
    for plus in pluses:
        cx, cy = (plus.box[0] + plus.box[2]) / 2, (plus.box[1] + plus.box[3]) / 2
        if left[2] <= cx <= right[0] and min(left[1], right[1]) <= cy <= max(left[3], right[3]):
            return True
    return False


def _on_axis(seg: Segment, axis: float, arrows: list[Segment]) -> bool:
    """A structure takes part in a row when it straddles the row's arrow axis and does not
    stand over or under an arrow (that is a reagent drawn as a structure)."""
    x0, y0, x1, y1 = seg.box
    slack = 0.1 * (y1 - y0)
    if not y0 - slack <= axis <= y1 + slack:
        return False
    centre = (x0 + x1) / 2
    return not any(a.box[0] <= centre <= a.box[2] for a in arrows)


def _arrow_texts(segments: list[Segment], band: int, lines: list[TextLine]) -> list[list[str]]:
    """Per arrow of a row (left to right): printed lines just above or below it — the
    conditions of that step.  A line counts when its centre lies over the arrow's span and
    within 60 px of the arrow vertically."""
    arrows = sorted((s for s in segments if s.band == band and s.kind == "arrow"), key=lambda s: s.box[0])
    texts = []
    for arrow in arrows:
        x0, y0, x1, y1 = arrow.box
        texts.append([line.text for line in lines
                      if x0 <= (line.box[0] + line.box[2]) / 2 <= x1 and y0 - 60 <= (line.box[1] + line.box[3]) / 2 <= y1 + 60])
    return texts


def _steps(band: int, stages: list[list[Reading]], failures: list[dict[str, str]],
           conditions: list[list[str]] | None = None) -> list[dict[str, Any]]:
    reactions = []
    for step in range(1, len(stages)):
        before, after = stages[step - 1], stages[step]
        if not before or not after or any(not r.smiles for r in before + after):
            failures.append({"kind": "incomplete_step", "message": f"row {band} step {step}: a side has no read structure; step skipped"})
            continue
        reaction = {"id": f"r{band}s{step}", "step": step,
                    "reactants": [{"reading": r.id} for r in before],
                    "products": [{"reading": r.id} for r in after]}
        if conditions and step <= len(conditions) and conditions[step - 1]:
            reaction["conditions"] = list(conditions[step - 1])
        reactions.append(reaction)
    return reactions


def _scope(band: int, stages: list[list[Reading]], segments: list[Segment], assigned: dict[int, Reading],
           lines: list[TextLine], used: set[str], failures: list[dict[str, str]]) -> dict[str, Any]:
    # a template row of several arrows (through a drawn intermediate) is expanded for its
    # net transformation: the entries' yields are those of the last product
    scope: dict[str, Any] = {"id": f"t{band}", "reactant_templates": [r.id for r in stages[0] if r.smiles],
                             "product_template": next((r.id for r in stages[-1] if r.smiles), None) if len(stages) > 1 else None,
                             "entries": []}
    if len(stages) > 2:
        scope["intermediates"] = [r.id for stage in stages[1:-1] for r in stage if r.smiles]
    if len(stages) > 1 and scope["product_template"] is not None:
        # a concrete species drawn beside the product template with a "+" between them
        # (``+ NH3``) forms in every entry; one with no "+" between (a ligand drawn in a
        # panel of its own past a divider) is no product
        where = {r.id: segments[i] for i, r in assigned.items()}
        pluses = [s for s in segments if s.kind == "plus" and s.band == band]
        made = where.get(scope["product_template"])
        others = [r.id for r in stages[-1] if r.smiles and r.id != scope["product_template"] and not r.is_template
                  and (made is None or r.id not in where or _plus_between(made, where[r.id], pluses))]
        if others:
            scope["co_products"] = others
    ends = stages[0] + (stages[-1] if len(stages) > 1 else [])
    if len(stages) < 2:
        failures.append({"kind": "template_steps", "message": f"template row {band} has no arrow"})
    if any(not r.smiles for r in ends) or not scope["reactant_templates"] or scope["product_template"] is None:
        failures.append({"kind": "incomplete_template", "message": f"template row {band}: a template was not read; its entries are not expanded"})
        return scope
    below_readings = [(i, r) for i, r in assigned.items() if segments[i].band > band and not r.is_template
                      and r.id not in used and not _drawn_value(segments[i], lines)]
    bound = binding_lines(lines)
    figure_level = _figure_level(bound, band, failures)
    lettered = _lettered_beside(segments, assigned, lettered_columns(lines), band, used)
    if below_readings or lettered:
        product_smiles = next((r.smiles for r in stages[-1] if r.id == scope["product_template"]), "")
        in_product = set(_labels_of(product_smiles or ""))
        for index, reading in sorted(below_readings, key=lambda item: (segments[item[0]].box[1], segments[item[0]].box[0])):
            used.add(reading.id)
            own = _label_under(segments[index], lines)
            label = own or reading.id
            # the product fixes its own labels; what is printed under it binds the others
            variants = [{k: v for k, v in pairs.items() if k not in in_product}
                        for pairs in printed_under(segments[index], bound, own=own)]
            variants = [dict(t) for t in dict.fromkeys(tuple(sorted(v.items())) for v in variants if v)] or [{}]
            for variant in variants:
                entry: dict[str, Any] = {"id": label, "product": reading.id}
                if figure_level or variant:
                    entry["bindings"] = {**figure_level, **variant}
                if len(variants) > 1:
                    entry["variant"] = ",".join(f"{k}={v}" for k, v in sorted(variant.items()))
                scope["entries"].append(entry)
        scope["entries"] += _listed_beside(segments, assigned, bound, band, used, {e["id"] for e in scope["entries"]})
        scope["entries"] += lettered
    else:
        drawn = drawn_values(segments, assigned, lines, failures)
        if drawn:  # a row whose value is drawn replaces what OCR made of the same line
            used.update(reading_id for _, _, _, reading_id in drawn)
            bound = [item for item in bound if all(item[2] is not line for _, _, line, _ in drawn)] + \
                [(entry, pairs, line) for entry, pairs, line, _ in drawn]
            bound.sort(key=lambda item: (item[2].box[1], item[2].box[0]))
        if not any(entry for entry, _, _ in bound):
            row_bottom = max(segments[i].box[3] for i in assigned if segments[i].band == band) if assigned else 0
            variables = {v for r in ends for v in re.findall(r"\[(R\d+)\]", r.smiles or "")}
            bound = [(entry, {**figure_level, **pairs}, line)
                     for entry, pairs, line in table_entries(lines, row_bottom, variables)] or bound
        seen: set[tuple[Any, ...]] = set()
        for number, (entry_id, printed, line) in enumerate(bound):
            key = (entry_id, tuple(sorted(printed.items())))
            if key in seen:
                continue  # the same printed line read twice (page pass and block pass)
            seen.add(key)
            variants = alternatives(printed)
            for pairs in variants:
                entry = {"id": entry_id or f"e{number + 1}", "bindings": pairs}
                if len(variants) > 1:
                    entry["variant"] = ",".join(f"{k}={v}" for k, v in sorted(pairs.items()))
                found_yield = _YIELD.search(line.text)
                if found_yield:
                    entry["yield"] = found_yield.group(0).replace(" ", "")
                shared = sorted(k for k in figure_level if k in pairs and pairs[k] == figure_level[k])
                if shared:  # footnote bindings, for every entry: no template need name them
                    entry["shared"] = shared
                scope["entries"].append(entry)
    if not scope["entries"]:
        failures.append({"kind": "no_entries", "message": f"template row {band} has no binding lines and no drawn products"})
    return scope


def _labels_of(smiles: str) -> list[str]:
    """The printed labels of a reading (``[R1]``, ``[Ar]`` …), normalized."""
    return [normalize_variable(name) for name in re.findall(r"\[([^\]]+)\]", smiles)]


def _listed_beside(segments: list[Segment], assigned: dict[int, Reading],
                   bound: list[tuple[str | None, dict[str, str], TextLine]], band: int, used: set[str],
                   taken: set[str]) -> list[dict[str, Any]]:
    """Entries listed beside one drawing that keeps a label of its own (``R = F, 89%
    (5e)``, ``R = Cl, 93% (5f)`` printed right of a drawing whose ring carries ``R``):
    each binding line with an entry id no other entry took, that starts right of the
    drawing within its width and whose middle lies within the drawing's height, is an
    entry whose product is the drawing with that line's bindings
    (``"product_bindings"``).  The drawing must hold one attachment point per bound
    label, or one bare ``*`` for a line binding one label."""
    found: list[dict[str, Any]] = []
    for index, reading in sorted(assigned.items(), key=lambda item: (segments[item[0]].box[1], segments[item[0]].box[0])):
        seg = segments[index]
        if seg.band <= band or not reading.is_template or reading.id in used or not reading.smiles:
            continue
        labels = _labels_of(reading.smiles)
        bare = reading.smiles.count("*")
        lines = [(entry, pairs) for entry, pairs, line in bound if entry is not None and entry not in taken
                 and _printed_beside(seg.box, line.box)]
        entries = []
        for entry, pairs in lines:
            if labels and set(pairs) >= set(labels) and not bare:
                bindings = {k: v for k, v in pairs.items() if k in labels}
            elif not labels and bare == 1 and len(pairs) == 1:
                bindings = {"*": next(iter(pairs.values()))}
            else:
                continue
            entries.append({"id": entry, "product": reading.id, "product_bindings": bindings})
            taken.add(entry)
        if entries:
            used.add(reading.id)
            found += entries
    return found


def _lettered_beside(segments: list[Segment], assigned: dict[int, Reading], columns: list[LetteredColumn], band: int,
                     used: set[str]) -> list[dict[str, Any]]:
    """Entries of the lettered lists printed beside a drawing that keeps a label (``R =``
    and a drawn aryl whose ``X`` is still drawn, ``X: a=OMe 69%``, ``b=H 71%`` … right of
    it): each item is an entry whose product is the drawing with its label filled by the
    item's value (``"product_bindings"``; a drawn substituent is read as the template's
    R in assembly).  The column belongs to the drawing :func:`column_drawing` finds;
    the label filled is :func:`column_label`'s.  A drawing with no such label takes none."""
    found: list[dict[str, Any]] = []
    for column in columns:
        index = column_drawing(column, segments, {i: r for i, r in assigned.items() if segments[i].band > band
                                                  and r.is_template and r.smiles and r.id not in used})
        label = column_label(column, assigned[index].smiles) if index is not None else None
        if index is None or label is None:
            continue
        for letter, value, yielded in column.items:
            if any(e["id"] == letter for e in found):
                continue  # the same item read twice (page pass and crop pass)
            entry: dict[str, Any] = {"id": letter, "product": assigned[index].id, "product_bindings": {label: value}}
            if yielded:
                entry["yield"] = yielded
            found.append(entry)
    for entry in found:
        used.add(entry["product"])
    return found


def column_drawing(column: LetteredColumn, segments: list[Segment], assigned: dict[int, Reading]) -> int | None:
    """The drawing a lettered column is printed beside: the nearest one left of its first
    line, which starts within the drawing's width right of it, its middle within the
    drawing's height (segment index, or None)."""
    near = [(column.first[0] - segments[index].box[2], index) for index in assigned
            if _printed_beside(segments[index].box, column.first)]
    return min(near)[1] if near else None


def _printed_beside(drawing: tuple[int, int, int, int], line: tuple[int, int, int, int]) -> bool:
    """A printed line stands beside a drawing: it starts right of it, within the drawing's
    width, and its middle lies within the drawing's height."""
    x0, y0, x1, y1 = drawing
    return x1 - 5 <= line[0] <= x1 + (x1 - x0) and y0 <= (line[1] + line[3]) / 2 <= y1


def column_label(column: LetteredColumn, smiles: str) -> str | None:
    """The label of a drawing a lettered column fills: the variable its head names when
    the drawing keeps that label; with no head, the drawing's only label; else (no
    label) its only bare ``*`` (osra writes a printed X so, and the wavy bond as a
    methyl).  None when the drawing keeps none of these (a misread, or a label the head
    does not name)."""
    labels = list(dict.fromkeys(_labels_of(smiles)))
    if column.variable is not None and column.variable in labels:
        return column.variable
    if column.variable is None and len(labels) == 1:
        return labels[0]
    if not labels and smiles.count("*") == 1:
        return "*"
    return None


def _figure_level(bound: list[tuple[str | None, dict[str, str], TextLine]], band: int,
                  failures: list[dict[str, str]]) -> dict[str, str]:
    """The bindings printed on lines of no entry (``Ar2 = 2-ClC6H4``): they hold for every
    entry of the scope.  One whose value the engine cannot attach (``Ar = 3``, OCR joining
    a label to a compound number) is not applied and is reported once: applied, it would
    void every entry, the many that never needed it included."""
    from labrecord.chemdata import rgroup

    found: dict[str, str] = {}
    for entry, pairs, line in bound:
        if entry is not None:
            continue
        for key, value in pairs.items():
            if rgroup.readable_substituent(value):
                found[key] = value
            else:
                failures.append({"kind": "unread_binding", "message": f"template row {band}: the figure-wide "
                                 f"binding {key} = {value!r} (line {line.text!r}) is no substituent; not applied"})
    return found


def _fits(reactant_templates: list[str], product_template: str, smiles: str) -> bool:
    from labrecord.chemdata.extract.arbitrate import fits_template

    return fits_template(reactant_templates, product_template, smiles)


def _spare(segments: list[Segment], assigned: dict[int, Reading], lines: list[TextLine],
           used: set[str]) -> list[tuple[int, Reading]]:
    """Concrete readings no row or scope took, in reading order (top to bottom, left to right)."""
    spare = [(i, r) for i, r in assigned.items() if r.smiles and not r.is_template and r.id not in used
             and not _drawn_value(segments[i], lines)]
    return sorted(spare, key=lambda item: (segments[item[0]].box[1], segments[item[0]].box[0]))


def _template_first(scopes: list[dict[str, Any]], segments: list[Segment], assigned: dict[int, Reading],
                    lines: list[TextLine], used: set[str]) -> None:
    """Add to each scope with drawn-product entries the spare concrete readings its
    templates relate (rule 4)."""
    by_id = {r.id: r for r in assigned.values()}
    for scope in scopes:
        if not scope.get("entries") or not all("product" in e for e in scope["entries"]):
            continue
        templates = [by_id[i].smiles for i in scope.get("reactant_templates") or [] if i in by_id]
        product = by_id.get(scope.get("product_template") or "")
        if not templates or product is None:
            continue
        for index, reading in _spare(segments, assigned, lines, used):
            if _fits(templates, product.smiles, reading.smiles):
                used.add(reading.id)
                scope["entries"].append({"id": _label_under(segments[index], lines) or reading.id, "product": reading.id})


def _arrowless_scope(segments: list[Segment], assigned: dict[int, Reading], lines: list[TextLine],
                     used: set[str]) -> dict[str, Any] | None:
    """A scope read from the templates alone when the figure shows no arrow (rule 4)."""
    templates = sorted((r for r in assigned.values() if r.is_template and r.smiles), key=lambda r: (r.box[0], r.box[1]))
    if len(templates) < 2:
        return None
    spare = _spare(segments, assigned, lines, used)
    best: tuple[int, Reading, list[tuple[int, Reading]]] | None = None
    for product in templates:
        others = [t.smiles for t in templates if t is not product]
        fitting = [(i, r) for i, r in spare if _fits(others, product.smiles, r.smiles)]
        if fitting and (best is None or len(fitting) > best[0]):
            best = (len(fitting), product, fitting)
    if best is None:
        return None
    _, product, fitting = best
    used.update(t.id for t in templates)
    used.update(r.id for _, r in fitting)
    return {"id": "t-arrowless", "reactant_templates": [t.id for t in templates if t is not product],
            "product_template": product.id,
            "entries": [{"id": _label_under(segments[i], lines) or r.id, "product": r.id} for i, r in fitting]}


def _drawn_value(seg: Segment, lines: list[TextLine]) -> bool:
    """A structure drawn as a binding's value (:func:`value_line`).  It is a
    substituent, not an entry's product."""
    return value_line(seg, lines) is not None


def value_line(seg: Segment, lines: list[TextLine]) -> TextLine | None:
    """The printed line a structure is drawn as the value of: one that ends in ``=``
    (``10a, R1, R2 =`` followed by a drawn aryl) just left of it, on the same text row."""
    x0, y0, x1, y1 = seg.box
    for line in lines:
        lx0, ly0, lx1, ly1 = line.box
        if line.text.rstrip().endswith("=") and lx1 <= x0 + 5 and x0 - lx1 <= 3 * (ly1 - ly0 + 1) + 40 \
                and y0 <= (ly0 + ly1) / 2 <= y1:
            return line
    return None


def drawn_values(segments: list[Segment], assigned: dict[int, Reading], lines: list[TextLine],
                 failures: list[dict[str, str]]) -> list[tuple[str | None, dict[str, str], TextLine, str]]:
    """Binding lines whose value is drawn: ``10a, R1, R2 =`` and, right of it, an aryl
    whose attachment bond ends in a wavy line.  Each gives (entry id, bindings, line,
    reading id): every variable named before the ``=`` takes the drawing read as a
    substituent (:func:`labrecord.chemdata.rgroup.drawn_substituent`, one ``*``).  A
    drawing that cannot be read as one (no attachment point, or two candidates) is
    reported (``unread_value``) and gives no entry: its row is not guessed.

    Hand check: ``10a, Ry, Ro =`` beside a drawing read ``Cc1cc(F)cc(F)c1`` gives entry
    ``10a`` with ``R1 = R2 = *c1cc(F)cc(F)c1``."""
    from labrecord.chemdata import rgroup

    rows = []
    for index, reading in sorted(assigned.items(), key=lambda item: (segments[item[0]].box[1], segments[item[0]].box[0])):
        line = value_line(segments[index], lines)
        if line is None or not reading.smiles:
            continue
        words = line.text.rstrip().rstrip("=").replace(",", " ").split()
        entry = normalize_entry_id(words[0]) if words else None
        # a word that starts like a variable but reads as none (``R34`` for R₁) keeps its place
        names = [normalize_variable(w) if re.fullmatch(_VARIABLE, w) else None
                 for w in words[1 if entry else 0:] if re.fullmatch(_VARIABLE, w) or w.startswith("R")]
        if any(names):
            rows.append((entry, names, line, reading))
    found = []
    for entry, names, line, reading in rows:
        # the rows of one table name the same variables: a place OCR garbled takes the
        # name the other rows of as many variables print there
        names = [name or _consensus([other[k] for _, other, _, _ in rows if len(other) == len(names)]) for k, name in enumerate(names)]
        value = rgroup.drawn_substituent(reading.smiles)
        if value is None:
            failures.append({"kind": "unread_value", "message": f"line {line.text!r}: the drawing beside it "
                             f"({reading.id}, {reading.smiles}) reads as no substituent with one attachment point"})
            continue
        found.append((entry, dict.fromkeys([n for n in names if n], value), line, reading.id))
    return found


def _consensus(names: list[str | None]) -> str | None:
    """The name most of ``names`` agree on (more than half of those read), else None."""
    read = [n for n in names if n]
    best = max(set(read), key=read.count) if read else None
    return best if best is not None and 2 * read.count(best) > len(read) else None


def alternatives(pairs: dict[str, str]) -> list[dict[str, str]]:
    """One binding set per alternative a table cell prints: ``X = I/Br`` is the entry run
    with iodide and with bromide.  A value splits only where every part is a group the
    engine knows (:func:`labrecord.chemdata.abbreviations.lookup`), so ``CH2OH`` or a
    ratio is left whole.

    >>> alternatives({"R": "H", "X": "I/Br"})
    [{'R': 'H', 'X': 'I'}, {'R': 'H', 'X': 'Br'}]
    """
    from labrecord.chemdata.abbreviations import lookup

    out: list[dict[str, str]] = [{}]
    for key, value in pairs.items():
        parts = [part.strip() for part in value.split("/")]
        if len(parts) < 2 or not all(part and lookup(part) for part in parts):
            parts = [value]
        out = [{**done, key: part} for done in out for part in parts]
    return out


def printed_under(seg: Segment, bound: list[tuple[str | None, dict[str, str], TextLine]],
                  reach: int = 80, own: str | None = None) -> list[dict[str, str]]:
    """The bindings printed under one drawing, a line each, top-down: its label line
    (``4a, X = Cl``) and the lines stacked right under it that name no other entry
    (``X = Br``, ``X = I``: the same product made from three reactants).  A line joins
    the stack when it starts within one and a half line heights of the one above and
    overlaps the drawing horizontally.  A line naming an entry other than the drawing's
    own label ``own`` (``R = F (5e)`` under a drawing labelled ``5c``) is not its."""
    x0, _, x1, y1 = seg.box
    under = sorted(((line.box[1], entry, pairs, line) for entry, pairs, line in bound
                    if line.box[1] >= y1 and overlaps((x0, 0, x1, 1), (line.box[0], 0, line.box[2], 1))),
                   key=lambda item: (item[0], item[3].box[0]))
    stack: list[dict[str, str]] = []
    bottom = float(y1)
    limit = float(reach)
    for top, entry, pairs, line in under:
        if top - bottom > limit or (stack and entry is not None) or (entry is not None and own is not None and entry != own):
            break
        stack.append(pairs)
        height = max(1, line.box[3] - line.box[1])
        bottom, limit = float(line.box[3]), 1.5 * height
    return stack


def _label_under(seg: Segment, lines: list[TextLine], reach: int = 80) -> str | None:
    """The identifier printed just below a structure (horizontally overlapping)."""
    x0, _, x1, y1 = seg.box
    for line in lines:
        lx0, ly0, lx1, _ = line.box
        if y1 <= ly0 <= y1 + reach and overlaps((x0, 0, x1, 1), (lx0, 0, lx1, 1)):
            entry = (normalize_entry_id(line.text.split()[0]) or trailing_entry_id(line.text)) if line.text.split() else None
            if entry:
                return entry
    return None
