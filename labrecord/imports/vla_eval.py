"""vla-eval recordings: the ``recording-<eval_id>.sqlite`` file a ``vla-eval run`` leaves.

vla-eval (0.8) writes every result through one SQLite file in its output folder, shared by
all shards of an evaluation (``vla_eval.recording.RecordingStore``):

* ``eval_metadata``: one row per benchmark entry (``eval_id`` = ``<run eval_id>-<safe
  name>``) with the benchmark name, mode, its config (``episodes_per_task``, ``params``
  with the ``seed``), ``harness_version`` and the model server's info;
* ``episode_results``: one row per finished episode: ``task_name``, ``episode_id``,
  ``status`` (``success`` | ``fail`` | ``error``), ``metrics`` (JSON), ``steps``,
  ``elapsed_sec`` (wall clock), ``context`` (the task's plain fields and ``task_idx``),
  ``failure_reason`` / ``failure_detail`` of an errored episode, and ``jsonl_path`` (where
  ``vla-eval export`` puts its steps; the episode video, when recorded, is the same name
  with ``.mp4``).  A rerun of a work item adds a row; the last one counts, as in vla-eval's
  own export;
* ``step_rows``: the per-step fields of each episode;
* ``work_queue``: in a sharded run, the entry's work items (``item``, ``task_idx``), task by
  task and ``episodes_per_task`` each, with ``done``: the declared episode set;
* ``eval_shards``: which shards ran and whether each completed.

One run per episode row.  The declared episode set (task index x episode index, with the
config's seed) is the work queue when the run had one, else the task indices seen x
``episodes_per_task``; members with no row (the items of a shard that crashed) are
imported as missing and stay in the denominators.  An ``error`` episode is an
evaluator-side fault (``transport_fault`` when the model server was lost or timed out,
``service_fault`` otherwise): unresolved, never a failure.  The file is read with the
standard library's sqlite3, read-only, in one transaction.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError
from labrecord.fileio import dumps
from labrecord.imports.runs import ImportOptions, Member, RecordError, SourceFile, SourceRecord, safe_name
from labrecord.rundir import SOURCE_JSON_FILE

#: vla-eval failure reasons of a lost or silent model server (the orchestrator's transport paths)
TRANSPORT_REASONS = frozenset({"server_unreachable", "connection_closed", "timeout"})
STATUSES = ("success", "fail", "error")
_TABLES = ("eval_metadata", "episode_results")


def find_recording(path: str) -> Path:
    """The recording file at ``path``: the file itself, or the one ``recording-*.sqlite``
    in an output folder."""
    target = Path(path)
    if target.is_dir():
        found = sorted(target.glob("recording-*.sqlite"))
        if not found:
            raise LabrecordError(f"{target}: no recording-<eval_id>.sqlite (the output folder of a vla-eval run)")
        if len(found) > 1:
            raise LabrecordError(f"{target}: {len(found)} recordings ({', '.join(p.name for p in found)}); "
                                 "name the one to import")
        return found[0]
    if not target.is_file():
        raise LabrecordError(f"{target}: no such file")
    return target


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=60.0)
        conn.row_factory = sqlite3.Row
        conn.execute("BEGIN")  # one snapshot: shards still writing do not change it mid-read
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as error:
        raise LabrecordError(f"{path}: not a vla-eval recording ({error})") from None
    missing = [t for t in _TABLES if t not in tables]
    if missing:
        conn.close()
        raise LabrecordError(f"{path}: no {', '.join(missing)} table; not a vla-eval recording")
    return conn


def _json(text: Any, where: str, record: str, column: str, instance: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError) as error:
        raise RecordError(f"{where}: {record}: column {column} is not JSON ({error})", record, instance) from None


def _members(conn: sqlite3.Connection, eval_id: str, safe: str, config: dict[str, Any], seen_tasks: dict[int, str],
             seed: Any, has_queue: bool) -> list[Member] | None:
    """The entry's declared episode set: its work queue, else seen tasks x episodes_per_task."""
    pairs: list[tuple[int, int]] = []
    if has_queue:
        counter: dict[int, int] = {}
        for row in conn.execute("SELECT item, task_idx FROM work_queue WHERE eval_id = ? ORDER BY item", (eval_id,)):
            task_idx = int(row["task_idx"])
            pairs.append((task_idx, counter.get(task_idx, 0)))
            counter[task_idx] = counter.get(task_idx, 0) + 1
    if not pairs:
        per_task = config.get("episodes_per_task")
        if not isinstance(per_task, int) or per_task < 1 or not seen_tasks:
            return None
        pairs = [(t, e) for t in sorted(seen_tasks) for e in range(per_task)]
    return [Member(instance_id=_instance(safe, t, e), task_id=seen_tasks.get(t),
                   fields={"task_idx": t, "episode": e, "seed": seed if isinstance(seed, int) else None})
            for t, e in pairs]


def _instance(safe: str, task_idx: int | None, episode: int) -> str:
    task = "task" if task_idx is None else f"task{task_idx:04d}"
    return safe_name(f"{safe}-{task}-ep{episode:04d}")


def vla_eval_source(path: str, options: ImportOptions) -> SourceFile:
    db = find_recording(path)
    where = str(db)
    conn = _connect(db)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        has_queue, has_steps = "work_queue" in tables, "step_rows" in tables
        records: list[SourceRecord | LabrecordError] = []
        expected: list[Member] = []
        declared = True
        versions: set[str] = set()
        entries = conn.execute("SELECT eval_id, safe_name, metadata FROM eval_metadata ORDER BY eval_id").fetchall()
        for entry in entries:
            try:
                metadata = json.loads(entry["metadata"])
            except (TypeError, ValueError) as error:
                raise LabrecordError(f"{where}: eval_metadata {entry['eval_id']}: metadata is not JSON ({error})") from None
            if not isinstance(metadata, dict):
                raise LabrecordError(f"{where}: eval_metadata {entry['eval_id']}: metadata is not an object")
            if metadata.get("harness_version"):
                versions.add(str(metadata["harness_version"]))
            found = metadata.get("config")
            config: dict[str, Any] = found if isinstance(found, dict) else {}
            params: dict[str, Any] = config["params"] if isinstance(config.get("params"), dict) else {}
            seed = params.get("seed")
            safe = str(entry["safe_name"])
            seen: dict[int, str] = {}
            benchmark = {"benchmark": metadata.get("benchmark"), "mode": metadata.get("mode"), "config": config,
                         "eval_id": entry["eval_id"]}
            rows = conn.execute(
                # the last committed row of a work item wins, as in vla-eval's own export
                """SELECT rowid, * FROM episode_results WHERE rowid IN (
                       SELECT MAX(rowid) FROM episode_results WHERE eval_id = ?
                       GROUP BY task_name, episode_id, json_extract(context, '$.task_idx'),
                                CASE WHEN json_extract(context, '$.task_idx') IS NULL THEN rowid END)
                   ORDER BY json_extract(context, '$.task_idx'), episode_id, rowid""",
                (entry["eval_id"],)).fetchall()
            for row in rows:
                try:
                    record = _read_row(conn, row, where, safe, benchmark, seed, db.parent, has_steps)
                except RecordError as error:
                    records.append(error)
                    continue
                task_idx = record.attrs["context"].get("task_idx")
                if isinstance(task_idx, int):
                    seen.setdefault(task_idx, str(row["task_name"]))
                records.append(record)
            members = _members(conn, entry["eval_id"], safe, config, seen, seed, has_queue)
            if members is None:
                declared = False
            else:
                expected += members
    except sqlite3.DatabaseError as error:
        conn.close()
        raise LabrecordError(f"{where}: unreadable vla-eval recording ({error})") from None
    except BaseException:
        conn.close()
        raise
    conn.close()
    return SourceFile(kind="vla-eval", path=os.path.abspath(db), stem=db.stem.removeprefix("recording-"),
                      format_version=",".join(sorted(versions)) or None, task_id=None,
                      control_hz=None, records=records, expected=expected if declared else None)


def _read_row(conn: sqlite3.Connection, row: sqlite3.Row, where: str, safe: str, benchmark: dict[str, Any],
              seed: Any, folder: Path, has_steps: bool) -> SourceRecord:
    raw_episode = row["episode_id"]
    first = f"episode_results row {row['rowid']}"
    if not isinstance(raw_episode, int) or raw_episode < 0:
        raise RecordError(f"{where}: {first}: episode_id is {raw_episode!r}, expected an index >= 0", first)
    context = _json(row["context"], where, first, "context", None) or {}
    if not isinstance(context, dict):
        raise RecordError(f"{where}: {first}: context is {type(context).__name__}, expected an object", first)
    task_idx = context.get("task_idx") if isinstance(context.get("task_idx"), int) else None
    instance = _instance(safe, task_idx, raw_episode)
    name = f"{safe}/task{task_idx if task_idx is not None else '?'}/ep{raw_episode}"
    metrics = _json(row["metrics"], where, name, "metrics", instance)
    if metrics is not None and not isinstance(metrics, dict):
        raise RecordError(f"{where}: {name}: metrics is {type(metrics).__name__}, expected an object", name, instance)
    status = row["status"]
    if status not in STATUSES:
        raise RecordError(f"{where}: {name}: status is {status!r}, expected one of {', '.join(STATUSES)}",
                          name, instance)
    steps = row["steps"]
    if not isinstance(steps, int) or steps < 0:
        raise RecordError(f"{where}: {name}: steps is {steps!r}, expected a count >= 0", name, instance)
    elapsed = row["elapsed_sec"]
    if elapsed is not None and not isinstance(elapsed, (int, float)):
        raise RecordError(f"{where}: {name}: elapsed_sec is {elapsed!r}, expected seconds", name, instance)
    attrs = {"sid": row["sid"], "eid": row["eid"], "eval_id": row["eval_id"], "task_name": row["task_name"],
             "episode_id": raw_episode, "status": status, "metrics": metrics or {}, "steps": steps,
             "elapsed_sec": elapsed, "context": context, "jsonl_path": row["jsonl_path"],
             "failure_reason": row["failure_reason"], "failure_detail": row["failure_detail"]}
    step_rows: list[dict[str, Any]] = []
    if has_steps:
        for step in conn.execute("SELECT step_id, fields FROM step_rows WHERE sid = ? AND eid = ? ORDER BY step_id",
                                 (row["sid"], row["eid"])):
            fields = _json(step["fields"], where, name, f"step_rows {step['step_id']} fields", instance)
            step_rows.append({"step": step["step_id"], **(fields if isinstance(fields, dict) else {"fields": fields})})
    document = {"episode": attrs, "steps": step_rows}
    payload = json.dumps(document, sort_keys=True, default=str).encode()
    digest = hashlib.sha256(payload)
    videos: dict[str, Path] = {}
    if row["jsonl_path"]:
        video = Path(row["jsonl_path"])
        video = (video if video.is_absolute() else folder / video).with_suffix(".mp4")
        if video.is_file():
            videos["episode"] = video
            digest.update(video.read_bytes())
    fault = None
    if status == "error":
        reason = str(row["failure_reason"] or "unknown")
        fault = ("transport_fault" if reason in TRANSPORT_REASONS else "service_fault", f"vla-eval: {reason}")
    context_seed = context.get("seed")

    def write_document(path: Path, run_id: str) -> None:
        path.write_bytes(dumps(document))

    return SourceRecord(
        name=name, index=raw_episode, content_hash="sha256:" + digest.hexdigest(), attrs=attrs, num_samples=steps,
        success=status == "success", seed=context_seed if isinstance(context_seed, int) else None,
        task_id=str(row["task_name"]) if row["task_name"] is not None else None, instance_id=instance,
        fault=fault, runtime_s=float(elapsed) if elapsed is not None else None,
        runtime_clock="wall" if elapsed is not None else None, videos=videos,
        copy_to=write_document, copy_name=SOURCE_JSON_FILE,
        variant={"vla_eval": benchmark, "benchmark_seed": seed},
    )
