"""Structure readers behind one interface: ``osra`` (Debian package) and ``decimer``
(the learned reader of the ``[ocsr]`` extra, :mod:`.decimer`).

A reader turns one crop file into at most one reading of the structure drawn in it:
``read(trajectory, crop_path, region=..., limit_s=...) -> ReaderResult | None``.  Each
result names its reader and that reader's confidence, and has been through the reader's
rows of the clean-up table (:func:`.cleanup.clean`).  Every call is a trajectory event
(``tool_call`` for osra, ``reader_call`` for DECIMER, with its elapsed time) and checks
the figure's budget first.

:func:`default_readers` is ``osra,decimer`` when the extra and its model are installed
and ``osra`` otherwise; :func:`parse_readers` checks a ``--readers`` value.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from labrecord.chemdata.extract import cleanup, decimer, osra
from labrecord.chemdata.extract.trajectory import Trajectory
from labrecord.errors import LabrecordError

#: every reader the runner knows, in the order the first is the fallback
KNOWN = ("osra", "decimer")


@dataclass(frozen=True)
class ReaderResult:
    smiles: str
    confidence: float
    reader: str
    fixes: tuple[str, ...] = ()


class Reader(Protocol):
    name: str

    def read(self, trajectory: Trajectory, crop_path: str, *, region: str, limit_s: float) -> ReaderResult | None: ...


@dataclass(frozen=True)
class OsraReader:
    """osra on a crop with the project's dictionaries (``options``); the largest piece
    it reports is the reading."""

    command: tuple[str, ...]
    options: tuple[str, ...] = ()
    name: str = "osra"

    def read(self, trajectory: Trajectory, crop_path: str, *, region: str, limit_s: float) -> ReaderResult | None:
        found = osra.read_structures(trajectory, crop_path, command=list(self.command), limit_s=limit_s,
                                     region=region, options=list(self.options))
        best = largest(found)
        if best is None:
            return None
        smiles, fixes = cleanup.clean(best[0], self.name)
        return ReaderResult(smiles, best[1], self.name, tuple(fixes))


@dataclass
class DecimerReader:
    """DECIMER on a crop: the process's loaded model (:func:`.decimer.load`), or the
    ``model`` given (a stand-in in tests)."""

    model: decimer.Model | None = None
    name: str = "decimer"

    def read(self, trajectory: Trajectory, crop_path: str, *, region: str, limit_s: float,
             printed: tuple[str, ...] | None = None) -> ReaderResult | None:
        """``printed``: the words printed inside the drawing, when known (for the
        clean-up rows that depend on them)."""
        trajectory.check_budget(self.name)
        if self.model is None:
            loaded_before = decimer.loaded_seconds()
            self.model = decimer.load()
            if self.model.load_s and not loaded_before:
                trajectory.add("reader_load", reader=self.name, elapsed_s=self.model.load_s)
        began = time.monotonic()
        smiles, confidence = self.model.read(crop_path)
        cleaned, fixes = cleanup.clean(smiles, self.name, printed)
        trajectory.add("reader_call", reader=self.name, args=[crop_path], region=region, output=smiles,
                       cleaned=cleaned, fixes=fixes, confidence=confidence,
                       elapsed_s=round(time.monotonic() - began, 6), status="ok")
        return ReaderResult(cleaned, confidence, self.name, tuple(fixes)) if cleaned else None


def largest(read: list[tuple[str, float, tuple[int, int, int, int]]]) -> tuple[str, float, tuple[int, int, int, int]] | None:
    """One reading per region: the structure with the most atoms (ties: higher confidence);
    a reader's extra pieces in a crop are fragments of the same drawing or stray marks."""
    if not read:
        return None

    def atoms(smiles: str) -> int:
        return sum(1 for c in smiles if c.isalpha() and c.isupper()) + smiles.count("c") + smiles.count("n")

    return max(read, key=lambda item: (atoms(item[0]), item[1]))


def default_readers() -> tuple[str, ...]:
    """``("osra", "decimer")`` when DECIMER can read here, else ``("osra",)``."""
    return KNOWN if decimer.missing_reason() is None else ("osra",)


def parse_readers(text: str) -> tuple[str, ...]:
    """``"osra,decimer"`` -> ``("osra", "decimer")``; osra must be among them (it finds the
    pieces and gives the coordinates the labels are placed by).  A requested DECIMER that
    cannot read here is refused with the reason."""
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [n for n in names if n not in KNOWN]
    if unknown or not names:
        raise LabrecordError(f"--readers: unknown or empty {','.join(unknown) or '(none)'} (known: {','.join(KNOWN)})")
    if "osra" not in names:
        raise LabrecordError(f"--readers {text}: osra is needed beside any other reader")
    if "decimer" in names:
        reason = decimer.missing_reason()
        if reason:
            raise LabrecordError(f"--readers {text}: {reason}")
    return names


def provenance_confidence(reader: str, confidence: float) -> float:
    """A reader's confidence as a record writes it (0..1): DECIMER's as it is (a geometric
    mean of token probabilities); osra's linear estimate clipped to 0..1."""
    return round(min(1.0, max(0.0, confidence)), 4)
