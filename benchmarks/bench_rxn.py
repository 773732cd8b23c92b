"""Reaction F1 scoring cost against its floor: canonicalizing each distinct SMILES once.

Generates a ChemRxn-Bench-sized gold set (600 figures, ~8,500 concrete reactions, built
like substrate-scope tables: one template per figure instantiated with aryl substituents)
and a prediction with the usual faults (atom orderings rewritten with RDKit ``doRandom``,
flipped stereocentres, dropped and duplicated records, wrong substituents, malformed
strings, failed and timed-out figures).  Then, in one process, with a cold cache each time:

- floor: ``canonicalize_many`` over the distinct strings the scorer must canonicalize;
- total: ``score_documents`` end to end (flatten, canonicalize, ingest into DuckDB, SQL
  matching, summary) from documents already in memory.

It prints both and their ratio and the range of its paired ratios (target <= 1.1 for the default ``strict`` scoring), plus
the time to read the same documents from JSON files with the adapters, reported
separately.  Then each other scoring profile (``stereo-blind``, ``inchi``, ``tanimoto:T``,
``roles-lenient``) is timed the same way, end to end with that one profile asked for, and
reported as its own ratio to the same floor (no target: InChI and fingerprints cost RDKit
work of their own, and ``tanimoto`` a bipartite matching per figure).

    python benchmarks/bench_rxn.py                 # 600 figures
    python benchmarks/bench_rxn.py --figures 60    # quick run
    python benchmarks/bench_rxn.py --profiles none # only the strict ratio
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from labrecord.chemdata.adapters import load_documents
from labrecord.chemdata.normalize import cache_clear, canonicalize_many
from labrecord.models.rxn import FigureDocument, Molecule, Reaction
from labrecord.chemdata.scoring import score_documents

#: the cost target of the default ``strict`` scoring: end to end over the floor
TARGET = 1.1

SUBSTITUENTS = ["C", "CC", "OC", "F", "Cl", "C(F)(F)F", "N(C)C", "C#N", "[N+](=O)[O-]", "C(=O)OC", "OC(F)(F)F",
                "SC", "C(C)(C)C", "c2ccccc2", "N2CCOCC2", "[2H]", "C(C)C", "OCc2ccccc2", "C=O", "S(C)(=O)=O",
                "C2CC2", "I", "OC(C)=O", "N"]  # ring digit 2: they sit inside the aryl ring 1
AMINES = ["NC", "NCC", "NC(C)C", "N[C@@H](C)c1ccccc1", "N[C@H](C)c1ccccc1", "N1CCCC1", "NCc1ccccc1", "NC1CCCCC1"]
ALCOHOLS = ["O[C@H](C)CC", "O[C@@H](C)CC", "OC/C=C/C", "OC/C=C\\C", "OCC", "O[C@@H]1CCCC[C@H]1C"]


def _aryl(sub: str) -> str:
    return f"c1ccc({sub})cc1"


def _template(kind: int, a: str, b: str) -> tuple[list[str], list[str]]:
    """One concrete reaction of template ``kind`` with substituent ``a`` and partner ``b``."""
    if kind == 0:    # Suzuki coupling
        return [f"Br{_aryl(a)}", f"OB(O){_aryl(b)}"], [f"c1cc({a})ccc1-c1ccc({b})cc1"]
    if kind == 1:    # amide coupling
        return [f"OC(=O){_aryl(a)}", b], [f"O=C({b})c1ccc({a})cc1"]
    return [f"OC(=O){_aryl(a)}", b], [f"O=C({b})c1ccc({a})cc1"]  # esterification (b is an alcohol)


def _partner(kind: int, rng: np.random.Generator) -> str:
    if kind == 0:
        return SUBSTITUENTS[rng.integers(len(SUBSTITUENTS))]
    pool = AMINES if kind == 1 else ALCOHOLS
    return pool[rng.integers(len(pool))]


def generate_gold(figures: int, rng: np.random.Generator) -> list[FigureDocument]:
    """``figures`` gold documents, ~14 reactions each (1-82, median near 10)."""
    docs = []
    for index in range(figures):
        kind = int(rng.integers(3))
        n = int(min(82, max(1, round(rng.lognormal(2.40, 0.75)))))
        rxns = []
        for _ in range(n):
            a = SUBSTITUENTS[rng.integers(len(SUBSTITUENTS))]
            reactants, products = _template(kind, a, _partner(kind, rng))
            rxns.append(Reaction(reactants=[Molecule(smiles=s) for s in reactants],
                                 products=[Molecule(smiles=s) for s in products]))
        docs.append(FigureDocument(figure_id=f"fig{index:04d}", system="gold", layout=["suzuki", "amide", "ester"][kind],
                                   reactions=rxns))
    return docs


def _rewrite(smiles: str, rng: np.random.Generator) -> str:
    from rdkit import Chem, rdBase

    rdBase.SeedRandomNumberGenerator(int(rng.integers(2**31 - 1)))
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles), doRandom=True, canonical=False)


def _flip(smiles: str) -> str:
    return smiles.replace("@@", "\0").replace("@", "@@").replace("\0", "@")


def _predict_reaction(rxn: Reaction, rng: np.random.Generator) -> list[Reaction]:
    """0, 1 or 2 predicted reactions for one gold reaction."""
    draw = rng.random()
    if draw < 0.10:
        return []                                                   # missed
    reactants = [m.smiles for m in rxn.reactants]
    products = [m.smiles for m in rxn.products]
    if draw < 0.18:
        products = [_flip(s) for s in products]                     # stereo error
    elif draw < 0.24:
        products = [s.replace("Cl", "Br", 1) if "Cl" in s else s + "C" for s in products]  # wrong structure
    elif draw < 0.26:
        products = ["C1CC" + products[0]]                           # malformed
    if rng.random() < 0.5:
        reactants = [_rewrite(s, rng) if "C1CC" not in s else s for s in reactants]
        products = [_rewrite(s, rng) if not s.startswith("C1CC") else s for s in products]
    out = Reaction(reactants=[Molecule(smiles=s) for s in reactants], products=[Molecule(smiles=s) for s in products])
    return [out, out] if rng.random() < 0.04 else [out]


def generate_prediction(gold: list[FigureDocument], rng: np.random.Generator) -> list[FigureDocument]:
    docs = []
    for doc in gold:
        draw = rng.random()
        if draw < 0.02:
            docs.append(FigureDocument(figure_id=doc.figure_id, system="bench", status="failed", error="tool error"))
            continue
        if draw < 0.03:
            docs.append(FigureDocument(figure_id=doc.figure_id, system="bench", status="timeout", error="timeout"))
            continue
        rxns = [p for r in doc.reactions for p in _predict_reaction(r, rng)]
        order = rng.permutation(len(rxns))
        docs.append(FigureDocument(figure_id=doc.figure_id, system="bench", reactions=[rxns[i] for i in order]))
    return docs


def distinct_strings(docs: list[FigureDocument]) -> list[str]:
    seen: dict[str, None] = {}
    for doc in docs:
        for rxn in doc.reactions:
            for mol in (*rxn.reactants, *rxn.products):
                seen[mol.smiles] = None
            for cond in rxn.conditions:
                if cond.smiles is not None:
                    seen[cond.smiles] = None
    return list(seen)


def time_floor(strings: list[str]) -> float:
    cache_clear()
    start = time.perf_counter()
    canonicalize_many(strings)
    return time.perf_counter() - start


def time_total(gold: list[FigureDocument], pred: list[FigureDocument], profiles: tuple[str, ...] = ()) -> tuple[float, dict]:
    cache_clear()
    start = time.perf_counter()
    result = score_documents(gold, pred, profiles=profiles)
    return time.perf_counter() - start, result


def time_load(gold: list[FigureDocument], pred: list[FigureDocument]) -> float:
    import msgspec

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, docs in (("gold", gold), ("bench", pred)):
            (root / name).mkdir()
            (root / name / "docs.jsonl").write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in docs))
        start = time.perf_counter()
        load_documents(root / "gold", gold=True)
        load_documents(root / "bench")
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--figures", type=int, default=600, help="number of gold figures (default 600)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions; the median is reported")
    parser.add_argument("--profiles", default="stereo-blind,inchi,tanimoto:0.85,roles-lenient",
                        help="comma-separated profiles timed after strict ('none': skip)")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    gold = generate_gold(args.figures, rng)
    pred = generate_prediction(gold, rng)
    strings = distinct_strings(gold + pred)
    n_gold = sum(len(d.reactions) for d in gold)
    n_pred = sum(len(d.reactions) for d in pred)
    print(f"figures {len(gold)}, gold reactions {n_gold}, predicted reactions {n_pred}, distinct SMILES {len(strings)}")

    # warm both paths (imports, RDKit and DuckDB first-call costs) outside the timings
    time_total(gold[:3], pred[:3])
    names = ["strict"] + ([] if args.profiles == "none" else [n.strip() for n in args.profiles.split(",") if n.strip()])
    time_total(gold[:3], pred[:3], tuple(names[1:]))
    # each timing is paired with a floor measured just before it, so a machine whose load
    # drifts during the run moves both; the median of the paired ratios is reported
    floors: dict[str, list[float]] = {name: [] for name in names}
    totals: dict[str, list[float]] = {name: [] for name in names}
    results: dict[str, dict] = {}
    for _ in range(args.repeat):
        for name in names:
            floors[name].append(time_floor(strings))
            seconds, results[name] = time_total(gold, pred, () if name == "strict" else (name,))
            totals[name].append(seconds)
    pairs = {name: [t / f for t, f in zip(totals[name], floors[name])] for name in names}
    ratio = {name: statistics.median(values) for name, values in pairs.items()}
    floor, total = statistics.median(floors["strict"]), statistics.median(totals["strict"])
    result = results["strict"]
    verdict = "met" if ratio["strict"] <= TARGET else "not met"
    print(f"floor: canonicalize distinct SMILES once   {floor:8.3f} s")
    print(f"total: score_documents (DuckDB) end to end {total:8.3f} s")
    print(f"ratio total / floor (median of pairs)      {ratio['strict']:8.3f}   "
          f"(pairs {min(pairs['strict']):.3f}-{max(pairs['strict']):.3f}; target <= {TARGET}: {verdict})")
    print(f"reading the same documents from JSONL      {time_load(gold, pred):8.3f} s   (not in the ratio)")
    print("macro F1 strict {:.4f}, nonstereo {:.4f}".format(result["macro"]["strict"]["f1"], result["macro"]["nonstereo"]["f1"]))
    report = {"floor_s": floor, "total_s": total, "ratio": ratio["strict"],
              "ratio_range": [min(pairs["strict"]), max(pairs["strict"])], "target": TARGET, "profiles": {}}
    for name in names[1:]:
        seconds = statistics.median(totals[name])
        f1 = results[name]["profiles"][name]["macro"]["f1"]
        print(f"profile {name:16s} end to end {seconds:8.3f} s   ratio to its floor {ratio[name]:6.3f} "
              f"(pairs {min(pairs[name]):.3f}-{max(pairs[name]):.3f}; its own, no target)   macro F1 {f1:.4f}")
        report["profiles"][name] = {"total_s": seconds, "ratio": ratio[name], "ratio_range": [min(pairs[name]), max(pairs[name])],
                                    "f1": f1}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
