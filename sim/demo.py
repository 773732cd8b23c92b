"""``labrecord demo``: a short evaluation, end to end, on this machine (one registered
family, or ``family="all"``: every family into the same corpus).

Simulates each family's demo policies (its registry entry names them) on the same
registered instances, then validates, ingests, scores, audits and reports — the whole
labrecord loop on the embedded MuJoCo defaults.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError

#: camera size of the demo's videos (smaller than the 224 default: the demo is a quick tour)
DEMO_SIZE = 128

#: metrics shown in the demo's summary, in this order (present when their population is)
HEADLINE = ("B_next", "C_id", "accuracy_identified", "completion.physical", "completion.valid", "completion.clean")


@dataclass
class DemoResult:
    out: Path
    runs_dir: Path
    db: Path
    scores: Path
    report: Path
    runs: dict[str, int] = field(default_factory=dict)
    validation: dict[str, int] = field(default_factory=dict)
    audit: dict[str, int] = field(default_factory=dict)
    groups: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"out": str(self.out), "runs_dir": str(self.runs_dir), "db": str(self.db),
                "scores": str(self.scores), "report": str(self.report), "runs": self.runs,
                "validation": self.validation, "audit": self.audit,
                "groups": [{"task": g["identity"].get("task_id"), "system": g["identity"].get("system_name"),
                            "metrics": headline(g)} for g in self.groups]}


def headline(group: dict[str, Any]) -> dict[str, Any]:
    return {name: group["metrics"][name] for name in HEADLINE if name in group["metrics"]}


def run_demo(out: str | os.PathLike[str] = "labrecord-demo", *, episodes: int = 12, seed: int = 0, workers: int = 1,
             condition: str = "basic", cameras: bool = True, overwrite: bool = False, resamples: int = 1000,
             say: Callable[[str], None] = print, progress: Callable[[str, int], Any] | None = None,
             family: str | None = None) -> DemoResult:
    """Run the whole loop into ``out``; ``say`` receives one line per stage.

    ``family`` is one registered task family (default: the first) or ``all`` (each
    family's demo policies, ``episodes`` each, into one corpus).
    """
    from labrecord.families import FAMILIES
    from labrecord.sim import run_episodes

    from labrecord.scorers.corpus import audit_corpus, score_corpus
    from labrecord.scorers.report import write_report
    from labrecord.store import connect, ingest_runs
    from labrecord.fileio import atomic_write_bytes, dumps_pretty
    from labrecord.validation import validate_paths

    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise LabrecordError(f"{out}: already exists and is not empty; pass --overwrite or choose another --out")
        shutil.rmtree(out)
    runs_dir, db, scores, report = out / "runs", out / "corpus.duckdb", out / "scores.json", out / "report.html"
    result = DemoResult(out, runs_dir, db, scores, report)

    family = family or next(iter(FAMILIES))
    if family not in (*FAMILIES, "all"):
        raise LabrecordError(f"family {family!r}: expected one of {', '.join(FAMILIES)} or all")
    families = tuple(FAMILIES) if family == "all" else (family,)
    for name in families:
        for policy in FAMILIES[name].demo_policies:
            say(f"simulating {episodes} {condition} {name} episode(s) with the {policy} policy …")
            key = policy if family != "all" else f"{name}/{policy}"
            if progress is None:
                paths = run_episodes(name, runs_dir, condition, policy, episodes, seed, workers, cameras=cameras,
                                     size=DEMO_SIZE)
            else:
                with progress(key, episodes) as advance:
                    paths = run_episodes(name, runs_dir, condition, policy, episodes, seed, workers, cameras=cameras,
                                         size=DEMO_SIZE, progress=advance)
            result.runs[key] = len(paths)

    validation = validate_paths([runs_dir])
    result.validation = {"errors": len(validation.errors), "warnings": len(validation.warnings)}
    say(f"validated: {len(validation.errors)} error(s), {len(validation.warnings)} warning(s)")
    if validation.errors:
        raise LabrecordError(f"{runs_dir}: simulated runs do not validate: {validation.errors[0]}")

    summary = ingest_runs(runs_dir, db)
    say(f"ingested {len(summary.added)} run(s) into {db}")

    # audited before scoring: a run that disagrees with its measurements is unresolved
    con = connect(db)
    try:
        verdicts = audit_corpus(con)
        scored = score_corpus(con, seed=seed, resamples=resamples)
    finally:
        con.close()
    result.audit = {"runs": len(verdicts), "agree": sum(v["ok"] for v in verdicts),
                    "disagreements": sum(v["findings"] for v in verdicts)}
    say(f"replay audit: {result.audit['agree']}/{len(verdicts)} run(s) agree with their recorded events")
    atomic_write_bytes(scores, dumps_pretty(scored))
    result.groups = scored["groups"]

    title = ", ".join(families)
    write_report(db, report, seed=seed, resamples=resamples, title=f"labrecord demo — {title} ({condition})")
    return result
