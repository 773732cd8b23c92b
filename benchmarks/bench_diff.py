"""``labrecord diff`` against ``labrecord score`` on one generated corpus.

Generates INSTANCES registered instances (a population with one checkpoint each), each run
by two systems (runs as in bench_score.py: opportunity/choice/confirm triples), ingests
them into one corpus file, then measures, in this one process:

* score — ``score_corpus`` with RESAMPLES bootstrap resamples (the baseline);
* diff  — ``diff_sources`` of the two systems over the same corpus (episodes paired by
          identity, paired tables, McNemar, Newcombe, paired bootstrap with RESAMPLES,
          attribution).

It prints diff time / score time (target < 1: a diff reads the same units once more and
pairs them in one pass).

    python benchmarks/bench_diff.py                     # 5,000 instances, 10,000 runs
    python benchmarks/bench_diff.py --instances 300     # quick check
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_score import run_records  # noqa: E402  (the same generated events as the score benchmark)

from labrecord.examples import example_manifest  # noqa: E402
from labrecord.rundir import EVENTS_FILE, OBSERVATIONS_FILE, RUN_FILE, RunDocument  # noqa: E402

_lines = msgspec.json.Encoder(order="sorted")
SYSTEMS = (("pi05", 0.6), ("groot-n1.5", 0.4))
POPULATION = "bench"


def generate(root: Path, instances: int, events_per_run: int, seed: int = 0) -> int:
    """Two runs per registered instance (one per system) and the registry; returns runs written."""
    rng = np.random.default_rng(seed)
    decisions = max(1, (events_per_run - 4) // 3)
    registry = []
    for index in range(instances):
        instance = f"i{index:06d}"
        registry += [{"type": "instance", "instance_id": instance},
                     {"type": "checkpoint", "instance_id": instance, "decision": "d0"}]
        for system, p_correct in SYSTEMS:
            run_id = f"{system}-{index:06d}"
            folder = root / run_id
            folder.mkdir(parents=True)
            manifest = example_manifest(run_id, system=system, kind="vla", seed=index, population=(POPULATION, instance))
            manifest.status = "complete"
            events, receipts, _ = run_records(rng, decisions, p_correct)
            (folder / RUN_FILE).write_bytes(RunDocument(manifest).to_bytes())
            (folder / EVENTS_FILE).write_bytes(_lines.encode_lines(events))
            (folder / OBSERVATIONS_FILE).write_bytes(_lines.encode_lines(receipts))
    (root / "populations").mkdir()
    (root / "populations" / f"{POPULATION}.jsonl").write_bytes(_lines.encode_lines(registry))
    return instances * len(SYSTEMS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=5_000)
    parser.add_argument("--events", type=int, default=40, help="events per run (approximate)")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()

    from labrecord.scorers.corpus import score_corpus
    from labrecord.scorers.diff import diff_sources
    from labrecord.store import connect, ingest_runs

    work = Path(tempfile.mkdtemp(prefix="bench-diff-"))
    try:
        start = time.perf_counter()
        runs = generate(work / "runs", args.instances, args.events)
        print(f"generated {runs} runs over {args.instances} instances in {time.perf_counter() - start:.1f} s")
        ingest_runs(work / "runs", work / "corpus.duckdb")
        con = connect(work / "corpus.duckdb")
        start = time.perf_counter()
        score_corpus(con, seed=0, resamples=args.resamples)
        score = time.perf_counter() - start
        start = time.perf_counter()
        result = diff_sources(con, con, where_a=lambda r: r["system_name"] == SYSTEMS[0][0],
                              where_b=lambda r: r["system_name"] == SYSTEMS[1][0], seed=0, resamples=args.resamples)
        diff = time.perf_counter() - start
        b_next = result["binary"]["B_next"]
        print(f"score ({args.resamples} resamples)  {score:7.2f} s")
        print(f"diff  ({args.resamples} resamples)  {diff:7.2f} s  ({result['pairs']['resolved']} pairs; B_next table "
              f"{b_next['both']}/{b_next['a_only']}/{b_next['b_only']}/{b_next['neither']}, McNemar p {b_next['mcnemar_p']:.3g})")
        print(f"diff time / score time = {diff / score:.2f}  (target < 1)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
