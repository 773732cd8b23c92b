"""Replay-audit throughput in physics steps per second, against the bare Parquet read.

Writes ``--runs`` constructed weighing runs of ``--seconds`` simulated seconds each at
``--hz`` (through the online tracker and RunWriter, like a recorder), then measures in
the same process:

* baseline: ``pyarrow.parquet.read_table`` of every run's ``measurements.parquet``;
* audit: ``labrecord.scorers.audit.audit_run`` of every run (reads the same file, replays
  the contract, compares with the events);
* online rows: the tracker stepping the same rows one at a time (``Tracker.step``);
* online blocks: the recorder's scorer (``ContractScorer``) fed the same rows in blocks
  of ``--block`` rows (one control period: 50 at 500 Hz physics, 10 Hz control), with an
  observation offered after each block as the step owner does.

Prints steps/s for each, the audit's throughput as a fraction of the bare read's (the
target is >= 0.25: the audit at least a quarter as fast as reading the same files) and
the ratios online/audit.

Example:
    python benchmarks/bench_audit.py --runs 4 --seconds 20     # quick
    python benchmarks/bench_audit.py --skip-online-rows        # the audit ratio only
    python benchmarks/bench_audit.py                            # 10 runs × 60 s at 500 Hz
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def build_runs(root: Path, runs: int, seconds: float, hz: float) -> tuple[list[Path], list[list[dict]]]:
    """Constructed weighing episodes: remove/add cycles, then the correct standard."""
    from labrecord.examples import example_manifest
    from labrecord.scorers.contracts import get_contract
    from labrecord.scorers.contracts.streams import WeighingStream, record_run
    from labrecord.scorers.contracts.weighing import WeighingInstance

    contract = get_contract("weighing")
    dirs, streams = [], []
    for k in range(runs):
        inst = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}), f_empty_n=1.0)
        s = WeighingStream(inst, hz=hz).hold(1.5)
        while s.t < seconds - 10.0:
            s.set(grasped={"w20"}, speed=0.1).hold(0.4).set(grasped=set(), on_pan={"w20"}, speed=0.0).hold(2.5)
            s.set(grasped={"w20"}, speed=0.1).hold(0.4).set(grasped=set(), on_pan=set(), speed=0.0).hold(2.5)
        s.set(grasped={"w50"}, speed=0.1).hold(0.4).set(grasped=set(), on_pan={"w50"}, speed=0.0)
        s.hold(max(seconds - s.t, 5.0))
        manifest = example_manifest(f"bench-{k:04d}")
        manifest.task.variant = inst.variant()
        dirs.append(record_run(root, manifest, contract, inst, s.rows))
        streams.append(s.rows)
    return dirs, streams


def block_list(rows: list[dict], size: int) -> list[dict]:
    """Rows as column blocks of ``size`` rows (numpy arrays, as a simulator hands them over)."""
    from labrecord.scorers.contracts.streams import rows_table

    table = rows_table(rows)
    arrays = {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}
    return [{name: values[a:a + size] for name, values in arrays.items()} for a in range(0, table.num_rows, size)]


def online_blocks(contract, inst, blocks: list[dict]) -> None:
    """The recorder's scorer over one episode's blocks, offering an observation after each."""
    from labrecord.recorders.online import ContractScorer
    from labrecord.recorders.policy import Observation

    scorer = ContractScorer(contract, inst)
    scorer.start(lambda kind, **fields: None, 0.0)
    for k, block in enumerate(blocks):
        scorer.update(block)
        scorer.offer(Observation(obs_id=f"obs{k}", step=int(block["step"][-1]), t=float(block["t"][-1]),
                                 evidence_version=scorer.evidence_version, instruction=""))


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0, help="simulated seconds per run")
    parser.add_argument("--hz", type=float, default=500.0, help="physics rate of the measurements")
    parser.add_argument("--repeat", type=int, default=3, help="timing repetitions (best of)")
    parser.add_argument("--block", type=int, default=50, help="rows per online block (one control period)")
    parser.add_argument("--skip-online-rows", action="store_true",
                        help="do not time the online tracker row by row (minutes at the default size)")
    args = parser.parse_args()

    import pyarrow.parquet as pq

    from labrecord import parallel
    from labrecord.scorers.audit import audit_run
    from labrecord.scorers.contracts import get_contract
    from labrecord.scorers.contracts.weighing import WeighingInstance

    with tempfile.TemporaryDirectory() as tmp:
        dirs, streams = build_runs(Path(tmp), args.runs, args.seconds, args.hz)
        steps = sum(len(rows) for rows in streams)
        for run_dir in dirs:  # fail loudly rather than time a broken audit
            result = audit_run(run_dir)
            assert result.ok, [str(f) for f in result.findings]

        read_s = best_of(args.repeat, lambda: [pq.read_table(d / "measurements.parquet") for d in dirs])
        audit_s = best_of(args.repeat, lambda: [audit_run(d) for d in dirs])
        # what a corpus audit does (scorers.corpus.audit_corpus): the runs on one process per
        # usable CPU, the pool's start included
        workers = parallel.usable_cpus()
        pool_s = best_of(args.repeat, lambda: list(parallel.map(audit_run, dirs, workers=workers)))
        contract = get_contract("weighing")
        inst = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}), f_empty_n=1.0)

        def online() -> None:
            for rows in streams:
                tracker = contract.tracker(inst)
                for row in rows:
                    tracker.step(row)

        online_s = None if args.skip_online_rows else best_of(1, online)
        blocks = [block_list(rows, args.block) for rows in streams]
        blocks_s = best_of(args.repeat, lambda: [online_blocks(contract, inst, b) for b in blocks])

    print(f"weighing runs: {args.runs} × {args.seconds:g} s at {args.hz:g} Hz = {steps} physics steps")
    print(f"  bare Parquet read : {steps / read_s:14,.0f} steps/s  ({read_s * 1e3:8.1f} ms)")
    print(f"  replay audit      : {steps / audit_s:14,.0f} steps/s  ({audit_s * 1e3:8.1f} ms)")
    if online_s is not None:
        print(f"  online, row by row: {steps / online_s:14,.0f} steps/s  ({online_s * 1e3:8.1f} ms)")
    print(f"  online, blocks of {args.block:<3d}: {steps / blocks_s:11,.0f} steps/s  ({blocks_s * 1e3:8.1f} ms, "
          f"{blocks_s / steps * 1e6:.2f} µs per step)")
    print(f"  replay audit, {workers} processes: {steps / pool_s:10,.0f} steps/s  ({pool_s * 1e3:8.1f} ms, pool start included)")
    print(f"  audit throughput / bare read (time ratio read/audit): {read_s / audit_s:5.2f}  (target >= 0.25); "
          f"on {workers} processes: {read_s / pool_s:.2f}")
    print(f"  ratio audit / bare read time         : {audit_s / read_s:6.1f}x")
    if online_s is not None:
        print(f"  ratio online rows / audit time       : {online_s / audit_s:6.1f}x")
    print(f"  ratio online blocks / audit time     : {blocks_s / audit_s:6.1f}x")


if __name__ == "__main__":
    main()
