"""Deterministic page layout: white-space segmentation into bands and blobs.

The figure is binarized (grey < 128 is ink), cut into horizontal *bands* at runs of at
least ``band_gap`` blank rows, and each band into *segments* at runs of at least
``column_gap`` blank columns.  A segment is then classified by shape:

* ``arrow`` — a run of ink rows at most 24 px tall and ≥ 60 px wide, holding a row that
  spans ≥ 60 % of the blob, separated by blank rows from anything else in the blob (printed
  conditions within 70 px above or below); the segment's box is the arrow's own;
* ``plus`` — small (both sides ≤ 40 px), its middle row and middle column mostly ink;
* ``text`` — overlapped by a tesseract line and no taller than 40 px;
* ``structure`` — everything else, a candidate for an osra crop.

These thresholds fit figures drawn at roughly 40 px per bond (as ``labrecord rxn
render`` draws them); they are the documented rule, not a learned detector.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labrecord.chemdata.extract.tesseract import TextLine

Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Segment:
    """A blob of ink: ``kind`` is arrow | plus | text | structure; box in figure pixels."""

    kind: str
    box: Box
    band: int


def _runs(mask: Any, min_gap: int) -> list[tuple[int, int]]:
    """Inclusive (start, end) index runs of True separated by ≥ ``min_gap`` False values."""
    runs: list[tuple[int, int]] = []
    start = last = None
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


def ink_mask(image: Any) -> Any:
    """Boolean array (rows, cols): True where the grey image is darker than 128."""
    import numpy as np

    return np.asarray(image.convert("L")) < 128


def segment(image: Any, text_lines: list[TextLine], band_gap: int = 20, column_gap: int = 25) -> list[Segment]:
    """Bands top to bottom, segments left to right within each band."""
    ink = ink_mask(image)
    segments: list[Segment] = []
    for band, (top, bottom) in enumerate(_runs(ink.any(axis=1), band_gap)):
        rows = ink[top:bottom + 1]
        for left, right in _runs(rows.any(axis=0), column_gap):
            block = rows[:, left:right + 1]
            filled = block.any(axis=1).nonzero()[0]
            box = (left, top + int(filled[0]), right, top + int(filled[-1]))
            block = block[filled[0]:filled[-1] + 1]
            arrow = _arrow_rows(block)
            if arrow is not None:  # the box of the arrow itself, without printed conditions
                segments.append(Segment("arrow", (left, box[1] + arrow[0], right, box[1] + arrow[1]), band))
                continue
            segments.append(Segment(_classify(block, box, text_lines), box, band))
    return segments


def _arrow_rows(block: Any) -> tuple[int, int] | None:
    """(first, last) block rows of an arrow, or None.

    The arrow is the run of ink rows (split at blank rows) holding the row with the most
    ink; it must be at most 24 px tall, span ≥ 60 px and ≥ 60 % of the blob's width, and be
    less than half ink or at most 6 px tall (a bare line).  Other runs are printed
    conditions and must lie within 70 px above or below it; a structure never splits
    this way, because its bonds join its rows into one run.
    """
    height, width = block.shape
    coverage = block.mean(axis=1)
    peak = int(coverage.argmax())
    if width < 60 or coverage[peak] < 0.6:
        return None
    runs = _runs(block.any(axis=1), 1)
    first, last = next(run for run in runs if run[0] <= peak <= run[1])
    core = block[first:last + 1]
    if last - first + 1 > 24 or not (core.mean() < 0.5 or last - first + 1 <= 6):
        return None
    if first > 70 or height - 1 - last > 70:
        return None
    return first, last


def _classify(block: Any, box: Box, text_lines: list[TextLine]) -> str:
    height, width = block.shape
    if height <= 40 and width <= 40 and block[height // 2].mean() > 0.6 and block[:, width // 2].mean() > 0.6 \
            and block.mean() < 0.5:
        return "plus"
    if height <= 40 and any(overlaps(box, line.box) for line in text_lines):
        return "text"
    return "structure"


def overlaps(a: Box, b: Box) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def contains(outer: Box, inner: Box, slack: int = 8) -> bool:
    """``inner``'s centre lies inside ``outer`` grown by ``slack`` pixels."""
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return outer[0] - slack <= cx <= outer[2] + slack and outer[1] - slack <= cy <= outer[3] + slack
