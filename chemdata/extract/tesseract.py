"""Text reading with ``tesseract`` (Debian packages ``tesseract-ocr`` and ``tesseract-ocr-eng``).

``tesseract IMAGE - tsv`` gives one word per row with its box; words are grouped into
lines by tesseract's own (block, paragraph, line) numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

from labrecord.chemdata.extract.trajectory import Trajectory


@dataclass(frozen=True)
class TextLine:
    """One printed line: its words joined by spaces and its box (x0, y0, x1, y1)."""

    text: str
    box: tuple[int, int, int, int]
    confidence: float
    #: the line's words with their own boxes (a table's columns are read from them)
    words: tuple[tuple[str, tuple[int, int, int, int]], ...] = ()
    #: each word's own confidence, in the order of ``words``
    word_confidences: tuple[float, ...] = ()


def parse_tsv(text: str, min_confidence: float = 0.0) -> list[TextLine]:
    """Group tesseract TSV words into lines, top to bottom then left to right."""
    groups: dict[tuple[int, int, int, int], list[tuple[int, int, int, int, str, float]]] = {}
    for row in text.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or not cells[11].strip():
            continue
        try:
            level, page, block, par, line = (int(c) for c in cells[:5])
            left, top, width, height = (int(c) for c in cells[6:10])
            confidence = float(cells[10])
        except ValueError:
            continue
        if level != 5 or confidence < min_confidence:
            continue
        groups.setdefault((page, block, par, line), []).append(
            (left, top, left + width, top + height, cells[11].strip(), confidence))
    lines = []
    for words in groups.values():
        words.sort()
        box = (min(w[0] for w in words), min(w[1] for w in words), max(w[2] for w in words), max(w[3] for w in words))
        lines.append(TextLine(" ".join(w[4] for w in words), box, min(w[5] for w in words),
                              tuple((w[4], (w[0], w[1], w[2], w[3])) for w in words), tuple(w[5] for w in words)))
    return sorted(lines, key=lambda item: (item.box[1], item.box[0]))


def read_text(trajectory: Trajectory, image_path: str, *, command: list[str], limit_s: float,
              psm: int = 11, offset: tuple[int, int] = (0, 0), region: str = "full", scale: int = 1) -> list[TextLine]:
    """Run tesseract on one image: the whole figure with page segmentation 11 (sparse
    text), or a crop with 6 (a block) or 7 (one line); boxes shift by ``offset``.  An
    image enlarged ``scale`` times gets its boxes divided back by ``scale`` first."""
    argv = [*command, image_path, "-", "--psm", str(psm), "tsv"]
    lines = parse_tsv(trajectory.run_tool("tesseract", argv, limit_s=limit_s, note={"region": region}))
    dx, dy = offset

    def moved(b: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        return (b[0] // scale + dx, b[1] // scale + dy, -(-b[2] // scale) + dx, -(-b[3] // scale) + dy)

    return [TextLine(ln.text, moved(ln.box), ln.confidence, tuple((w, moved(b)) for w, b in ln.words), ln.word_confidences)
            for ln in lines]
