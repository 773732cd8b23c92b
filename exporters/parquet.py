"""``labrecord export parquet``: flat tables for training outside LeRobot.

The output directory holds:

* ``attempts.parquet``: every attempt of every run, accepted or not, with the reason
* ``steps.parquet``: one row per step of every accepted demo: run_id, episode, demo,
  split, frame, ``action`` (fixed-size list), ``obs.<key>`` and ``next_obs.<key>`` for
  the proprioceptive keys, reward, done, ``policy_in_control`` and ``timestamps.<name>``;
  camera frames are left out (use the LeRobot or HDF5 export).  Evaluator state (display
  reading, stability flag, object poses) is a training-facing table's business only when
  asked for (``env_state``): then as ``env_state.<key>`` / ``next_env_state.<key>``
  columns, marked privileged in the file's schema (field metadata ``labrecord.role``)
  and in ``export.json``
* ``events.parquet``: the events of the runs that contributed a demo (``fields`` is the
  event's own JSON)
* ``measurements.parquet``: those runs' measurements with a ``run_id`` column
* ``export.json``: the acceptance rule, the counts, which observation keys are
  proprioception and which evaluator state, and the privileged columns (if any)

Tables are built per demo as Arrow columns and written once, never row by row.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from labrecord.demos import Demo, DemoReader
from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_path, dumps_pretty
from labrecord.rundir import EVENTS_FILE, MEASUREMENTS_FILE, iter_events

from labrecord.exporters.hdf5 import ExportSummary
from labrecord.exporters.observations import classify, demo_roles
from labrecord.exporters.selection import ATTEMPT_COLUMNS, AttemptRow, Selection, check_output, select


def _column(values: np.ndarray) -> Any:
    """A numpy array as an Arrow column: (N,) plain, (N, d...) a fixed-size list of d floats."""
    import pyarrow as pa

    if values.ndim == 1:
        return pa.array(values)
    flat = values.reshape(len(values), -1)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat.ravel()), flat.shape[1])


#: column prefixes of the observation that was seen and the one that followed, by role
PROPRIO_PREFIXES = ("obs", "next_obs")
ENV_STATE_PREFIXES = ("env_state", "next_env_state")
#: Parquet field metadata naming a column's role
ROLE_KEY = b"labrecord.role"


def demo_table(demo: Demo, row: AttemptRow, proprio: Sequence[str], env_state: Sequence[str] = ()) -> Any:
    """One accepted demo as an Arrow table, one row per step: ``obs.<key>`` /
    ``next_obs.<key>`` for the ``proprio`` keys, ``env_state.<key>`` /
    ``next_env_state.<key>`` for the ``env_state`` keys (evaluator state, privileged)."""
    import pyarrow as pa

    n = demo.num_samples
    columns: dict[str, Any] = {
        "run_id": pa.array([row.run_id] * n), "episode": pa.array(np.full(n, row.episode, dtype=np.int64)),
        "demo": pa.array([row.demo] * n), "split": pa.array([row.split] * n),
        "frame": pa.array(np.arange(n, dtype=np.int64)), "action": _column(demo.actions),
        "reward": pa.array(demo.rewards), "done": pa.array(demo.dones.astype(bool)),
        "policy_in_control": pa.array(demo.control_mask.astype(bool)),
    }
    for keys, prefixes in ((proprio, PROPRIO_PREFIXES), (env_state, ENV_STATE_PREFIXES)):
        for prefix, arrays in zip(prefixes, (demo.obs, demo.next_obs)):
            for key in sorted(keys):
                columns[f"{prefix}.{key}"] = _column(arrays[key])
    for key in sorted(demo.timestamps):
        columns[f"timestamps.{key}"] = pa.array(demo.timestamps[key])
    return pa.table(columns)


def privileged_columns(env_state: Sequence[str]) -> list[str]:
    """The steps table's columns of evaluator state, in table order."""
    return [f"{prefix}.{key}" for prefix in ENV_STATE_PREFIXES for key in sorted(env_state)]


def mark_privileged(table: Any, columns: Sequence[str]) -> Any:
    """``table`` with each of ``columns`` tagged ``labrecord.role = privileged`` (every other
    observation column ``proprioception``) in its Parquet schema, so the file itself says
    which columns a deployed policy could not see."""
    import pyarrow as pa

    marked = set(columns)
    fields = []
    for field in table.schema:
        prefix = field.name.split(".", 1)[0]
        role = b"privileged" if field.name in marked else b"proprioception" if prefix in PROPRIO_PREFIXES else None
        fields.append(field.with_metadata({ROLE_KEY: role}) if role else field)
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def steps_table(selection: Selection, proprio: Sequence[str], env_state: Sequence[str] = ()) -> Any:
    """Every step of the accepted demos: proprioception, plus ``env_state`` keys when given."""
    import pyarrow as pa

    tables = []
    for row in selection.accepted:
        with DemoReader(selection.runs[row.run_id].demo_path) as reader:  # type: ignore[arg-type]
            demo = reader.demo(row.demo, keys=[*proprio, *env_state])  # type: ignore[arg-type]
        tables.append(demo_table(demo, row, proprio, env_state))
    return mark_privileged(pa.concat_tables(tables, promote_options="default"), privileged_columns(env_state))


def attempts_table(selection: Selection) -> Any:
    import pyarrow as pa

    names = [*ATTEMPT_COLUMNS, "accepted", "split", "note"]
    return pa.table({name: [getattr(r, name) for r in selection.attempts] for name in names})


def events_table(selection: Selection, run_ids: list[str]) -> Any:
    import pyarrow as pa

    columns: dict[str, list[Any]] = {"run_id": [], "seq": [], "t": [], "wall": [], "type": [], "fields": []}
    for run_id in run_ids:
        path = selection.runs[run_id].dir / EVENTS_FILE
        if not path.exists():
            continue
        for _, event in iter_events(path):
            record = msgspec.to_builtins(event)
            columns["run_id"].append(run_id)
            for key in ("seq", "t", "wall", "type"):
                columns[key].append(record.pop(key, None))
            columns["fields"].append(json.dumps(record, sort_keys=True))
    types = {"run_id": pa.string(), "seq": pa.int64(), "t": pa.float64(), "wall": pa.float64(),
             "type": pa.string(), "fields": pa.string()}
    return pa.table({k: pa.array(v, type=types[k]) for k, v in columns.items()})


def measurements_table(selection: Selection, run_ids: list[str]) -> Any | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for run_id in run_ids:
        path = selection.runs[run_id].dir / MEASUREMENTS_FILE
        if not path.exists():
            continue
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowInvalid) as error:
            raise LabrecordError(f"{path}: not a readable Parquet file ({error})") from error
        tables.append(table.add_column(0, "run_id", pa.array([run_id] * table.num_rows, type=pa.string())))
    if not tables:
        return None
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise LabrecordError(f"measurements of runs {', '.join(run_ids)} cannot be combined: {error}") from error


def export_parquet(runs_dir: str | os.PathLike[str], out: str | os.PathLike[str], *, accept: str = "success",
                   overwrite: bool = False, env_state: bool = False) -> ExportSummary:
    """Write the Parquet tables into a new directory ``out`` (built aside, then renamed).

    The steps table holds proprioception only; ``env_state`` adds the evaluator state as
    privileged ``env_state.<key>`` / ``next_env_state.<key>`` columns.
    """
    import pyarrow.parquet as pq

    out = check_output(out, overwrite, runs_dir)
    selection = select(runs_dir, accept)
    run_ids = list(dict.fromkeys(a.run_id for a in selection.accepted))
    roles = classify(*demo_roles(selection))
    evaluator = roles.privileged if env_state else []
    tables = {"attempts": attempts_table(selection), "steps": steps_table(selection, roles.proprio, evaluator),
              "events": events_table(selection, run_ids), "measurements": measurements_table(selection, run_ids)}
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out, folder=True) as tmp:
        for name, table in tables.items():
            if table is not None:
                pq.write_table(table, tmp / f"{name}.parquet", compression="zstd")
        observations = {**roles.to_json(), "environment_state": {"requested": env_state, "privileged": bool(evaluator)}}
        summary = {"rule": accept, "runs": run_ids, "demos": len(selection.accepted), "observations": observations,
                   "privileged_columns": privileged_columns(evaluator),
                   "frames": tables["steps"].num_rows, "attempts": len(selection.attempts),
                   "files": sorted(f"{k}.parquet" for k, t in tables.items() if t is not None)}
        (tmp / "export.json").write_bytes(dumps_pretty(summary))
    n = len(selection.accepted)
    return ExportSummary(Path(out), n, tables["steps"].num_rows, len(selection.attempts), n, 0)
