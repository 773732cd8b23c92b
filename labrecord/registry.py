"""Population registries on disk: ``<folder>/populations/<name>.jsonl``, written or merged.

Registries fix the denominators before evaluation (docs/run-directory.md): the simulator
registers the instances it draws, ``labrecord import`` the episode set a source defines.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError


def register_population(out_dir: str | os.PathLike[str], name: str, records: list[Any]) -> Path:
    """Write or merge ``<out_dir>/populations/<name>.jsonl``; returns its path.

    Records already registered are kept as they are (order preserved) and only new ones
    appended, so a second policy on the same instances leaves the file unchanged.  An
    instance registered with other drawn fields is refused: the folder's registry no
    longer describes these runs.  Writes are atomic and serialized by a lock file.
    """
    import fcntl

    import msgspec

    from labrecord.fileio import atomic_write_bytes, dumps
    from labrecord.models import PopulationEntry
    from labrecord.rundir import POPULATIONS_DIR
    from labrecord.validation.files import validate_population_file
    from labrecord.validation.findings import Report

    folder = Path(out_dir) / POPULATIONS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    lock = os.open(folder, os.O_RDONLY)  # parallel sim commands into one folder merge in turn
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lines: list[bytes] = []
        if path.exists():
            report = Report()
            validate_population_file(path, report)
            if report.errors:
                raise LabrecordError(f"cannot extend population registry: {report.errors[0]}")
            lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        decoder = msgspec.json.Decoder(PopulationEntry)
        known: dict[tuple[str, str], tuple[int, Any]] = {}
        for number, line in enumerate(lines, start=1):
            record = decoder.decode(line)
            known[_record_key(record)] = (number, record)
        added: list[bytes] = []
        for record in records:
            key = _record_key(record)
            if key not in known:
                known[key] = (len(lines) + len(added) + 1, record)
                added.append(dumps(record))
            elif known[key][1] != record:
                number, old = known[key]
                raise LabrecordError(f"{path}:{number}: {key[0]} {key[1]!r} is registered as {msgspec.to_builtins(old)}, "
                                     f"this run draws {msgspec.to_builtins(record)}; use another --out or --seed")
        if added or not path.exists():
            # existing lines are kept byte for byte (fields this release does not know included)
            atomic_write_bytes(path, b"".join(line + b"\n" for line in lines + added))
    finally:
        os.close(lock)
    return path


def _record_key(record: Any) -> tuple[str, str]:
    tag = type(record).__struct_config__.tag
    if tag in ("pair", "oracle_pair"):
        return tag, record.pair_id
    return tag, record.instance_id + (f"/{record.decision}" if tag == "checkpoint" else "")
