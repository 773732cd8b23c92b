"""Reading recorded simulator runs in the end-to-end tests (weighing, centrifuge, rack)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labrecord.models import Choice, EpisodeEnd, Failure, Opportunity, Recovery
from labrecord.rundir import read_events
from labrecord.scorers.audit import audit_run
from labrecord.scorers.corpus import score_corpus
from labrecord.validation import validate_run


def check_run(run: Path) -> None:
    """The run validates and its replay audit checks some events and agrees with all of them."""
    report, _ = validate_run(run)
    assert report.ok, [str(f) for f in report.errors]
    audit = audit_run(run)
    assert audit.ok, [str(f) for f in audit.findings]
    assert audit.events_checked > 0


def first_native_choices(run: Path) -> list[tuple[Choice, Opportunity]]:
    """Every first native-track choice of a run with the opportunity it was made at."""
    events = read_events(run)
    opened = {e.opp: e for e in events if isinstance(e, Opportunity)}
    return [(e, opened[e.opp]) for e in events if isinstance(e, Choice) and e.first and e.track == "native"]


def episode_end(run: Path) -> EpisodeEnd:
    return next(e for e in read_events(run) if isinstance(e, EpisodeEnd))


def check_failed_and_recovered(run: Path, reason: str) -> None:
    """A checked run with exactly one failure, ``reason``, resolved by one recovery, that
    still ends physically complete."""
    check_run(run)
    events = read_events(run)
    failures = [e for e in events if isinstance(e, Failure)]
    assert [f.reason for f in failures] == [reason]
    assert [(r.of_seq, r.resolved) for r in events if isinstance(r, Recovery)] == [(failures[0].seq, True)]
    assert episode_end(run).physical_complete


def group_metrics(folder: Path) -> dict[str, Any]:
    """The metrics of a folder whose runs score as one group."""
    (group,) = score_corpus(folder, resamples=0)["groups"]
    return group["metrics"]


def ratio(metric: dict[str, Any]) -> tuple[int, int]:
    """A metric's ``(num, den)``."""
    return metric["num"], metric["den"]


def reference_runs_fixture(run_family: Callable[..., list[Path]], cameras: bool = True) -> Any:
    """A module fixture: two basic reference episodes of ``run_family`` from seed 0, with
    32 px cameras (or none), recorded once for the module's tests."""

    @pytest.fixture(scope="module")
    def reference_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
        options: dict[str, Any] = {"size": 32} if cameras else {"cameras": False}
        return run_family(tmp_path_factory.mktemp("runs"), "basic", "reference", episodes=2, seed=0, **options)

    return reference_runs


def reference_metrics(run_family: Callable[..., list[Path]], folder: Path, condition: str) -> dict[str, Any]:
    """Eight reference episodes of ``condition`` from seed 0 under ``folder`` (no cameras,
    two workers), every run checked; the metrics of their group."""
    for run in run_family(folder, condition, "reference", episodes=8, seed=0, cameras=False, workers=2):
        check_run(run)
    return group_metrics(folder)


def check_bench_identity(runs: list[Path], deadline_s: float) -> None:
    """Every run names its bench's asset revision and layout revision — the same for every
    instance of one bench, so randomized instances pool — and the family's default response
    deadline."""
    from labrecord.rundir import read_manifest

    manifests = [read_manifest(run).manifest for run in runs]
    assert all(m.assets.revision and m.assets.revision.startswith("sha256:") for m in manifests)
    assert len({(m.assets.revision, m.assets.layout_hash) for m in manifests}) == 1
    assert {m.evaluation.budget.response_deadline_s for m in manifests} == {deadline_s}
