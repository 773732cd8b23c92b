"""Ingest and score at growing corpus sizes: is the time linear, what is the peak memory?

For each size N (default 3,000, 30,000 and 100,000 generated runs of about 100 events,
written as :mod:`bench_score` writes them), each step runs in a fresh process, so its peak
resident memory is its own (``ru_maxrss``):

* bare   — DuckDB's own ``read_json`` of the events and observation files (the baseline of
           ``bench_score.py``; only up to ``--bare-up-to`` runs, it reads every file again);
* ingest — ``ingest_runs`` into a new corpus file;
* score  — ``score_corpus`` of that corpus (``--resamples`` bootstrap resamples per metric).

It prints one row per size: seconds, runs per second, the time per run relative to the
smallest size (1.00 everywhere is linear), peak memory, ingest/bare throughput (target
>= 1.0) and score/ingest time (target <= 0.1), and writes them as JSON with ``--json``.

    python benchmarks/bench_scale.py --keep /big/disk/scale          # 3k, 30k, 100k
    python benchmarks/bench_scale.py --sizes 1000,3000               # quick check
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _step(step: str, runs_dir: Path, db: Path, resamples: int) -> dict[str, float]:
    """One step in this process: its wall time and this process's peak resident memory."""
    start = time.perf_counter()
    if step == "bare":
        sys.path.insert(0, str(HERE))
        from bench_score import bare_read

        seconds = bare_read(runs_dir)
    elif step == "ingest":
        from labrecord.store import ingest_runs

        summary = ingest_runs(runs_dir, db)
        if summary.skipped:
            raise SystemExit(f"{len(summary.skipped)} generated run(s) refused: {next(iter(summary.skipped.items()))}")
        seconds = time.perf_counter() - start
    else:
        from labrecord.scorers.corpus import score_corpus
        from labrecord.store import connect

        con = connect(db)
        start = time.perf_counter()
        score_corpus(con, seed=0, resamples=resamples)
        seconds = time.perf_counter() - start
    # ru_maxrss is in KiB on Linux
    return {"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _in_child(step: str, runs_dir: Path, db: Path, resamples: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--step", step, "--runs-dir", str(runs_dir), "--db", str(db),
                          "--resamples", str(resamples)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="3000,30000,100000", help="run counts, comma-separated")
    parser.add_argument("--events", type=int, default=100, help="events per run (approximate)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--bare-up-to", type=int, default=30_000, help="time read_json only up to this many runs")
    parser.add_argument("--keep", type=Path, help="generate into this folder (runs-N) and keep it; reused when present")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--step", choices=("bare", "ingest", "score"), help=argparse.SUPPRESS)
    parser.add_argument("--runs-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        print(json.dumps(_step(args.step, args.runs_dir, args.db, args.resamples)))
        return

    sys.path.insert(0, str(HERE))
    from bench_score import generate

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    rows = []
    try:
        for size in sorted(int(s) for s in args.sizes.split(",")):
            runs_dir, db = work / f"runs-{size}", work / f"corpus-{size}.duckdb"
            if not runs_dir.is_dir():
                generate(runs_dir, size, args.events)
            db.unlink(missing_ok=True)
            events = sum(1 for p in runs_dir.glob("*/events.jsonl") for _ in p.open("rb"))
            row: dict[str, float | int | None] = {"runs": size, "events": events, "bare_s": None}
            if size <= args.bare_up_to:
                row["bare_s"] = _in_child("bare", runs_dir, db, args.resamples)["seconds"]
            ingest = _in_child("ingest", runs_dir, db, args.resamples)
            score = _in_child("score", runs_dir, db, args.resamples)
            row.update(ingest_s=ingest["seconds"], ingest_peak_mb=ingest["peak_mb"], score_s=score["seconds"],
                       score_peak_mb=score["peak_mb"], corpus_mb=db.stat().st_size / 2**20)
            rows.append(row)
            print(f"{size} runs done: {json.dumps(row)}", flush=True)
            if args.keep is None:
                shutil.rmtree(runs_dir, ignore_errors=True)
                db.unlink(missing_ok=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)

    base = rows[0]
    print(f"{'runs':>7} {'events':>10} {'ingest s':>9} {'runs/s':>7} {'vs linear':>9} {'peak MB':>8} "
          f"{'score s':>8} {'vs linear':>9} {'peak MB':>8} {'score/ingest':>12} {'ingest/bare':>11}")
    for row in rows:
        scale = row["runs"] / base["runs"]
        ratio = f"{row['bare_s'] / row['ingest_s']:11.2f}" if row["bare_s"] else f"{'-':>11}"
        print(f"{row['runs']:>7} {row['events']:>10} {row['ingest_s']:9.1f} {row['runs'] / row['ingest_s']:7.0f} "
              f"{row['ingest_s'] / (base['ingest_s'] * scale):9.2f} {row['ingest_peak_mb']:8.0f} {row['score_s']:8.1f} "
              f"{row['score_s'] / (base['score_s'] * scale):9.2f} {row['score_peak_mb']:8.0f} "
              f"{row['score_s'] / row['ingest_s']:12.2f} {ratio}")
    print("targets: ingest/bare >= 1.0, score/ingest <= 0.1, peak <= 2048 MB at 100,000 runs; "
          "'vs linear' is time per run over that of the smallest size")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
