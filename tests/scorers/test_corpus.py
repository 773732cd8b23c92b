"""The SQL scorers and the Python reference agree; groups, missing members, refusals."""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.scorers.corpus_strategies import corpus
from labrecord.errors import LabrecordError
from labrecord.scorers.corpus import ReferenceSource, SqlSource, score_corpus, score_reference
from labrecord.scorers.reference import load_reference
from labrecord.scorers.synthetic import DecisionSpec, GeometrySpec, RolloutSpec, write_population, write_rollout
from labrecord.store import connect, ingest_runs


def _close(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _sorted_units(units):
    return sorted(units, key=lambda u: tuple("" if x is None else str(round(x, 9) if isinstance(x, float) else x) for x in u))


UNIT_KINDS = ("checkpoint_units", "reach_units", "episode_units", "fixed_units", "member_units", "geometry_units", "run_outcomes")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(corpus())
def test_sql_and_reference_agree(spec):
    rollouts, population = spec
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "runs"
        for rollout in rollouts:
            write_rollout(root, rollout)
        write_population(root, "pop", population)
        con = connect(None)
        ingest_runs(root, con)
        sql, ref = SqlSource(con), ReferenceSource(load_reference(root))
        for kind in UNIT_KINDS:
            assert _close(_sorted_units(getattr(sql, kind)()), _sorted_units(getattr(ref, kind)())), kind
        try:
            expected = score_reference(root, seed=5, resamples=30)
        except LabrecordError as error:
            with pytest.raises(LabrecordError, match=str(error).split(":")[0]):
                score_corpus(con, seed=5, resamples=30)
            return
        assert _close(score_corpus(con, seed=5, resamples=30), expected)


def _write(root: Path, *specs: RolloutSpec) -> None:
    for spec in specs:
        write_rollout(root, spec)


def test_missing_member_is_reported_and_counted(tmp_path):
    root = tmp_path / "runs"
    write_population(root, "pop", [{"type": "instance", "instance_id": i} for i in ("i0", "i1", "i2")])
    _write(root, RolloutSpec("r0", population=("pop", "i0"), physical=True),
           RolloutSpec("r1", population=("pop", "i1"), physical=True))
    group = score_corpus(root, resamples=0)["groups"][0]
    assert group["coverage"]["missing"] == [{"population": "pop", "instance_id": "i2"}]
    completion = group["metrics"]["completion.valid"]
    assert (completion["num"], completion["den"]) == (2, 3)
    reach = group["metrics"]["reach.select_weight"]
    assert (reach["num"], reach["den"]) == (2, 3)


def test_invalid_run_is_skipped_and_its_member_missing(tmp_path):
    root = tmp_path / "runs"
    write_population(root, "pop", [{"type": "instance", "instance_id": i} for i in ("i0", "i1")])
    _write(root, RolloutSpec("r0", population=("pop", "i0"), physical=True),
           RolloutSpec("r1", population=("pop", "i1"), physical=True))
    with open(root / "r1" / "events.jsonl", "ab") as fh:
        fh.write(b'{"seq": 0, "t": 99.0, "type": "episode_start", "episode": 1}\n')  # seq goes back
    group = score_corpus(root, resamples=0)["groups"][0]
    assert group["coverage"]["missing"] == [{"population": "pop", "instance_id": "i1"}]


def test_one_group_refuses_differing_evaluation_versions(tmp_path):
    root = tmp_path / "runs"
    _write(root, RolloutSpec("r0", evaluation_version="1"), RolloutSpec("r1", evaluation_version="2"))
    assert len(score_corpus(root, resamples=0)["groups"]) == 2
    with pytest.raises(LabrecordError, match="evaluation_version differs"):
        score_corpus(root, resamples=0, one_group=True)


def test_one_group_pools_equal_identities(tmp_path):
    root = tmp_path / "runs"
    _write(root, RolloutSpec("r0", physical=True), RolloutSpec("r1"))
    (group,) = score_corpus(root, resamples=0, one_group=True)["groups"]
    assert group["metrics"]["completion.valid"]["value"] == 0.5


def test_service_fault_stays_in_denominator(tmp_path):
    root = tmp_path / "runs"
    _write(root, RolloutSpec("r0", physical=True), RolloutSpec("r1", physical=True, validity_fault=True))
    (group,) = score_corpus(root, resamples=0)["groups"]
    assert group["coverage"]["invalid_runs"] == ["r1"]
    assert (group["metrics"]["completion.valid"]["num"], group["metrics"]["completion.valid"]["den"]) == (1, 2)


def test_same_seed_same_numbers_other_seed_other_numbers(tmp_path):
    root = tmp_path / "runs"
    _write(root, *(RolloutSpec(f"r{i}", physical=i % 3 == 0, decisions=[DecisionSpec(outcome="correct" if i % 2 else "wrong")],
                               geometry=[GeometrySpec(p_hat=[0.1 * i, 0.0, 1.0], p_ref=[0.0, 0.0, 1.0])]) for i in range(30)))
    con = connect(None)
    ingest_runs(root, con)
    first = score_corpus(con, seed=1, resamples=200)
    assert score_corpus(con, seed=1, resamples=200) == first
    other = score_corpus(con, seed=2, resamples=200)
    assert other["groups"][0]["metrics"]["e_p"]["ci"] != first["groups"][0]["metrics"]["e_p"]["ci"]
    assert other["groups"][0]["metrics"]["completion.valid"]["value"] == first["groups"][0]["metrics"]["completion.valid"]["value"]


def test_snapshot_scores_like_the_corpus(tmp_path):
    from labrecord.store import write_snapshot

    root = tmp_path / "runs"
    write_population(root, "pop", [{"type": "instance", "instance_id": "i0"}, {"type": "checkpoint", "instance_id": "i0", "decision": "select_weight"}])
    _write(root, RolloutSpec("r0", population=("pop", "i0"), physical=True), RolloutSpec("r1", system="groot"))
    con = connect(tmp_path / "c.duckdb")
    ingest_runs(root, con)
    write_snapshot(con, tmp_path / "snap")
    assert score_corpus(tmp_path / "snap", seed=3, resamples=50, parquet=True) == score_corpus(con, seed=3, resamples=50)
