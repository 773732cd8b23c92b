"""Validation throughput against the bare JSON decode of the same lines.

Generates a corpus of runs (default 1,000 runs x 1,000 events = 1,000,000 events) through
the real RunWriter, then times, in one process and on the same files:

* ``labrecord`` validation of the whole folder (typed decode, every rule, cross-file checks);
* the bare decode of every line with the standard library's ``json.loads``;
* the bare untyped decode with ``msgspec.json.decode`` (the fastest parse available).

Run:  python benchmarks/bench_validate.py [--runs 1000] [--events-per-run 1000]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import msgspec

from labrecord.examples import example_manifest
from labrecord.models import Choice, Confirm, Dwell, EpisodeEnd, EpisodeStart, ObservationReceipt, Operation, Opportunity
from labrecord.rundir import RunWriter
from labrecord.validation import validate_paths

LEGAL = [Operation("add", "w20", "pan"), Operation("remove", "w50", "pan")]


def generate(root: Path, runs: int, events_per_run: int) -> int:
    """Write ``runs`` runs whose logs hold ``events_per_run`` events each; return the total."""
    total = 0
    per_opportunity = 3
    for r in range(runs):
        with RunWriter.create(root, example_manifest(f"run{r:05d}", seed=r)) as run:
            run.emit(EpisodeStart, t=0.0, episode=0)
            t, k = 0.0, 0
            while run.next_seq < events_per_run - 1 - per_opportunity + 1:
                obs_id = f"obs{k}"
                run.observation(ObservationReceipt(obs_id=obs_id, step=k, t_acquired=t, t_delivered=t + 0.01, evidence_version=k))
                run.emit(Opportunity, t=t, opp=f"o{k}", decision=f"d{k % 7}", trigger="state_change", legal=LEGAL,
                         obs_id=obs_id, evidence_version=k, window_s=5.0)
                run.emit(Choice, t=t + 0.1, opp=f"o{k}", op=LEGAL[k % 2], recognizer="grasp-lift", first=True)
                run.emit(Confirm, t=t + 0.2, obligation=f"d{k % 7}", op=LEGAL[k % 2], predicate="supported",
                         measured={"load_g": 20.0, "speed": 0.001})
                t += 0.5
                k += 1
            while run.next_seq < events_per_run - 1:  # pad to the exact size with terminal-dwell events
                run.emit(Dwell, t=t, state="start" if run.next_seq % 2 else "reset")
            run.emit(EpisodeEnd, t=t, episode=0, reason="timeout", physical_complete=False, valid_complete=False)
            total += run.next_seq
    return total


def bare_decode(root: Path, decode: object) -> int:
    count = 0
    for path in sorted(root.glob("*/events.jsonl")):
        for line in path.read_bytes().splitlines():
            decode(line)  # type: ignore[operator]
            count += 1
    return count


def timed(func: object, *args: object) -> tuple[float, object]:
    start = time.perf_counter()
    result = func(*args)  # type: ignore[operator]
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--events-per-run", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        gen_s, total = timed(generate, root, args.runs, args.events_per_run)
        print(f"corpus: {args.runs} runs, {total:,} events (generated through RunWriter in {gen_s:.1f} s)")
        bare_json_s, n_json = timed(bare_decode, root, json.loads)
        bare_msgspec_s, _ = timed(bare_decode, root, msgspec.json.decode)
        validate_s, report = timed(validate_paths, [root])
        assert report.ok, report.errors[:3]  # type: ignore[attr-defined]
        rows = [("labrecord validate (typed, all rules)", validate_s),
                ("bare json.loads of every line", bare_json_s),
                ("bare msgspec.json.decode (untyped)", bare_msgspec_s)]
        for name, seconds in rows:
            print(f"{name:40s} {seconds:7.2f} s  {n_json / seconds:12,.0f} events/s")
        print(f"ratio validation / bare json.loads throughput:  {bare_json_s / validate_s:.2f}")
        print(f"ratio validation / bare msgspec throughput:     {bare_msgspec_s / validate_s:.2f}  (target >= 0.5)")


if __name__ == "__main__":
    main()
