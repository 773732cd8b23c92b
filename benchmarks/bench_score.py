"""Ingest and score throughput on a generated corpus.

Generates RUNS run directories of about EVENTS events each (default 10,000 x 100 =
1,000,000 events), then measures, in this one process:

* bare   — DuckDB's own ``read_json`` of the same events and observation files into a table
           (auto-detected schema, no validation, no hashing): the baseline;
* ingest — ``labrecord.store.ingest_runs`` into a new corpus file (validation of every run,
           content hashes, typed columns, one transaction per batch), once with one
           validation process and once with the default, one per usable CPU (DuckDB's
           ``read_json`` also parses on every CPU);
* again  — re-ingesting the unchanged folder (hash comparison only);
* score  — ``score_corpus`` with 1,000 bootstrap resamples per metric.

It prints ingest/bare throughput (target >= 1.0) and score/ingest time (target <= 0.1).

    python benchmarks/bench_score.py                # 10,000 runs
    python benchmarks/bench_score.py --runs 500     # quick check
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import msgspec
import numpy as np

from labrecord.examples import example_manifest
from labrecord.models import Event, ObservationReceipt
from labrecord.rundir import EVENTS_FILE, OBSERVATIONS_FILE, RUN_FILE, RunDocument
from labrecord.safeio import canonical_json

_lines = msgspec.json.Encoder(order="sorted")


def _canonical(records: list[dict], kind: object) -> bytes:
    typed = msgspec.json.decode(_lines.encode(records), type=list[kind])  # type: ignore[valid-type]
    return b"".join(canonical_json(record) + b"\n" for record in typed)
SYSTEMS = (("pi05", 0.2), ("groot-n1.5", 0.18), ("gpt-driven", 0.95), ("scripted", 1.0))
WEIGHTS = ("w10", "w20", "w50", "w100")


def _op(weight: str) -> dict:
    return {"kind": "add", "object": weight, "dest": "pan"}


def run_records(rng: np.random.Generator, decisions: int, p_correct: float) -> tuple[list[dict], list[dict], bool]:
    """Events and receipts of one generated run: ``decisions`` opportunity/choice/confirm triples."""
    events: list[dict] = [{"seq": 0, "t": 0.0, "type": "episode_start", "episode": 0}]
    receipts: list[dict] = []
    t, all_correct = 0.0, True
    for k in range(decisions):
        right = WEIGHTS[int(rng.integers(4))]
        chosen = right if rng.random() < p_correct else WEIGHTS[int(rng.integers(4))]
        all_correct &= chosen == right
        receipts.append({"obs_id": f"obs{k}", "step": k * 10, "t_acquired": t, "t_delivered": t + 0.01, "evidence_version": k, "channels": ["front"]})
        seq = len(events)
        events += [
            {"seq": seq, "t": t, "type": "opportunity", "opp": f"o{k}", "decision": f"d{k % 3}", "trigger": "state_change",
             "legal": [_op(right)], "obs_id": f"obs{k}", "evidence_version": k, "window_s": 5.0},
            {"seq": seq + 1, "t": t + 0.5, "type": "choice", "opp": f"o{k}", "op": _op(chosen), "first": True},
            {"seq": seq + 2, "t": t + 1.5, "type": "confirm", "obligation": f"d{k % 3}", "op": _op(chosen), "predicate": "supported",
             "measured": {"load_g": 10.0}},
        ]
        t += 2.0
    complete = all_correct or rng.random() < 0.3
    seq = len(events)
    events += [{"seq": seq, "t": t, "type": "dwell", "state": "start"},
               {"seq": seq + 1, "t": t + 3.0, "type": "episode_end", "episode": 0, "reason": "success" if complete else "timeout",
                "physical_complete": complete, "valid_complete": complete}]
    return events, receipts, complete


def generate(root: Path, runs: int, events_per_run: int, seed: int = 0) -> int:
    """Write ``runs`` run directories directly (bulk bytes, no per-event fsync); returns events written."""
    rng = np.random.default_rng(seed)
    decisions = max(1, (events_per_run - 4) // 3)
    total = 0
    for index in range(runs):
        system, p_correct = SYSTEMS[index % len(SYSTEMS)]
        run_id = f"run-{index:06d}"
        folder = root / run_id
        folder.mkdir(parents=True)
        manifest = example_manifest(run_id, system=system, kind="vla", seed=index)
        manifest.status = "complete"
        events, receipts, _ = run_records(rng, decisions, p_correct)
        (folder / RUN_FILE).write_bytes(RunDocument(manifest).to_bytes())
        # each line as the run writer writes it: the typed record's canonical text
        (folder / EVENTS_FILE).write_bytes(_canonical(events, Event))
        (folder / OBSERVATIONS_FILE).write_bytes(_canonical(receipts, ObservationReceipt))
        total += len(events)
    return total


def bare_read(root: Path) -> float:
    import duckdb

    con = duckdb.connect(":memory:")
    start = time.perf_counter()
    con.execute(f"CREATE TABLE e AS SELECT * FROM read_json('{root}/*/events.jsonl', format='newline_delimited', union_by_name=true)")
    con.execute(f"CREATE TABLE o AS SELECT * FROM read_json('{root}/*/observations.jsonl', format='newline_delimited')")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100, help="events per run (approximate)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it (reused when it holds runs)")
    args = parser.parse_args()

    from labrecord.scorers.corpus import score_corpus
    from labrecord.store import connect, ingest_runs

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-score-"))
    runs_dir, db = work / "runs", work / "corpus.duckdb"
    try:
        db.unlink(missing_ok=True)
        if runs_dir.is_dir():
            n_events = sum(1 for p in runs_dir.glob("*/events.jsonl") for _ in p.open("rb"))
            print(f"reusing {runs_dir}: {n_events} events")
        else:
            start = time.perf_counter()
            n_events = generate(runs_dir, args.runs, args.events)
            print(f"generated {args.runs} runs, {n_events} events in {time.perf_counter() - start:.1f} s")

        from labrecord.parallel import usable_cpus

        bare = bare_read(runs_dir)
        # one validation process first (the ingest before it used every CPU), then the default
        start = time.perf_counter()
        ingest_runs(runs_dir, db, jobs=1)
        ingest_one = time.perf_counter() - start
        db.unlink()
        start = time.perf_counter()
        summary = ingest_runs(runs_dir, db)
        ingest = time.perf_counter() - start
        start = time.perf_counter()
        again = ingest_runs(runs_dir, db)
        reingest = time.perf_counter() - start
        con = connect(db)
        start = time.perf_counter()
        result = score_corpus(con, seed=0, resamples=args.resamples)
        score = time.perf_counter() - start

        print(f"bare read_json     {bare:8.2f} s  ({n_events / bare:,.0f} events/s)")
        print(f"labrecord ingest, 1 process  {ingest_one:8.2f} s  ({n_events / ingest_one:,.0f} events/s)")
        print(f"labrecord ingest, {usable_cpus()} processes (default) {ingest:8.2f} s  ({n_events / ingest:,.0f} events/s; "
              f"{len(summary.added)} runs added)")
        print(f"re-ingest, unchanged {reingest:6.2f} s  ({len(again.unchanged)} unchanged)")
        print(f"score ({args.resamples} resamples) {score:6.2f} s  ({len(result['groups'])} groups)")
        print(f"ingest throughput / bare read_json throughput = {bare / ingest:.2f}  (target >= 1.0; "
              f"one process: {bare / ingest_one:.2f})")
        print(f"score time / ingest time = {score / ingest:.2f}  (target <= 0.1)")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
