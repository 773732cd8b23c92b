"""Judge results per system (RxnMiner appendix D.1, Table 7), from the judge tables.

Judgment records (``labrecord.judgment/1``, written by :mod:`.judge_runner`) go into
``rxn_judgments`` and ``rxn_judge_attempts`` (declared in :mod:`labrecord.store.schema`).
For each (system, judge model, rubric version), with N the figures run (every record,
valid or failed) and V those with a valid judgment:

- **categories** — mean over V of each image-level category score, skipping figures where
  the category applies to no reference reaction (null when it applies nowhere);
  ``conditions`` is the mean of the condition-molecule and condition-text means (of the
  one that exists when only one does);
- **RP** — mean over V of the judge's reaction precision, strict and stereo-blind;
- **RR** — rule-based reaction recall, *not* a judged value: per figure
  matched / gold reactions from the reaction scorer (:mod:`labrecord.scorers.reaction`,
  zero for a failed run), averaged over all N figures run;
- **RF1** — mean over V of per-figure F1 = 2 RP_f RR_f / (RP_f + RR_f) (0 when both are
  0), strict with strict, stereo-blind with stereo-blind;
- **Overall** — mean over V of the overall image score;
- **coverage** — V / N, with both counts.

A mean over no figure is null, never 0.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labrecord.errors import LabrecordError

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

CATEGORY_COLUMNS = ("reactants", "products", "condition_molecules", "condition_text", "yield", "selectivity")


def load_judgments(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Judgment records from a file or a folder (searched recursively for ``.json``)."""
    from labrecord.chemdata.judge_runner import JUDGMENT_SCHEMA

    root = Path(path)
    files = [root] if root.is_file() else sorted(root.rglob("*.json")) if root.is_dir() else None
    if files is None:
        raise LabrecordError(f"{root}: no such file or folder")
    records = []
    for file in files:
        try:
            record = json.loads(file.read_bytes())
        except (ValueError, UnicodeDecodeError) as error:
            raise LabrecordError(f"{file}: not a judgment record: not JSON: {error}") from error
        if not isinstance(record, dict) or record.get("schema") != JUDGMENT_SCHEMA:
            found = record.get("schema") if isinstance(record, dict) else type(record).__name__
            raise LabrecordError(f"{file}: not a judgment record: schema {found!r}, expected {JUDGMENT_SCHEMA!r}")
        for key in ("system", "figure_id", "judge_model", "rubric_version", "status"):
            if not isinstance(record.get(key), str):
                raise LabrecordError(f"{file}: judgment record field {key!r} is {record.get(key)!r}, expected text")
        if record["status"] not in ("valid", "failed"):
            raise LabrecordError(f"{file}: judgment status {record['status']!r}, expected 'valid' or 'failed'")
        if record["status"] == "valid" and not isinstance(record.get("judgment"), dict):
            raise LabrecordError(f"{file}: a valid judgment record without its judgment object")
        records.append(record)
    return records


def _judgment_row(r: dict[str, Any]) -> tuple[Any, ...]:
    j = r.get("judgment") if r["status"] == "valid" else None
    j = j or {}
    image = j.get("image_category_scores") or {}
    precision = j.get("reaction_precision") or {}
    rule = r.get("rule_based") or {}
    return (r["system"], r["figure_id"], r["judge_model"], r["rubric_version"], r["status"], r.get("origin", "judge"),
            r.get("error"), r.get("run_status"), len(r.get("attempts") or []), r.get("endpoint"), r.get("judged_at"),
            j.get("gt_reaction_count"), j.get("prediction_reaction_count_raw"),
            *(image.get(c) for c in CATEGORY_COLUMNS),
            j.get("unadjusted_image_score"), (j.get("count_assessment") or {}).get("count_adjustment_factor"),
            j.get("overall_score"), precision.get("strict_stereo"), precision.get("nonstereo"),
            rule.get("n_gold"), rule.get("n_pred"), rule.get("matched_strict"), rule.get("matched_nonstereo"),
            json.dumps(r.get("inputs")), json.dumps(j) if j else None)


def _attempt_rows(r: dict[str, Any]) -> list[tuple[Any, ...]]:
    request = json.dumps(r.get("request")) if r.get("request") is not None else None
    return [(r["system"], r["figure_id"], r["judge_model"], r["rubric_version"], a.get("attempt"), a.get("http_status"),
             a.get("error"), list(a.get("findings") or []), a.get("response"), request) for a in r.get("attempts") or []]


def _insert(con: DuckDBPyConnection, spec: Any, rows: Sequence[tuple[Any, ...]]) -> None:
    import pyarrow as pa

    if not rows:
        return
    names = [c.name for c in spec.columns]
    con.register("_judge_rows", pa.table({name: list(col) for name, col in zip(names, zip(*rows))}))
    try:
        columns = ", ".join(f'"{n}"' for n in names)
        casts = ", ".join(f'CAST("{c.name}" AS {c.type.replace(" NOT NULL", "")})' for c in spec.columns)
        con.execute(f"INSERT INTO {spec.name} ({columns}) SELECT {casts} FROM _judge_rows")
    finally:
        con.unregister("_judge_rows")


def ingest_judgments(con: DuckDBPyConnection, records: Sequence[dict[str, Any]]) -> int:
    """Store records (replacing any with the same system, figure, model and rubric)."""
    import pyarrow as pa

    from labrecord.store.schema import RXN_JUDGE_ATTEMPTS, RXN_JUDGMENTS, create_judge_tables

    create_judge_tables(con)
    if not records:
        return 0
    keys = pa.table({name: [r[name] for r in records] for name in ("system", "figure_id", "judge_model", "rubric_version")})
    con.register("_judge_keys", keys)
    try:
        for table in ("rxn_judgments", "rxn_judge_attempts"):
            con.execute(f"DELETE FROM {table} t USING _judge_keys k WHERE t.system = k.system AND t.figure_id = k.figure_id "
                        "AND t.judge_model = k.judge_model AND t.rubric_version = k.rubric_version")
    finally:
        con.unregister("_judge_keys")
    _insert(con, RXN_JUDGMENTS, [_judgment_row(r) for r in records])
    _insert(con, RXN_JUDGE_ATTEMPTS, [row for r in records for row in _attempt_rows(r)])
    return len(records)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _recall(matched: int | None, n_gold: int | None) -> float:
    return (matched or 0) / n_gold if n_gold else 0.0


def summarize_group(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Table 7's columns for the rows of one (system, judge model, rubric version)."""
    valid = [r for r in rows if r["status"] == "valid"]
    categories = {c: _mean([r[c] for r in valid]) for c in CATEGORY_COLUMNS}
    categories["conditions"] = _mean([categories["condition_molecules"], categories["condition_text"]])
    out: dict[str, Any] = {"categories": categories}
    for variant, rp_key in (("strict", "rp_strict"), ("nonstereo", "rp_nonstereo")):
        matched = f"rule_matched_{variant}"
        out.setdefault("rp", {})[variant] = _mean([r[rp_key] for r in valid])
        out.setdefault("rr", {})[variant] = _mean([_recall(r[matched], r["rule_n_gold"]) for r in rows])
        out.setdefault("rf1", {})[variant] = _mean([_f1(r[rp_key] or 0.0, _recall(r[matched], r["rule_n_gold"])) for r in valid])
    out["overall"] = _mean([r["overall"] for r in valid])
    out["coverage"] = {"valid": len(valid), "run": len(rows), "value": len(valid) / len(rows) if rows else None}
    out["origins"] = {o: sum(1 for r in valid if r["origin"] == o) for o in sorted({r["origin"] for r in valid})}
    out["failed"] = [{"figure_id": r["figure_id"], "error": r["error"]} for r in rows if r["status"] != "valid"]
    return out


def judge_stats(con: DuckDBPyConnection, system: str | None = None) -> dict[str, Any]:
    """``{"groups": [{"system", "judge_model", "rubric_version", "figures", "categories",
    "rp", "rr", "rf1", "overall", "coverage", "origins", "failed"}]}`` from the corpus."""
    from labrecord.store.schema import create_judge_tables

    create_judge_tables(con)
    cursor = con.execute("SELECT * FROM rxn_judgments WHERE $system IS NULL OR system = $system "
                         "ORDER BY system, judge_model, rubric_version, figure_id", {"system": system})
    names = [d[0] for d in cursor.description]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for values in cursor.fetchall():
        row = dict(zip(names, values))
        groups.setdefault((row["system"], row["judge_model"], row["rubric_version"]), []).append(row)
    return {"groups": [{"system": s, "judge_model": m, "rubric_version": v, "figures": len(rows), **summarize_group(rows)}
                       for (s, m, v), rows in groups.items()]}


def stats_for_path(path: str | os.PathLike[str] | None, db: str | None = None, system: str | None = None) -> dict[str, Any]:
    """Ingest the judgment records under ``path`` (into ``db``, or in memory) and summarize."""
    from labrecord.store import connect

    if path is None and (db is None or not Path(db).is_file()):
        raise LabrecordError(f"{db}: no such corpus file (store judgments with 'labrecord rxn judge-stats JUDGMENTS/ --db {db}')")
    records = load_judgments(path) if path is not None else []
    con = connect(db, locked=True)
    try:
        ingest_judgments(con, records)
        return judge_stats(con, system)
    finally:
        con.close()
