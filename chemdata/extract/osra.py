"""Structure reading with Debian's ``osra`` (package ``osra``), one call per image.

``osra -c -p -f can IMAGE`` prints one structure per line: ``SMILES confidence
x0xy0-x1xy1``.  :func:`read_structures` runs it through the trajectory (so the call, its
arguments, output and timing are kept) and returns :class:`Reading` objects with boxes
in the coordinates of the whole figure.

**Abbreviation dictionaries.**  osra expands printed labels through a superatom table
(``-a FILE``: ``LABEL SMILES``, the first atom bonds to the drawing) and repairs its own
OCR through a spelling table (``-l FILE``: ``READ CORRECTED``); a file given replaces the
installed one.  :func:`write_dictionaries` writes both: the installed tables, then the
project's abbreviation table (:data:`labrecord.chemdata.abbreviations.ABBREVIATIONS`)
for every label the installed table lacks or gets wrong (Debian's osra 2.1 maps ``iPr``
to propyl and knows no ``Ts``, ``Bpin``, ``TBS``), variable labels (``Ar``, ``Ar1``,
``R'``) as attachment points, and :data:`SPELLINGS` (OCR slips seen on journal fonts,
``BPln`` for ``Bpin``).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labrecord.chemdata.extract.trajectory import Trajectory

_LABELLED = re.compile(r"\[(R\d*'*|X\d*|Ar\d*|Y|Z|Rf)\]")
_LINE = re.compile(r"^(?P<smiles>\S+)\s+(?P<conf>-?[0-9.eE+-]+)\s+(?P<x0>\d+)x(?P<y0>\d+)-(?P<x1>\d+)x(?P<y1>\d+)\s*$")


@dataclass(frozen=True)
class Reading:
    """One structure read from the figure: box is (x0, y0, x1, y1) in figure pixels."""

    id: str
    smiles: str
    confidence: float
    box: tuple[int, int, int, int]
    source: str  # "full" (whole-figure pass), "crop", "formula" (printed text), or "model" (the model endpoint)
    reader: str = "osra"  # the structure reader that produced it (``osra``, ``decimer``, ``ocr`` for a formula)

    @property
    def is_template(self) -> bool:
        """The reading has an attachment point: ``*`` or a printed label (``[R1]``, ``[Ar]``)."""
        return "*" in self.smiles or bool(_LABELLED.search(self.smiles))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "smiles": self.smiles, "confidence": self.confidence,
                "box": list(self.box), "source": self.source, "reader": self.reader}


def parse_output(text: str, offset: tuple[int, int] = (0, 0)) -> list[tuple[str, float, tuple[int, int, int, int]]]:
    """``osra -c -p`` lines -> (smiles, confidence, box shifted by ``offset``)."""
    found = []
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        dx, dy = offset
        box = (int(match["x0"]) + dx, int(match["y0"]) + dy, int(match["x1"]) + dx, int(match["y1"]) + dy)
        found.append((match["smiles"], float(match["conf"]), box))
    return found


#: variable labels osra should keep as attachment points (its table knows R, R1…, X, Y, Z)
VARIABLE_LABELS = ("Ar", "Ar1", "Ar2", "Ar3", "R'", "R''", "Rf", "Het")
#: OCR slips of osra's own character reader on journal fonts -> the label meant
SPELLINGS = {"BPln": "Bpin", "Bpln": "Bpin", "BPin": "Bpin", "Bpm": "Bpin", "pl1": "Ar", "AI": "Ar", "Al": "Ar", "AlH": "Ar",
             "lBu": "tBu", "tBU": "tBu", "T5": "Ts", "TS": "Ts", "lS": "Ts"}
#: labels never given to osra from the project table: element symbols (osra reads those
#: itself) and labels whose project meaning is a variable in figures (``Ar``)
_NOT_SUPERATOMS = {"H", "D", "F", "Cl", "Br", "I", "Ar", "Py"}


def installed_table(command: list[str], name: str) -> str:
    """The text of osra's installed ``superatom.txt``/``spelling.txt`` ('' when not found):
    ``<prefix>/share/osra/`` beside the executable, else ``/usr/share/osra``."""
    found = shutil.which(command[0]) if command else None
    places = [Path(found).resolve().parent.parent / "share" / "osra"] if found else []
    places.append(Path("/usr/share/osra"))
    for place in places:
        if (place / name).is_file():
            return (place / name).read_text(encoding="utf-8", errors="replace")
    return ""


def rooted_fragment(fragment: str) -> str | None:
    """A fragment SMILES with one ``*`` rewritten as osra wants it: no ``*``, the attachment
    atom first (``CC(C)*`` -> ``C(C)C``).  None when RDKit cannot do it."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(fragment)
    if mol is None:
        return None
    dummies = [a for a in mol.GetAtoms() if a.GetAtomicNum() == 0]
    if len(dummies) != 1 or dummies[0].GetDegree() != 1:
        return None
    root = dummies[0].GetNeighbors()[0].GetIdx()
    text = Chem.MolToSmiles(mol, rootedAtAtom=root)
    for spelling in ("([*])", "(*)", "[*]", "*"):
        text = text.replace(spelling, "")
    return text if text and Chem.MolFromSmiles(text) is not None else None


def superatom_table(installed: str) -> str:
    """osra's installed superatom lines, the project abbreviations replacing or adding
    labels, straight alkyl formulas (``C11H23``), and the variable labels as ``[*]``."""
    from labrecord.chemdata.abbreviations import ABBREVIATIONS

    ours: dict[str, str] = {}
    for label, fragment in ABBREVIATIONS.items():
        if label in _NOT_SUPERATOMS or "-" in label:
            continue
        rooted = rooted_fragment(fragment)
        if rooted:
            ours[label] = rooted
    # straight alkyl chains printed as formulas: C4H9 … C20H41 (C₁₁H₂₃ in a scope table)
    ours.update({f"C{n}H{2 * n + 1}": "C" * n for n in range(4, 21)})
    ours.update({label: "[*]" for label in VARIABLE_LABELS})
    kept = [line for line in installed.splitlines()
            if not line.split() or line.startswith("#") or line.split()[0] not in ours]
    return "\n".join(kept + [f"{label} {smiles}" for label, smiles in sorted(ours.items())]) + "\n"


def spelling_table(installed: str) -> str:
    kept = [line for line in installed.splitlines() if not line.split() or line.split()[0] not in SPELLINGS]
    return "\n".join(kept + [f"{wrong} {right}" for wrong, right in sorted(SPELLINGS.items())]) + "\n"


def write_dictionaries(folder: str | os.PathLike[str], command: list[str]) -> list[str]:
    """Write the superatom and spelling tables into ``folder``; return osra's arguments
    for them (``["-a", FILE, "-l", FILE]``)."""
    superatoms = Path(folder) / "superatom.txt"
    spelling = Path(folder) / "spelling.txt"
    superatom_text, spelling_text = _tables(tuple(command))
    superatoms.write_text(superatom_text, encoding="utf-8")
    spelling.write_text(spelling_text, encoding="utf-8")
    return ["-a", str(superatoms), "-l", str(spelling)]


@functools.lru_cache(maxsize=4)
def _tables(command: tuple[str, ...]) -> tuple[str, str]:
    """The superatom and spelling table texts for the osra that ``command`` runs, built
    once per process (every figure's scratch folder gets a copy)."""
    return (superatom_table(installed_table(list(command), "superatom.txt")),
            spelling_table(installed_table(list(command), "spelling.txt")))


def read_structures(trajectory: Trajectory, image_path: str, *, command: list[str], limit_s: float,
                    offset: tuple[int, int] = (0, 0), region: str = "full",
                    options: list[str] | None = None) -> list[tuple[str, float, tuple[int, int, int, int]]]:
    """Run osra on one image file; boxes are shifted by ``offset`` into figure coordinates.
    ``options`` go before the documented flags (the dictionaries of :func:`write_dictionaries`)."""
    argv = [*command, *(options or []), "-c", "-p", "-f", "can", image_path]
    output = trajectory.run_tool("osra", argv, limit_s=limit_s, note={"region": region})
    return parse_output(output, offset)


#: printed words for groups whose italic or superscript prefix osra's reader drops
#: (ᵗBu read as "Bu", ⁱPr as "Pr"); OCR writes the raised letter as a quote or keeps it
_PREFIXED = {"tBu": re.compile(r"^[‘'`’^t]-?Bu$"), "iPr": re.compile(r"^[‘'`’^i]-?Pr$")}
#: the straight chains osra writes instead, from the attachment carbon to the end
#: (the first atom is the anchor: anything but another chain CH2, so a pentyl is no butyl)
_CHAINS = {"tBu": "[!$([CH2;!R;D2])]-[CH2;!R;D2]-[CH2;!R;D2]-[CH2;!R;D2]-[CH3;D1]",
           "iPr": "[!$([CH2;!R;D2])]-[CH2;!R;D2]-[CH2;!R;D2]-[CH3;D1]"}


def restore_prefixed_alkyls(smiles: str, words: list[str]) -> str:
    """Branch the straight chains osra read for printed ``ᵗBu``/``ⁱPr`` labels.

    For each group, when the words printed inside the drawing name it (``‘Bu``, ``tBu``,
    ``'Pr``) exactly as often as the reading has the straight chain (n-butyl for tBu,
    n-propyl for iPr), each chain is rebranched at its attachment carbon; otherwise the
    reading is returned unchanged (a real n-butyl is never touched when the counts
    differ).  ``restore_prefixed_alkyls("CCCCc1ccccc1O", ["‘Bu"])`` gives
    ``CC(C)(C)c1ccccc1O``."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return smiles
    changed = False
    for group, pattern in _PREFIXED.items():
        printed = sum(1 for word in words if pattern.match(word))
        if not printed:
            continue
        chains = [match[1:] for match in mol.GetSubstructMatches(Chem.MolFromSmarts(_CHAINS[group]))]
        if len(chains) != printed or len({a for c in chains for a in c}) != sum(len(c) for c in chains):
            continue
        editable = Chem.RWMol(mol)
        for chain in chains:
            head = chain[0]
            for before, after in zip(chain[1:], chain[2:]):
                editable.RemoveBond(before, after)
            for atom in chain[2:]:
                editable.AddBond(head, atom, Chem.BondType.SINGLE)
        try:
            Chem.SanitizeMol(editable)
        except Exception:  # noqa: BLE001 - leave the reading as osra gave it
            continue
        mol, changed = editable.GetMol(), True
    return Chem.MolToSmiles(mol) if changed else smiles


_VALENCE = {"B": 3, "C": 4, "N": 3, "O": 2, "S": 2, "P": 3, "F": 1, "Cl": 1, "Br": 1, "I": 1, "Si": 4}
#: a trailing hydrogen subscript OCR read as a letter (``NH₃`` as ``NHg``, ``C₆H₄`` as ``C.Hy``):
#: the count is left open, as for ``.`` and ``,``
_SUBSCRIPT_AS_LETTER = "gy"
_GROUP = re.compile(r"^(?:H([0-9.,]?))?(B|Br|Cl|C|N|O|S|P|F|I|Si)(?:H([0-9.," + _SUBSCRIPT_AS_LETTER + r"]?))?$")


def linear_formula(text: str) -> str | None:
    """SMILES of a small molecule printed as a linear formula (``H₂N–C≡N``, ``HBr``,
    ``H2C=CH2``), or None when ``text`` is not one.

    Groups are an element with its printed hydrogens (``H2N``, ``NH2``, ``C``; a subscript
    OCR read as ``.`` or ``,``, or a trailing one read as ``g`` or ``y``, leaves the count open) joined by ``-``, ``=`` or ``≡``.
    A ``0`` is read as the letter O (no formula prints a zero count).  A
    group printed without hydrogens has none; an open count is what the valence leaves;
    a group short of its valence upgrades a double bond to a neighbour that is short too
    (OCR reads ``≡`` as ``=``).  Anything else — a valence still short or exceeded, an
    unknown group — gives None rather than a guess.
    ``linear_formula("H.N-C=N")`` gives ``N#CN``."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    # no formula prints a zero count: a "0" is OCR's reading of an O (``H,0`` for H₂O)
    cleaned = re.sub(r"[—–−]", "-", text.replace("≡", "#").replace(" ", "").replace("0", "O"))
    parts = re.split(r"([-=#])", cleaned)
    if len(parts) % 2 == 0 or any(not p for p in parts):
        return None
    atoms: list[tuple[str, int | None]] = []
    for token in parts[0::2]:
        match = _GROUP.match(token)
        if not match or (match.group(1) is not None and match.group(3) is not None):
            return None
        digits = match.group(1) if match.group(1) is not None else match.group(3)
        hydrogens = 0 if digits is None else (1 if digits == "" else (None if digits in ".," + _SUBSCRIPT_AS_LETTER else int(digits)))
        atoms.append((match.group(2), hydrogens))
    orders = [{"-": 1, "=": 2, "#": 3}[b] for b in parts[1::2]]

    def bonded(i: int) -> int:
        return (orders[i - 1] if i > 0 else 0) + (orders[i] if i < len(orders) else 0)

    def short(i: int) -> int:
        element, hydrogens = atoms[i]
        return _VALENCE[element] - bonded(i) - (hydrogens or 0) if hydrogens is not None else 0

    for i in range(len(orders)):
        if orders[i] == 2 and short(i) > 0 and short(i + 1) > 0:
            orders[i] = 3
    mol = Chem.RWMol()
    for i, (element, hydrogens) in enumerate(atoms):
        count = _VALENCE[element] - bonded(i) if hydrogens is None else hydrogens
        if count < 0 or short(i) != 0:
            return None
        atom = Chem.Atom(element)
        atom.SetNumExplicitHs(count)
        atom.SetNoImplicit(True)
        mol.AddAtom(atom)
    for i, order in enumerate(orders):
        mol.AddBond(i, i + 1, {1: Chem.BondType.SINGLE, 2: Chem.BondType.DOUBLE, 3: Chem.BondType.TRIPLE}[order])
    try:
        Chem.SanitizeMol(mol)
    except Exception:  # noqa: BLE001 - not a molecule after all
        return None
    return Chem.MolToSmiles(mol)
