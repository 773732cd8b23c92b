"""Deterministic page layout for real figures: ink components, shapes, rows.

Steps (all thresholds scale with the figure's *bond length* ``b``, estimated from the
printed text — :func:`bond_length`):

1. **Ink** — below 170 in the figure's darkest channel (:func:`grey`: coloured atoms
   and lines count, light table shading does not); 8-connected components are labelled.
2. **Rules** — a component at most ``max(4, b/6)`` px thick spanning ≥ 60 % of the
   figure's width (or height: a frame or column line) without a head is a table or
   footnote *rule*, never an arrow or a structure.
3. **Arrows** — by shape: a straight shaft (one row, or column, carries the long run;
   the shaft is thin) and a *head* — near one end the component is at least twice as
   thick as the shaft and tapers.  One barb (half of an equilibrium pair) counts;
   collinear dashes ending in a head join it (a dashed arrow).  Horizontal arrows drive
   rows; vertical ones are kept (kind ``arrow_v``) but do not form rows.  A *fork* — a
   vertical bar at least ``2 b`` (and 60 % of its component) tall from which two or more
   arrows leave to the right, attached to it or starting within ``b/2`` of it, with an
   optional stem coming in from the left — is kind ``fork``; its ``parts`` are the branch
   arrows (one reaction per branch, from the same reactants).
4. **Text** — a component inside a tesseract word box, or one no larger than a
   character (``≤ 0.8 b``) that lies farther than ``0.35 b`` from any larger drawing,
   is text.  Lines of text that are titles, captions or footnotes are *peeled* (kept as
   ``text``, never merged into structures); so are the printed conditions over arrows.
5. **Structures** — the remaining components (bond skeletons) with the characters within
   ``0.35 b`` of them (atom labels, wedge hashes); skeletons joined through a shared
   label, or closer than ``0.35 b`` (the outer lines of a triple bond), are one structure;
   a small "+" against a drawing's ink is a charge and joins it.  Tiny specks are dropped.
   A "structure" inside a confidently read line (≥ 80), or whose every glyph lies inside
   confidently read words (≥ 85, letters and digits), is printed text set in a larger font
   than the drawings' labels (a table's cells), not a drawing.
6. **Rows** — bands of the non-text items (structures, arrows, "+") separated by
   ``0.6 b`` of blank rows; within a band, items are read left to right.  A grid of drawn
   products under a template row is a stack of such bands.

A ``plus`` is a small square component whose middle row and column are mostly ink.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

from labrecord.chemdata.extract.tesseract import TextLine

Box = tuple[int, int, int, int]
INK_BELOW = 170
DEFAULT_BOND = 30.0


@dataclass(frozen=True)
class Segment:
    """A laid-out item: ``kind`` is arrow | arrow_v | fork | plus | text | structure | rule;
    box in figure pixels; ``band`` is its row (-1 for peeled text and rules)."""

    kind: str
    box: Box
    band: int
    #: a structure's own ink components (crops keep only these); a fork's branch arrows
    parts: tuple[Box, ...] = ()


def grey(image: Any) -> Any:
    """The figure as one grey channel where colour counts as ink: each pixel's darkest
    RGB channel (a red ``NH2`` or a blue bond is as dark as its most saturated channel;
    white and light grey shading stay light).  Layout and structure crops use it."""
    from PIL import ImageChops

    if image.mode in ("L", "1"):
        return image.convert("L")
    rgb = image.convert("RGB")
    red, green, blue = rgb.split()
    return ImageChops.darker(ImageChops.darker(red, green), blue)


def ink_mask(image: Any) -> Any:
    """Boolean array (rows, cols): True where the grey image is darker than :data:`INK_BELOW`."""
    import numpy as np

    return np.asarray(image.convert("L")) < INK_BELOW


def stroke_width(ink: Any) -> float:
    """The drawn line width in px: twice the median distance-to-background on the ink's
    ridge (its pixels at least as far from the background as their 3 × 3 neighbours),
    less one.  An odd width is measured exactly (3 px: ridge distance 2), an even one a
    pixel short; 0 for a blank page."""
    import numpy as np
    from scipy import ndimage

    if not ink.any():
        return 0.0
    distance = ndimage.distance_transform_edt(ink)
    ridge = (distance > 0) & (distance >= ndimage.maximum_filter(distance, size=3))
    return float(2 * np.median(distance[ridge]) - 1)


#: bond length over line width where both are known on the development set (median of 10
#: figures whose bond the text measures and whose lines are ≥ 3 px: 10.5–17.7, median 14.5)
BOND_PER_STROKE = 14.5
#: below this line width the distance transform's pixel steps make the ratio meaningless
MIN_STROKE = 2.5


def stroke_bond(ink: Any) -> float | None:
    """A bond length from the line width (:data:`BOND_PER_STROKE` × :func:`stroke_width`)
    for a figure whose printed text is too scarce to measure one; None for thin lines."""
    width = stroke_width(ink)
    return BOND_PER_STROKE * width if width >= MIN_STROKE else None


def bond_length(text_lines: list[TextLine], default: float | None = DEFAULT_BOND) -> float | None:
    """Bond length estimate: 1.5 × the lower-third height of short confident words (atom labels
    and identifiers are set in the figure's font, and chemistry style guides draw a bond
    about 1.4–1.6 × the font size); ``default`` when fewer than three words are printed."""
    heights = sorted(ln.box[3] - ln.box[1] + 1 for ln in text_lines if 0 < len(ln.text) <= 12 and ln.confidence >= 50)
    if len(heights) < 3:
        return default
    # the lower third: OCR sometimes reports a "word" as tall as a drawing it ran over
    return max(12.0, min(120.0, 1.5 * heights[len(heights) // 3]))


def _runs(mask: Any, min_gap: int) -> list[tuple[int, int]]:
    """Inclusive (start, end) index runs of True separated by ≥ ``min_gap`` False values."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    last = 0  # read only once start is set
    for index, value in enumerate(mask.tolist()):
        if not value:
            continue
        if start is None:
            start = index
        elif index - last > min_gap:
            runs.append((start, last))
            start = index
        last = index
    if start is not None:
        runs.append((start, last))
    return runs


@dataclass
class _Comp:
    box: Box
    pixels: int
    mask: Any  # the component's own ink inside its box

    @property
    def width(self) -> int:
        return self.box[2] - self.box[0] + 1

    @property
    def height(self) -> int:
        return self.box[3] - self.box[1] + 1


def _components(ink: Any) -> list[_Comp]:
    from scipy import ndimage

    labels, count = ndimage.label(ink, structure=[[1, 1, 1], [1, 1, 1], [1, 1, 1]])
    comps = []
    for index, found in enumerate(ndimage.find_objects(labels), start=1):
        if found is None:
            continue
        rows, cols = found
        mask = labels[rows, cols] == index
        comps.append(_Comp((cols.start, rows.start, cols.stop - 1, rows.stop - 1), int(mask.sum()), mask))
    return comps


def arrow_shape(mask: Any, bond: float) -> str | None:
    """``"right"``/``"left"`` (or ``"down"``/``"up"``) if ``mask`` is an arrow: a long thin
    shaft with a head at one end; None otherwise (a bare line, a bond drawing, text)."""
    import numpy as np

    height, width = mask.shape
    if width >= height:
        profile, length, across = mask.sum(axis=0), width, height
        directions = ("left", "right")
    else:
        profile, length, across = mask.sum(axis=1), height, width
        directions = ("up", "down")
    if length < max(30, 1.4 * bond):
        return None
    shaft = float(np.median(profile))
    if across > max(0.8 * bond, 14) or shaft > max(6.0, bond / 5):
        return _bold_arrow(mask if width >= height else mask.T, profile, bond, directions)
    # the middle half of the length is one straight line: few rows (columns) carry much ink
    lines = mask if width >= height else mask.T
    middle = lines[:, length // 4: length - length // 4]
    if (middle.mean(axis=1) > 0.3).sum() > shaft + 3:
        return None
    # the shaft: most positions along the length carry the thin line
    if (profile <= shaft + 2).mean() < 0.55 or (profile > 0).mean() < 0.9:
        return None
    end = max(4, int(0.3 * length))
    for side, segment in ((directions[0], profile[:end]), (directions[1], profile[::-1][:end])):
        peak = int(segment.argmax())
        # a head at least twice the shaft and min(4 px, b/5) beyond it: a small figure's
        # 1 px shaft carries a 4 px head
        if segment[peak] >= max(2 * shaft, shaft + min(4.0, bond / 5)) and segment[peak] >= 0.25 * across:
            # the head tapers towards the tip: thicker inside than at the very end
            tip = segment[:max(1, peak)]
            if peak <= 0.9 * end and (tip.size == 0 or tip.min() <= segment[peak]):
                return side
    return None


def _longest_runs(mask: Any) -> tuple[Any, Any]:
    """Per column of ``mask``: the length of its longest vertical run of ink, and where
    that run starts."""
    import numpy as np

    height, width = mask.shape
    lengths = np.zeros(width, dtype=int)
    starts = np.zeros(width, dtype=int)
    padded = np.vstack([np.zeros((1, width), dtype=bool), mask, np.zeros((1, width), dtype=bool)]).astype(np.int8)
    edges = np.diff(padded, axis=0)
    for x in range(width):
        ups, downs = np.flatnonzero(edges[:, x] == 1), np.flatnonzero(edges[:, x] == -1)
        if ups.size:
            runs = downs - ups
            best = int(runs.argmax())
            lengths[x], starts[x] = int(runs[best]), int(ups[best])
    return lengths, starts


def _fork_bar(comp: _Comp, bond: float) -> tuple[Box, list[Box]] | None:
    """(the bar, the branch arrows attached to it), in figure pixels, when ``comp`` holds
    the vertical bar of a fork: a column run at least ``2 b`` long covering 60 % of the
    component's height, with some ink leaving it sideways; None otherwise."""
    from scipy import ndimage

    height, width = comp.mask.shape
    if height < 2 * bond:
        return None
    lengths, starts = _longest_runs(comp.mask)
    bar = int(lengths.argmax())
    length = int(lengths[bar])
    if length < max(2 * bond, 0.6 * height):
        return None
    near = [x for x in range(width) if lengths[x] >= 0.8 * length and abs(x - bar) <= max(3, bond / 5)]
    x0, x1 = min(near), max(near)
    if comp.pixels - int(lengths[x0:x1 + 1].sum()) < bond:
        return None  # a bare vertical line: no branch leaves it
    top = int(starts[bar])
    right = comp.mask[:, x1 + 1:]
    labels, _ = ndimage.label(right, structure=[[1, 1, 1], [1, 1, 1], [1, 1, 1]])
    branches = []
    for index, found in enumerate(ndimage.find_objects(labels), start=1):
        if found is None or found[1].start > 1:
            continue  # a piece not leaving the bar
        rows_, cols = found
        sub = labels[rows_, cols] == index
        part = _Comp((cols.start, rows_.start, cols.stop - 1, rows_.stop - 1), int(sub.sum()), sub)
        direction = arrow_shape(sub, bond) or _arrow_with_touching_text(part, bond)[0]
        if direction == "right":
            branches.append((comp.box[0] + x0, comp.box[1] + rows_.start, comp.box[0] + x1 + cols.stop,
                             comp.box[1] + rows_.stop - 1))
    bar_box = (comp.box[0] + x0, comp.box[1] + top, comp.box[0] + x1, comp.box[1] + top + length - 1)
    return bar_box, branches


def _forks(candidates: list[tuple[_Comp, tuple[Box, list[Box]]]], items: list[tuple[Any, ...]],
           bond: float) -> list[_Comp]:
    """Turn each fork bar with two or more branches (attached ones, and arrows found on
    their own whose tail is within ``b/2`` of the bar and whose shaft lies along it) into
    a ``fork`` item, taking those arrows out of ``items``; the bars that are no fork are
    returned (they are drawings after all)."""
    rest = []
    for comp, (bar, attached) in candidates:
        loose = [k for k, item in enumerate(items) if item[0] == "arrow"
                 and bar[0] - 2 <= item[1][0] <= bar[2] + 0.5 * bond
                 and bar[1] - 0.5 * bond <= (item[1][1] + item[1][3]) / 2 <= bar[3] + 0.5 * bond]
        branches = sorted([*attached, *(items[k][1] for k in loose)], key=lambda b: b[1])
        if len(branches) < 2:
            rest.append(comp)
            continue
        box = comp.box
        for branch in branches:
            box = _union(box, branch)
        for k in sorted(loose, reverse=True):
            del items[k]
        items.append(("fork", box, tuple(branches)))
    return rest


def _bold_arrow(lines: Any, profile: Any, bond: float, directions: tuple[str, str]) -> str | None:
    """A bold (filled) arrow, ``lines`` laid out along its length: a solid bar of constant
    thickness ``t`` (every position carries one unbroken run of ink, ≥ 60 % of them within
    ``max(2, t/10)`` of ``t``, their middles on one line) at least three times as long as
    the whole arrow is thick, with a head at one end at least ``1.5 t`` across that narrows
    to under half its width at the tip over a stretch at least 0.4 × its width.  A wedge bond tapers along its whole length and a
    bar has no head, so neither passes."""
    import numpy as np

    across, length = lines.shape
    if length < 3 * across or (profile > 0).mean() < 0.97:
        return None
    filled = lines.any(axis=0)
    first = lines.argmax(axis=0)
    last = across - 1 - lines[::-1].argmax(axis=0)
    if (profile[filled] != (last - first + 1)[filled]).mean() > 0.05:
        return None  # runs with holes: an outline or a drawing, not a solid bar
    shaft = float(np.median(profile))
    slack = max(2.0, shaft / 10)
    bar = np.abs(profile - shaft) <= slack
    if shaft < 3 or bar.mean() < 0.6:
        return None
    middles = (first + last)[bar] / 2
    if middles.max() - middles.min() > 2 * slack:
        return None
    end = max(4, int(0.4 * length))
    for side, segment in ((directions[0], profile[:end]), (directions[1], profile[::-1][:end])):
        peak = int(segment.argmax())
        # the head narrows over a stretch at least 0.4 × its width (a glyph's serif does not)
        if segment[peak] >= 1.5 * shaft and peak >= 0.4 * segment[peak] and segment[:peak].min() <= 0.5 * segment[peak]:
            return side
    return None


def _join_dashes(comps: list[_Comp], bond: float) -> list[_Comp]:
    """Dashed horizontal arrows as one component each: a chain of ≥ 2 thin collinear dashes
    (at most ``max(4, b/5)`` px thick, at least twice as long as thick, gaps ≤ ``0.6 b``)
    with one short piece at an end that carries the head.  The chain's ink, with the gaps
    between dashes filled along the shaft, must pass :func:`arrow_shape`; a dotted rule or a
    row of minus signs has no head and stays as it was.
    """
    import numpy as np

    thin = max(4.0, bond / 5)
    dashes = [c for c in comps if c.height <= thin and c.width >= 2 * c.height and c.width <= 1.5 * bond]
    if len(dashes) < 2:
        return comps
    pieces = [c for c in comps if c.width <= 1.5 * bond and c.height <= 0.8 * bond]
    reach = 0.6 * bond
    dash_ids = {id(c) for c in dashes}

    def axis(c: _Comp) -> float:
        return (c.box[1] + c.box[3]) / 2

    def neighbour(c: _Comp, step: int, pool: list[_Comp], used: set[int]) -> _Comp | None:
        best = None
        for other in pool:
            if id(other) in used or other is c:
                continue
            gap = other.box[0] - c.box[2] if step > 0 else c.box[0] - other.box[2]
            if 0 < gap <= reach and other.box[1] - 1 <= axis(c) <= other.box[3] + 1 and (
                    best is None or gap < (best.box[0] - c.box[2] if step > 0 else c.box[0] - best.box[2])):
                best = other
        return best

    used: set[int] = set()
    joined: list[_Comp] = []
    for start in sorted(dashes, key=lambda c: c.box[0]):
        if id(start) in used:
            continue
        chain = [start]
        for step in (-1, 1):  # extend over dashes both ways, then one head piece at each end
            while (nxt := neighbour(chain[0] if step < 0 else chain[-1], step, dashes, used | {id(c) for c in chain})) is not None:
                chain.insert(0, nxt) if step < 0 else chain.append(nxt)
        if len(chain) < 2:
            continue
        for step in (-1, 1):
            end = chain[0] if step < 0 else chain[-1]
            head = neighbour(end, step, pieces, used | {id(c) for c in chain})
            if head is not None and head.height > end.height:
                chain.insert(0, head) if step < 0 else chain.append(head)
        x0, y0 = min(c.box[0] for c in chain), min(c.box[1] for c in chain)
        x1, y1 = max(c.box[2] for c in chain), max(c.box[3] for c in chain)
        mask = np.zeros((y1 - y0 + 1, x1 - x0 + 1), dtype=bool)
        for c in chain:
            mask[c.box[1] - y0:c.box[3] + 1 - y0, c.box[0] - x0:c.box[2] + 1 - x0] |= c.mask
        filled = mask.copy()
        shaft = [c for c in chain if id(c) in dash_ids]
        top, bottom = min(c.box[1] for c in shaft) - y0, max(c.box[3] for c in shaft) - y0
        for left, right in zip(chain, chain[1:]):
            filled[top:bottom + 1, left.box[2] + 1 - x0:right.box[0] - x0] = True
        if arrow_shape(filled, bond) is None:
            continue
        used |= {id(c) for c in chain}
        joined.append(_Comp((x0, y0, x1, y1), int(filled.sum()), filled))
    return [c for c in comps if id(c) not in used] + joined


def _arrow_with_touching_text(comp: _Comp, bond: float) -> tuple[str | None, Box]:
    """An arrow whose shaft touches printed conditions (a ")" or a subscript on the line):
    the band of ``0.35 b`` around the longest ink row is tested on its own."""
    if comp.width < 1.4 * bond or comp.width < comp.height:
        return None, comp.box
    rows = comp.mask.sum(axis=1)
    axis = int(rows.argmax())
    if rows[axis] < 0.6 * comp.width:
        return None, comp.box
    reach = max(7, int(0.35 * bond))
    top, bottom = max(0, axis - reach), min(comp.height, axis + reach + 1)
    band = comp.mask[top:bottom]
    if comp.pixels - int(band.sum()) > 0.5 * band.sum():
        return None, comp.box  # most of the ink is elsewhere: a drawing, not a labelled arrow
    filled = band.any(axis=1).nonzero()[0]
    band = band[filled[0]:filled[-1] + 1]
    direction = arrow_shape(band, bond)
    box = (comp.box[0], comp.box[1] + top + int(filled[0]), comp.box[2], comp.box[1] + top + int(filled[-1]))
    return direction, box


def _is_rule(comp: _Comp, page_width: int, bond: float, page_height: int | None = None) -> bool:
    """A headless line at most ``max(4, b/6)`` px thick spanning ≥ 60 % of the figure's
    width (a table or footnote rule), or of its height (a frame or column rule)."""
    thin = max(4, bond / 6)
    if comp.height <= thin and comp.width >= 0.6 * page_width:
        return True
    return page_height is not None and comp.width <= thin and comp.height >= 0.6 * page_height


def _is_plus(comp: _Comp, bond: float) -> bool:
    """A cross of two bars through its centre, square within 30 %, empty corners, at most
    ``0.9 b`` across — or of any size up to ``3 b`` when its bars are heavy (each at least
    a sixth of the cross across: a bold "+" set between drawings, where a drawn cross of
    bonds has bars a bond-line thin)."""
    h, w = comp.mask.shape
    if h < 5 or w < 5 or abs(h - w) > max(3, 0.3 * max(h, w)):
        return False
    mask = comp.mask
    cross = mask[h // 2].mean() > 0.7 and mask[:, w // 2].mean() > 0.7 and mask.mean() < 0.6 \
        and mask[: h // 4, : w // 4].mean() < 0.1 and mask[-(h // 4):, -(w // 4):].mean() < 0.1
    if not cross:
        return False
    limit = max(12, 0.9 * bond)
    if h <= limit and w <= limit:
        return True
    heavy = mask[:, w // 8].sum() >= max(h, w) / 6 and mask[h // 8].sum() >= max(h, w) / 6
    return heavy and max(h, w) <= 3 * bond


def wordlike(text: str) -> bool:
    """Printed letters and digits (``NMR``, ``yield``, ``81``), not OCR's reading of a drawing
    (``O}-``): at least two letters or digits making up three quarters of it."""
    alnum = sum(c.isalnum() for c in text)
    return alnum >= 2 and alnum >= 0.75 * len(text)


def holds_drawing(ink: Any, box: Box, bond: float) -> bool:
    """Whether the ink inside ``box`` holds a stroke longer than a character (0.8 bond)
    across or down: a drawn bond, where printed glyphs are all character-sized."""
    x0, y0, x1, y1 = box
    char = 0.8 * bond
    return any(c.width > char or c.height > char for c in _components(ink[y0:y1 + 1, x0:x1 + 1]) if c.pixels >= 3)


def _in_label_word(box: Box, line: TextLine) -> bool:
    """``box`` lies in a short word of ``line`` (``Bpin``, ``NHBoc``, the ``Ph`` OCR put on
    one line with the ``24 h`` printed beside it): possibly an atom label, so its glyphs
    may still join a drawing they touch."""
    words = line.words or ((line.text, line.box),)
    return any(_inside(box, word_box, slack=2) and len(word) <= 6 for word, word_box in words)


def _inside(inner: Box, outer: Box, slack: int = 2) -> bool:
    return (outer[0] - slack <= inner[0] and inner[2] <= outer[2] + slack
            and outer[1] - slack <= inner[1] and inner[3] <= outer[3] + slack)


def _gap(a: Box, b: Box) -> float:
    """Distance between two boxes (0 when they touch or overlap)."""
    dx = max(0, max(a[0], b[0]) - min(a[2], b[2]))
    dy = max(0, max(a[1], b[1]) - min(a[3], b[3]))
    return (dx * dx + dy * dy) ** 0.5


def _union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _peeled(line: TextLine, page_width: int, bond: float) -> bool:
    """A title, caption or footnote line: several words of running text, or a line as
    wide as most of the figure."""
    if line.box[3] - line.box[1] + 1 > 1.5 * bond:  # much taller than a bond: OCR ran over a drawing
        return False
    words = line.text.split()
    alphabetic = sum(1 for w in words if sum(c.isalpha() for c in w) >= 3)
    wide = line.box[2] - line.box[0] >= 0.6 * page_width
    return alphabetic >= 4 or (wide and len(words) >= 3)


def segment(image: Any, text_lines: list[TextLine], bond: float | None = None) -> list[Segment]:
    """The laid-out items of one figure, rows top to bottom and left to right within a row."""
    ink = ink_mask(image)
    page_height, page_width = ink.shape
    bond = bond or bond_length(text_lines) or DEFAULT_BOND
    comps = _join_dashes([c for c in _components(ink) if c.pixels >= 3], bond)
    char = 0.8 * bond
    peeled_boxes = [ln.box for ln in text_lines if _peeled(ln, page_width, bond)]
    word_boxes = [ln.box for ln in text_lines if ln.confidence >= 40]
    items: list[tuple[Any, ...]] = []
    skeletons: list[_Comp] = []
    small: list[_Comp] = []
    pluses: list[_Comp] = []
    candidates: list[tuple[_Comp, tuple[Box, list[Box]]]] = []
    for comp in comps:
        if any(_inside(comp.box, box) for box in peeled_boxes):
            items.append(("peeled", comp.box))  # a glyph of a title or caption (a bold "l" is no arrow)
            continue
        if _is_rule(comp, page_width, bond, page_height) and arrow_shape(comp.mask, bond) is None:
            items.append(("rule", comp.box))
            continue
        direction, box = arrow_shape(comp.mask, bond), comp.box
        if direction is None:
            direction, box = _arrow_with_touching_text(comp, bond)
        if direction is not None:
            items.append(("arrow" if direction in ("left", "right") else "arrow_v", box))
            continue
        if any(contains(box, comp.box, slack=2) for box in peeled_boxes):
            items.append(("peeled", comp.box))
            continue
        if any(_inside(comp.box, ln.box) and ln.box[3] - ln.box[1] + 1 <= bond and len(ln.text) > 3
               and not _in_label_word(comp.box, ln) for ln in text_lines if ln.confidence >= 40):
            items.append(("text", comp.box))  # a glyph-sized blob of a printed line
            continue
        if _is_plus(comp, bond):
            pluses.append(comp)
            continue
        bar = _fork_bar(comp, bond) if comp.height >= 2 * bond else None
        if bar is not None:
            candidates.append((comp, bar))
            continue
        if comp.width <= char and comp.height <= char:
            small.append(comp)
        else:
            skeletons.append(comp)
    skeletons.extend(_forks(candidates, items, bond))
    # a small "+" against a drawing's ink is a charge; a reaction "+" stands apart
    for comp in pluses:
        if comp.width <= 0.5 * bond and any(_near_ink(comp.box, s, 0.3 * bond) for s in skeletons):
            small.append(comp)
        else:
            items.append(("plus", comp.box))
    # a structure grows from each skeleton: nearby characters (labels, hashes) join it
    parent = list(range(len(skeletons)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    boxes = [s.box for s in skeletons]
    for i in range(len(skeletons)):
        for j in range(i + 1, len(skeletons)):
            if _gap(boxes[i], boxes[j]) <= 0.35 * bond and _touching(skeletons[i], skeletons[j], 0.35 * bond):
                parent[find(i)] = find(j)
    # characters join a drawing within reach of its ink, or of characters that already
    # joined it (the hashes of a hashed wedge carry the "HO" at their far end)
    attached: dict[int, int] = {}
    pending = list(range(len(small)))
    for _ in range(4):
        still = []
        for k in pending:
            comp = small[k]
            near = {find(i) for i, s in enumerate(skeletons) if _gap(comp.box, s.box) <= 0.35 * bond
                    and _near_ink(comp.box, s, 0.35 * bond)}
            near |= {find(attached[j]) for j in attached if _gap(comp.box, small[j].box) <= 0.3 * bond}
            in_word = any(contains(box, comp.box, slack=1) for box in word_boxes)
            if near and not (in_word and _word_far(comp.box, text_lines, skeletons, list(near), bond)):
                root, *others = sorted(near)
                for other in others:
                    parent[find(other)] = find(root)
                attached[k] = find(root)
            else:
                still.append(k)
        if len(still) == len(pending):
            break
        pending = still
    _bridge_hashes(skeletons, small, attached, find, parent, word_boxes, bond)
    members: dict[int, list[Box]] = {}
    for i, skeleton in enumerate(skeletons):
        members.setdefault(find(i), []).append(skeleton.box)
    for k, root in attached.items():
        root = find(root)
        boxes[root] = _union(boxes[root], small[k].box)
        members.setdefault(root, []).append(small[k].box)
    leftovers = [small[k] for k in pending if k not in attached]
    # a printed label joins whole: every character of a short OCR'd word one of whose
    # characters joined a drawing (NHBoc, •HBr) goes with it; only the word one of whose
    # characters joined it, not every word of the OCR line that holds it ("HBr + HO")
    words = [(w, b) for ln in text_lines for w, b in (ln.words or ((ln.text, ln.box),))]
    for text, word in words:
        if len(text) > 12 or any(contains(box, word, slack=2) for box in peeled_boxes):
            continue
        inside = [c for c in leftovers if contains(word, c.box, slack=1)]
        joined = [attached[k] for k in attached if contains(word, small[k].box, slack=1)]
        if inside and joined:
            root = find(joined[0])
            for comp in inside:
                boxes[root] = _union(boxes[root], comp.box)
                members.setdefault(root, []).append(comp.box)
                leftovers.remove(comp)
    groups: dict[int, tuple[Box, list[Box]]] = {}
    for i in range(len(skeletons)):
        root = find(i)
        box = _union(groups[root][0], boxes[i]) if root in groups else _union(boxes[root], boxes[i])
        groups[root] = (box, members.get(root, []))
    confident = [ln.box for ln in text_lines if ln.confidence >= 80]
    confident += [box for ln in text_lines for (word, box), conf in zip(ln.words, ln.word_confidences)
                  if conf >= 85 and wordlike(word)]
    for box, parts in _merge_overlapping(list(groups.values())):
        if any(_inside(box, line, slack=3) for line in confident) or (
                parts and all(any(_inside(part, word, slack=3) for word in confident) for part in parts)):
            items.append(("text", box))  # glyphs larger than the drawings' characters (a table set in a bigger font)
        else:
            items.append(("structure", box, tuple(parts)))
    for comp in leftovers:
        items.append(("text", comp.box))
    return rows(_merge_text(items, text_lines), bond)


def _bridge_hashes(skeletons: list[_Comp], small: list[_Comp], attached: dict[int, int], find: Callable[[int], int],
                   parent: list[int], word_boxes: list[Box], bond: float) -> None:
    """A hashed wedge joins the drawings at its two ends.  Its narrow end is faint in an
    antialiased figure, so its first hashes fall below the ink threshold and the gap
    between the last hash and the atom it starts from is wider than a character's reach.
    A hash-sized character (at most 0.4 b across, outside any confident OCR word) with
    ink of two different drawings within 0.6 b on opposite sides of it (the directions to
    the nearest ink of each at more than 125 degrees) unites them, and joins them if it
    had joined none.  Two separate molecules of one figure stand further apart than that.
    """
    import numpy as np

    reach = 0.6 * bond
    owners: list[tuple[int, _Comp]] = [(i, s) for i, s in enumerate(skeletons)]
    owners += [(attached[k], small[k]) for k in attached]
    ink: dict[int, tuple[Any, Any]] = {}  # each owner's ink pixels in page coordinates, found once
    for k, comp in enumerate(small):
        if max(comp.width, comp.height) > 0.4 * bond or any(contains(box, comp.box, slack=1) for box in word_boxes):
            continue
        cx, cy = (comp.box[0] + comp.box[2]) / 2, (comp.box[1] + comp.box[3]) / 2
        nearest: dict[int, tuple[float, float, float]] = {}
        for number, (owner, other) in enumerate(owners):
            if other is comp or _gap(comp.box, other.box) > reach:
                continue
            if number not in ink:
                ys, xs = np.nonzero(other.mask)
                ink[number] = (xs + other.box[0], ys + other.box[1])
            xs, ys = ink[number]
            dist = np.hypot(np.maximum(np.maximum(comp.box[0] - xs, xs - comp.box[2]), 0),
                            np.maximum(np.maximum(comp.box[1] - ys, ys - comp.box[3]), 0))
            i = int(np.argmin(dist))
            if dist[i] > reach:
                continue
            root = find(owner)
            if root not in nearest or dist[i] < nearest[root][2]:
                nearest[root] = (float(xs[i] - cx), float(ys[i] - cy), float(dist[i]))
        roots = sorted(nearest)
        for a in range(len(roots)):
            for b in range(a + 1, len(roots)):
                (ax, ay, _), (bx, by, _) = nearest[roots[a]], nearest[roots[b]]
                norm = (ax * ax + ay * ay) ** 0.5 * (bx * bx + by * by) ** 0.5
                if norm and (ax * bx + ay * by) / norm < -0.57 and find(roots[a]) != find(roots[b]):
                    parent[find(roots[b])] = find(roots[a])
                    attached.setdefault(k, find(roots[a]))


def _merge_overlapping(groups: list[tuple[Box, list[Box]]]) -> list[tuple[Box, list[Box]]]:
    """Structure boxes that overlap by ≥ 15 % of the smaller one are one structure (a
    drawing split by a wedge or a bond through a printed atom)."""
    merged = list(groups)
    changed = True
    while changed:
        changed = False
        for i in range(len(merged)):
            for j in range(i + 1, len(merged)):
                (a, pa), (b, pb) = merged[i], merged[j]
                w = min(a[2], b[2]) - max(a[0], b[0])
                h = min(a[3], b[3]) - max(a[1], b[1])
                smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])) or 1
                if w > 0 and h > 0 and w * h >= 0.15 * smaller:
                    merged[i] = (_union(a, b), pa + pb)
                    del merged[j]
                    changed = True
                    break
            if changed:
                break
    return merged


def _touching(a: _Comp, b: _Comp, reach: float) -> bool:
    """Two skeletons whose ink comes within ``reach`` (a bond broken by a printed atom)."""
    return _near_ink(a.box, b, reach) and _near_ink(b.box, a, reach)


def _near_ink(box: Box, comp: _Comp, reach: float) -> bool:
    """Some ink of ``comp`` lies within ``reach`` of ``box``."""
    r = int(reach)
    x0 = max(box[0] - r, comp.box[0]) - comp.box[0]
    x1 = min(box[2] + r, comp.box[2]) - comp.box[0]
    y0 = max(box[1] - r, comp.box[1]) - comp.box[1]
    y1 = min(box[3] + r, comp.box[3]) - comp.box[1]
    if x1 < x0 or y1 < y0:
        return False
    return bool(comp.mask[y0:y1 + 1, x0:x1 + 1].any())


def _word_far(box: Box, lines: list[TextLine], skeletons: list[_Comp], near: list[int], bond: float) -> bool:
    """A character inside an OCR'd word of ≥ 5 letters on a line wider than 2.5 bonds
    (conditions, captions) stays text even beside a drawing; short words and printed
    group labels of any length (OH, NHBoc, OTBS: :func:`group_label`) join the drawing."""
    for line in lines:
        if contains(line.box, box, slack=1):
            if group_label(line.text):
                return False
            longest = max((sum(c.isalpha() for c in w) for w in line.text.split()), default=0)
            return longest >= 5 and line.box[2] - line.box[0] > 2.5 * bond
    return False


def group_label(text: str) -> bool:
    """Whether ``text`` is one printed group label: an abbreviation of
    :data:`labrecord.chemdata.abbreviations.ABBREVIATIONS` (``NHBoc``, ``CO2Me``), or one
    written after the atom that carries it (``NBoc``, ``NHCbz``, ``SAc``)."""
    from labrecord.chemdata.abbreviations import ABBREVIATIONS

    word = text.strip().strip(",.;:")
    if word in ABBREVIATIONS:
        return True
    for prefix in ("NH", "N", "O", "S"):
        if word.startswith(prefix) and word[len(prefix):] in ABBREVIATIONS and len(word) > len(prefix) + 1:
            return True
    return False


def _merge_text(items: list[tuple[Any, ...]], lines: list[TextLine]) -> list[tuple[Any, ...]]:
    """Character-level text components become one ``text`` item per printed line.  A line
    that straddles a drawing (:func:`straddles`: OCR read a ring beside ``+ NH3`` as part
    of the line) gives the union of its own text components instead of its box."""
    text_boxes = [item[1] for item in items if item[0] in ("text", "peeled")]
    others = [item for item in items if item[0] not in ("text", "peeled")]
    drawn = [item[1] for item in others if item[0] == "structure"]
    merged: list[Box] = []
    for line in lines:
        inside = [box for box in text_boxes if contains(line.box, box, slack=2)]
        if inside and straddles(line.box, drawn):
            merged.extend(b for b in _text_runs(inside) if not any(contains(m, b, slack=2) for m in merged))
        elif inside:
            merged.append(line.box)
    # glyphs no OCR line covers (``H``, ``2``, ``O`` of a ``+ H2O`` the page pass missed)
    # become one item per word, so that word is read whole
    merged.extend(_text_runs([box for box in text_boxes if not any(contains(m, box, slack=2) for m in merged)]))
    return others + [("text", box) for box in merged]


def rows(items: list[tuple[Any, ...]], bond: float) -> list[Segment]:
    """Segments from ``(kind, box[, parts])`` items: bands of the non-text items
    (structures, arrows, plus signs) separated by ``0.6 b`` of blank rows; text keeps the
    band it falls in (or -1), rules are -1.  Also forms rows from a model's layout."""
    import numpy as np

    drawn = [item for item in items if item[0] in ("structure", "arrow", "plus")]
    if not drawn:
        return [Segment(item[0], item[1], -1) for item in sorted(items, key=lambda it: (it[1][1], it[1][0]))]
    height = max(item[1][3] for item in items) + 1
    occupied = np.zeros(height, dtype=bool)
    for item in drawn:
        occupied[item[1][1]:item[1][3] + 1] = True
    bands = _runs(occupied, max(2, int(0.6 * bond)))
    segments = []
    for item in items:
        kind, box = item[0], item[1]
        centre = (box[1] + box[3]) / 2
        band = -1
        if kind != "rule":
            band = next((i for i, (top, bottom) in enumerate(bands) if top <= centre <= bottom), -1)
        segments.append(Segment(kind, box, band, tuple(item[2]) if len(item) > 2 else ()))
    return sorted(segments, key=lambda s: (s.band if s.band >= 0 else 10**6, s.box[0], s.box[1]))


def straddles(line: Box, structures: list[Box], share: float = 0.25) -> bool:
    """True when a text line's box covers a drawing: some structure box takes ≥ ``share``
    of the line's area.  Such a line's text mixes the drawing's ink with the printed words
    (a product ring beside ``+ NH3`` read as ``LD + vi``)."""
    area = max(1, (line[2] - line[0] + 1) * (line[3] - line[1] + 1))
    for box in structures:
        w = min(line[2], box[2]) - max(line[0], box[0]) + 1
        h = min(line[3], box[3]) - max(line[1], box[1]) + 1
        if w > 0 and h > 0 and w * h >= share * area:
            return True
    return False


def _text_runs(boxes: list[Box]) -> list[Box]:
    """Character boxes grouped into words: a box joins a word it overlaps vertically when
    the horizontal gap between them is at most the taller one's height (the ``N``, ``H``
    and ``3`` of ``NH3``); boxes of other lines, or further apart, start words of their own."""
    runs: list[Box] = []
    for box in sorted(boxes):
        for number, run in enumerate(runs):
            if box[0] - run[2] <= max(box[3] - box[1], run[3] - run[1]) and box[1] <= run[3] and run[1] <= box[3]:
                runs[number] = _union(run, box)
                break
        else:
            runs.append(box)
    return runs


def overlaps(a: Box, b: Box) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def contains(outer: Box, inner: Box, slack: int = 8) -> bool:
    """``inner``'s centre lies inside ``outer`` grown by ``slack`` pixels."""
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return outer[0] - slack <= cx <= outer[2] + slack and outer[1] - slack <= cy <= outer[3] + slack


#: outline colours of :func:`draw_layout`
COLOURS = {"structure": (0, 110, 220), "arrow": (220, 0, 0), "arrow_v": (220, 120, 0), "plus": (0, 160, 0),
           "text": (150, 150, 150), "rule": (160, 0, 160), "fork": (220, 0, 0)}


def arrows_of(segments: list[Segment]) -> list[Segment]:
    """The arrows of the layout, a fork's branches counted as arrows of its row."""
    out = [seg for seg in segments if seg.kind == "arrow"]
    out += [Segment("arrow", branch, seg.band) for seg in segments if seg.kind == "fork" for branch in seg.parts]
    return out


def draw_layout(image: Any, segments: list[Segment]) -> Any:
    """An RGB copy of ``image`` with every segment outlined in its kind's colour and its
    band written at the corner (the picture docs/extraction.md shows)."""
    from PIL import ImageDraw

    picture = image.convert("RGB")
    pen = ImageDraw.Draw(picture)
    for seg in segments:
        colour = COLOURS.get(seg.kind, (0, 0, 0))
        pen.rectangle(seg.box, outline=colour, width=2 if seg.kind != "text" else 1)
        for branch in seg.parts if seg.kind == "fork" else ():
            pen.rectangle(branch, outline=colour, width=1)
        if seg.kind in ("structure", "arrow", "fork"):
            pen.text((seg.box[0] + 2, seg.box[1] + 1), f"{seg.kind[0]}{seg.band}", fill=colour)
    return picture
