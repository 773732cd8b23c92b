"""Structure reading with Debian's ``osra`` (package ``osra``), one call per image.

``osra -c -p -f can IMAGE`` prints one structure per line: ``SMILES confidence
x0xy0-x1xy1``.  :func:`read_structures` runs it through the trajectory (so the call, its
arguments, output and timing are kept) and returns :class:`Reading` objects with boxes
in the coordinates of the whole figure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
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
    source: str  # "full" (whole-figure pass) or "crop"

    @property
    def is_template(self) -> bool:
        """The reading has an attachment point: ``*`` or a printed label (``[R1]``, ``[Ar]``)."""
        return "*" in self.smiles or bool(_LABELLED.search(self.smiles))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "smiles": self.smiles, "confidence": self.confidence,
                "box": list(self.box), "source": self.source}


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


def read_structures(trajectory: Trajectory, image_path: str, *, command: list[str], limit_s: float,
                    offset: tuple[int, int] = (0, 0), region: str = "full") -> list[tuple[str, float, tuple[int, int, int, int]]]:
    """Run osra on one image file; boxes are shifted by ``offset`` into figure coordinates."""
    argv = [*command, "-c", "-p", "-f", "can", image_path]
    output = trajectory.run_tool("osra", argv, limit_s=limit_s, note={"region": region})
    return parse_output(output, offset)
