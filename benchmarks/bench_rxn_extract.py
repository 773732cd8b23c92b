"""Reaction extraction on real literature figures: F1 per figure and overall, readers, s/figure.

Runs the extraction runner on the development set (``tests/data/real_figures``, gold in
its ``gold.txt``) and scores it with the project scorer: macro reaction F1 (strict and
stereo-blind), failures counted per stage and seconds per figure.  The main run reads
structures with osra and DECIMER (when the ``[ocsr]`` extra is installed; else osra
alone, said on the first line); the baseline measured in the same run is the osra-only
runner (``--baseline osra-only``, the default), or recognition as it was before the
abbreviation tables and multi-scale reading (``single-reading``), or crops read as drawn
(``as-drawn``).  The per-figure table gives gold, predicted, matched strict and
stereo-blind, both F1s, the figure's seconds, which reader produced the kept molecules
(``osra:N decimer:N``, from each molecule's provenance) and the status.  DECIMER's model
load is paid once per process and reported apart (it is not in any figure's seconds).

    python benchmarks/bench_rxn_extract.py                  # the whole set, both runs
    python benchmarks/bench_rxn_extract.py --figures 5      # the first five figures
    python benchmarks/bench_rxn_extract.py --only triazoloquinazolinone-scope
    python benchmarks/bench_rxn_extract.py --no-baseline --workers 2
    python benchmarks/bench_rxn_extract.py --baseline single-reading
    python benchmarks/bench_rxn_extract.py --rendered 6     # also: figures the project draws itself
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from labrecord.chemdata.extract import decimer, devset, readers
from labrecord.chemdata.extract.runner import ExtractConfig, run_extraction
from labrecord.chemdata.scoring import score_paths

CORPUS = Path(__file__).with_name("rxn_corpus.smi")


def subset(figures: int | None, folder: Path, only: list[str] | None = None) -> Path:
    """The first ``figures`` development-set images (all when None), or those named in
    ``only``, copied into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = sorted(devset.image_paths().values())
    if only:
        paths = [p for p in paths if p.stem in only]
    for path in paths[:figures]:
        shutil.copy(path, folder / path.name)
    return folder


def run(figures: Path, gold: Path, out: Path, config: ExtractConfig, workers: int) -> dict:
    began = time.perf_counter()
    summary = run_extraction(figures, out, config, workers=workers)
    seconds = time.perf_counter() - began - model_load(out)
    (scores,) = score_paths(str(gold), [str(out)]).values()
    return {"seconds": seconds, "figures": summary["figures"], "summary": summary, "scores": scores,
            "load_s": model_load(out)}


def model_load(out: Path) -> float:
    """Seconds the run's processes spent loading DECIMER (``reader_load`` events)."""
    total = 0.0
    for path in (out / "trajectories").glob("*.ndjson"):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event.get("kind") == "reader_load":
                total += float(event.get("elapsed_s", 0.0))
    return total


def kept_readers(document: dict) -> str:
    """``osra:N decimer:N``: which reader produced each kept molecule (reactants, products)."""
    counts: dict[str, int] = {}
    for reaction in document.get("reactions", []):
        for molecule in reaction.get("reactants", []) + reaction.get("products", []):
            reader = (molecule.get("provenance") or {}).get("reader") or "-"
            counts[reader] = counts.get(reader, 0) + 1
    return " ".join(f"{k}:{v}" for k, v in sorted(counts.items())) or "-"


BASELINES = {
    "osra-only": ExtractConfig(readers=("osra",)),
    "single-reading": ExtractConfig(multiscale=False, osra_dictionaries=False, readers=("osra",)),
    "as-drawn": ExtractConfig(target_bond=None, readers=("osra",)),
}


def per_figure(result: dict, out: Path) -> None:
    """One line per figure: gold, predicted, matched (strict, blind), both F1s, seconds,
    the readers of the kept molecules, status (failed stage)."""
    print(f"  {'figure':32s} {'gold':>4s} {'pred':>4s} {'strict':>6s} {'blind':>5s} {'F1 str':>6s} {'F1 bl':>6s} "
          f"{'s':>6s}  {'readers':18s} status (stage)")
    for row in result["scores"]["per_figure"]:
        pred, gold, blind, strict = row["n_pred"], row["n_gold"], row["matched_nonstereo"], row["matched_strict"]
        f1 = 2 * blind / (pred + gold) if pred + gold else 0.0
        f1_strict = 2 * strict / (pred + gold) if pred + gold else 0.0
        document = json.loads((out / f"{row['figure_id']}.json").read_text())
        stage = document.get("extra", {}).get("failed_stage")
        print(f"  {row['figure_id']:32s} {gold:4d} {pred:4d} {strict:6d} {blind:5d} {f1_strict:6.3f} {f1:6.3f} "
              f"{document['timing']['wall_s']:6.1f}  {kept_readers(document):18s} "
              f"{document['status']}{f' ({stage})' if stage else ''}")


def show(name: str, result: dict) -> None:
    macro = result["scores"]["macro"]
    summary = result["summary"]
    print(f"{name}: {result['figures']} figures in {result['seconds']:.1f} s "
          f"({result['figures'] / result['seconds']:.3f} figures/s, {result['seconds'] / result['figures']:.1f} s/figure)")
    print(f"  macro reaction F1 strict {macro['strict']['f1']:.3f} (P {macro['strict']['precision']:.3f}, "
          f"R {macro['strict']['recall']:.3f})  stereo-blind {macro['nonstereo']['f1']:.3f}")
    print(f"  status {json.dumps(summary['status'])}  reactions {summary['reactions']}")
    print(f"  failures per stage {json.dumps(summary['stage_failures'])}")
    print(f"  failure kinds {json.dumps(summary['failure_kinds'])}")
    if result["load_s"]:
        print(f"  DECIMER model load (once per process, not in the seconds above): {result['load_s']:.1f} s")


def rendered_check(count: int, root: Path) -> None:
    """The easy end: figures drawn by ``labrecord rxn render`` (a unit-level sanity figure)."""
    from labrecord.chemdata.render import render

    lines = [ln for ln in CORPUS.read_text().splitlines() if ln.strip() and not ln.startswith("#")][:count]
    (root / "rendered.smi").write_text("\n".join(lines) + "\n")
    render(root / "rendered.smi", root / "rendered")
    result = run(root / "rendered", root / "rendered", root / "rendered-out", ExtractConfig(), 1)
    show("rendered figures (not a literature measure)", result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=int, default=None, help="use the first N development figures (default: all)")
    parser.add_argument("--only", nargs="+", default=None, metavar="FIGURE_ID", help="use these development figures")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--target-bond", type=float, default=ExtractConfig().target_bond)
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline run")
    parser.add_argument("--baseline", choices=sorted(BASELINES), default="osra-only",
                        help="the runner compared against in the same run (default: osra alone)")
    parser.add_argument("--rendered", type=int, default=0, help="also run N rendered corpus figures")
    parser.add_argument("--keep", type=Path, default=None, help="copy the records here for inspection")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        figures = subset(args.figures, root / "figures", args.only)
        gold = root / "gold"
        ids = {p.stem for p in figures.iterdir()}
        for path in devset.write_gold(gold):
            if path.stem not in ids:
                path.unlink()
        chosen = readers.default_readers()
        if "decimer" not in chosen:
            print(f"note: osra only ({decimer.missing_reason()})")
        result = run(figures, gold, root / "out", ExtractConfig(target_bond=args.target_bond, readers=chosen), args.workers)
        show(f"pipeline ({','.join(chosen)}; target bond {args.target_bond:g} px)", result)
        per_figure(result, root / "out")
        if not args.no_baseline:
            baseline = run(figures, gold, root / "baseline", BASELINES[args.baseline], args.workers)
            show(f"baseline ({args.baseline})", baseline)
            per_figure(baseline, root / "baseline")
            for variant in ("strict", "nonstereo"):
                new, old = result["scores"]["macro"][variant]["f1"], baseline["scores"]["macro"][variant]["f1"]
                ratio = f"x{new / old:.2f}" if old else "n/a (baseline 0)"
                print(f"  gain over the baseline, F1 {variant}: {old:.3f} -> {new:.3f} ({ratio})")
            print(f"  time ratio pipeline/baseline: x{result['seconds'] / baseline['seconds']:.2f}")
        recovery = devset.rgroup_recovery()
        print(f"R-group engine: {recovery['recovered']}/{recovery['entries']} scope entries recovered "
              f"({recovery['share']:.1%}); refused {json.dumps(recovery['refused'])}")
        if args.keep:
            shutil.copytree(root / "out", args.keep, dirs_exist_ok=True)
        if args.rendered:
            rendered_check(args.rendered, root)


if __name__ == "__main__":
    main()
