"""Scene descriptions (MJCF) shipped as package data, and the two revisions of a bench.

A run's result identity (Labference sec. 7.4) names the revision of the bench it ran on:

* :func:`asset_revision` — the hash of the asset files a scene loads: its MJCF file and
  the shared arm model with its meshes.  Editing a mesh or a model parameter changes it.
* :func:`layout_revision` — the hash of a family's layout *description*: the candidate
  spots and regions its layout generator draws from.  The realized layout of one instance
  is not a revision: it follows from the layout seed and the task variant.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

ASSETS = Path(__file__).resolve().parent
#: asset folders every scene loads (the arm)
SHARED = ("panda",)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]


@lru_cache(maxsize=None)
def asset_revision(scene: str) -> str:
    """The revision of ``scene`` (``labrecord.sim.assets/<name>.xml`` or the bare file
    name): sha256 over the names and bytes of its MJCF file and every shared asset file,
    in sorted path order."""
    name = scene.rsplit("/", 1)[-1]
    files = [ASSETS / name] + sorted(p for folder in SHARED for p in (ASSETS / folder).rglob("*") if p.is_file())
    h = hashlib.sha256()
    for path in files:
        h.update(str(path.relative_to(ASSETS)).encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()[:16]


def layout_revision(description: str) -> str:
    """The revision of a layout description (the generator's candidate spots, written out)."""
    return _digest(description.encode())
