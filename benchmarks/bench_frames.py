"""labrecord.Corpus frames vs the same rows passed through Python.

Generates RUNS run directories of about EVENTS events each (default 2,000 x 100 = 200,000
events, the generator of bench_score.py), ingests them, then measures in this one process:

* rows   — ``fetchall()`` of ``SELECT * FROM events`` and a polars frame built from those
           Python tuples: the baseline, what a notebook gets without the Arrow path;
* corpus — ``labrecord.Corpus(db).events()``: DuckDB's Arrow output handed to polars.

It prints both times and rows / corpus (how many times faster the frame is; target > 1),
and checks that the two frames hold the same values.

    python benchmarks/bench_frames.py                # 2,000 runs
    python benchmarks/bench_frames.py --runs 200     # quick check
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_score import generate  # noqa: E402  (the corpus generator of the scoring benchmark)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2_000)
    parser.add_argument("--events", type=int, default=100, help="events per run (approximate)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many timings each")
    args = parser.parse_args()

    import polars as pl

    import labrecord
    from labrecord.store import ingest_runs

    work = Path(tempfile.mkdtemp(prefix="bench-frames-"))
    try:
        n_events = generate(work / "runs", args.runs, args.events)
        ingest_runs(work / "runs", work / "corpus.duckdb")
        with labrecord.Corpus(work / "corpus.duckdb") as corpus:
            query = "SELECT * FROM events ORDER BY run_id, seq"
            rows_s, corpus_s = float("inf"), float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                cursor = corpus.con.execute(query)
                names = [d[0] for d in cursor.description]
                baseline = pl.DataFrame(cursor.fetchall(), schema=names, orient="row", infer_schema_length=None)
                rows_s = min(rows_s, time.perf_counter() - start)
                start = time.perf_counter()
                frame = corpus.events()
                corpus_s = min(corpus_s, time.perf_counter() - start)
        same = frame.select("run_id", "seq", "type", "t").equals(baseline.select("run_id", "seq", "type", "t"))
        print(f"{n_events:,} events, {len(frame.columns)} columns")
        print(f"rows through Python  {rows_s:8.3f} s  ({n_events / rows_s:,.0f} events/s)")
        print(f"Corpus.events()      {corpus_s:8.3f} s  ({n_events / corpus_s:,.0f} events/s)")
        print(f"rows / corpus = {rows_s / corpus_s:.1f}  (target > 1); same values: {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
