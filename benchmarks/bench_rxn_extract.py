"""Render known reactions, extract them back, score them; time the executors.

Accuracy: macro reaction F1 (strict and stereo-blind) of ``labrecord rxn extract`` on
figures drawn by ``labrecord rxn render`` from ``benchmarks/rxn_corpus.smi``, with the
per-stage failure counts.  Speed: wall time of ``--workers N`` (and optionally Ray) as a
ratio against ``--workers 1`` measured in the same run on the same figures.

    python benchmarks/bench_rxn_extract.py --figures 6            # quick
    python benchmarks/bench_rxn_extract.py --workers 2 --ray      # the whole corpus
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from labrecord.chemdata.extract.runner import ExtractConfig, run_extraction
from labrecord.chemdata.render import render
from labrecord.chemdata.scoring import score_paths

CORPUS = Path(__file__).with_name("rxn_corpus.smi")


def corpus_subset(figures: int | None, folder: Path) -> Path:
    """The first ``figures`` reaction lines of the corpus (all when None)."""
    lines = [ln for ln in CORPUS.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    path = folder / "reactions.smi"
    path.write_text("\n".join(lines[:figures] if figures else lines) + "\n")
    return path


def timed_run(figures: Path, out: Path, **kwargs: object) -> tuple[float, dict]:
    began = time.perf_counter()
    summary = run_extraction(figures, out, ExtractConfig(), **kwargs)  # type: ignore[arg-type]
    return time.perf_counter() - began, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=int, default=None, help="use the first N corpus lines (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="also time --executor ray (local instance)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        figures = root / "figures"
        render(corpus_subset(args.figures, root), figures)
        base_s, summary = timed_run(figures, root / "w1")
        pool_s, _ = timed_run(figures, root / "pool", workers=args.workers)
        rows = [("workers 1 (baseline)", base_s, 1.0), (f"workers {args.workers}", pool_s, base_s / pool_s)]
        if args.ray:
            import ray

            ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
            ray_s, _ = timed_run(figures, root / "ray", executor="ray")
            ray.shutdown()
            rows.append((f"ray ({args.workers} cpus)", ray_s, base_s / ray_s))
        (scores,) = score_paths(str(figures), [str(root / "w1")]).values()
    print(f"figures: {summary['figures']}  status: {summary['status']}  reactions: {summary['reactions']}")
    print(f"macro reaction F1 strict {scores['macro']['strict']['f1']:.3f}  "
          f"stereo-blind {scores['macro']['nonstereo']['f1']:.3f}  "
          f"(P {scores['macro']['strict']['precision']:.3f}, R {scores['macro']['strict']['recall']:.3f})")
    print("failures per stage:", json.dumps(summary["stage_failures"]))
    print("failure kinds:", json.dumps(summary["failure_kinds"]))
    for name, seconds, speedup in rows:
        print(f"{name:24s} {seconds:7.2f} s   speed-up x{speedup:.2f} vs workers 1")


if __name__ == "__main__":
    main()
