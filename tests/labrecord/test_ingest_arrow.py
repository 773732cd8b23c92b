"""The Arrow-batch load stores what the row path stored: every line of every log parsed on
its own with the structure of all the table's columns."""
from __future__ import annotations

from pathlib import Path

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.examples import example_manifest, write_example_run
from labrecord.models import (
    Choice, EpisodeEnd, EpisodeStart, Failure, FinalScores, Geometry, InterventionEvent, MetricValue, OnlineScore,
    Operation, Opportunity, Recovery, StateReport, Violation,
)
from labrecord.rundir import EVENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, SCORES_FILE, RunWriter
from labrecord.scorers.synthetic import DecisionSpec, FailureSpec, GeometrySpec, RolloutSpec, write_rollout
from labrecord.store import connect, ingest_runs
from labrecord.store.ingest import _EPISODE, _EVENT_DEFAULTS, _structure, text_column, validate_for_load
from labrecord.store.schema import EVENTS, OBSERVATIONS, ONLINE_SCORES
from labrecord.validation.jsonl import KeptTexts


def _every_type_run(root: Path) -> None:
    """One run with every event type, each default field both left out and written."""
    op = Operation("add", "w20", "pan")
    with RunWriter.create(root, example_manifest("all-types")) as run:
        run.emit(EpisodeStart, t=0.0, episode=0)
        run.emit(Opportunity, t=0.0, opp="o0", decision="d0", trigger="initial", legal=[op], evidence_version=0)
        run.emit(InterventionEvent, t=0.1, opp="o0", evidence_version=0, mode="assist", site="semantic",
                 payload={"reading_g": 20.0, "stable": True}, delivered=False)
        run.emit(InterventionEvent, t=0.2, opp="o0", evidence_version=0, mode="replace", site="decision",
                 original=[1, "a"], substituted="x")
        run.emit(Choice, t=0.5, opp="o0", op=op, track="report", first=True)
        run.emit(Choice, t=0.6, opp="o0", op=op)
        run.emit(Geometry, t=0.7, opp="o0", target="pan", p_hat=[0.1, None, 0.3], p_ref=[0.1, 0.2, 0.3])
        run.emit(StateReport, t=0.8, opp="o0", fields={"mass": 20}, reference={})
        run.emit(Failure, t=1.0, reason="slip", attempt=2, recoverable=False)
        run.emit(Failure, t=1.1, reason="drop")
        run.emit(Recovery, t=1.2, of_seq=8, resolved=True)
        run.emit(Violation, t=1.3, kind="premature", irreversible=True)
        run.emit(Violation, t=1.4, kind="repetition", op=op)
        run.emit(EpisodeEnd, t=2.0, episode=0, reason="timeout", physical_complete=False, valid_complete=False,
                 runtime_s=2.0, runtime_clock="sim")
        run.emit(EpisodeStart, t=3.0, episode=1)
        run.emit(EpisodeEnd, t=4.0, episode=1, reason="success", physical_complete=True, valid_complete=True)
        run.online_score(OnlineScore(t=0.5, seq=4, metrics={"B_next": MetricValue(value=0.5, num=1, den=2, n=2)}))
        run.online_score(OnlineScore(t=4.0, seq=15, state={"open": []}))
        run.write_scores(FinalScores(run_id="all-types", status="complete", episodes=[{"episode": 0}],
                                     metrics={"B_next": MetricValue(value=None, num=0, den=0)}))


def _runs(root: Path) -> None:
    for index in range(3):
        write_example_run(root, f"ex{index}", opportunities=index + 1, correct=index != 1)
    oracle = {"mode": "assist", "site": "semantic", "payload": {"reading_g": 10.0}}
    write_rollout(root, RolloutSpec("r-mixed", decisions=(DecisionSpec(), DecisionSpec(outcome="wrong", oracle=oracle),
                                                          DecisionSpec(outcome="late", then="w20")),
                                    failures=(FailureSpec(), FailureSpec(recoverable=False, resolved=None)),
                                    violations=(True, False), confirms=("supported",), validity_fault=True,
                                    geometry=(GeometrySpec([0.1, None, 0.2], [0.1, 0.1, 0.2], v_hat=[0.0, 0.0, 1.0],
                                                           v_ref=[0.0, 0.0, 1.0]),),
                                    runtime_s=12.5, runtime_clock="wall", policy_s_per_query=0.25, physical=True))
    write_rollout(root, RolloutSpec("r-open", ended=False, status="running", measurements="none"))
    _every_type_run(root)


def _row_path(con, root: Path, name: str, spec) -> list[tuple]:
    """The table as the row path loads it: each kept text (the canonical text of a record
    validation decoded) transformed on its own with the structure of every column, omitted
    defaults restored by type, episodes by window."""
    texts, run_ids = [], []
    for run_dir in sorted(root.iterdir()):
        kept = validate_for_load(run_dir).records.get(name)
        lines = kept.lines() if kept is not None else []
        texts += lines
        run_ids += [run_dir.name] * len(lines)
    import pyarrow as pa

    con.register("_files", pa.table({"run_id": run_ids, "json": pa.array(texts, pa.binary()).cast(pa.string())}))
    values = []
    for c in spec.columns:
        if c.name == "run_id":
            continue
        if spec is EVENTS and c.name in _EVENT_DEFAULTS:
            default, types = _EVENT_DEFAULTS[c.name]
            listed = ", ".join(f"'{t}'" for t in types.split())
            values.append(f'CASE WHEN type IN ({listed}) THEN coalesce("{c.name}", {default}) END AS "{c.name}"')
        else:
            values.append(f'"{c.name}"')
    typed = f"SELECT run_id, {', '.join(values)} FROM (SELECT run_id, unnest(json_transform(json, '{_structure(spec.columns)}')) FROM _files)"
    select = ", ".join(_EPISODE + ' AS "episode"' if c.name == "episode" and spec is EVENTS else f'"{c.name}"'
                       for c in spec.columns)
    columns = ", ".join(f'"{c.name}"' for c in spec.columns)
    rows = con.execute(f"SELECT {columns} FROM (SELECT {select} FROM ({typed})) ORDER BY ALL").fetchall()
    con.unregister("_files")
    return rows


def test_every_table_equals_the_row_path(tmp_path: Path) -> None:
    """Events of every type and observations, loaded from Arrow batches type by type, are
    the rows the one-structure-per-line load gives; the other tables are loaded as before
    and hold what the files hold."""
    root = tmp_path / "runs"
    _runs(root)
    con = connect(None)
    summary = ingest_runs(root, con, batch_size=3)
    assert not summary.skipped and len(summary.added) == 6
    for name, spec in ((EVENTS_FILE, EVENTS), (OBSERVATIONS_FILE, OBSERVATIONS), (ONLINE_SCORES_FILE, ONLINE_SCORES)):
        columns = ", ".join(f'"{c.name}"' for c in spec.columns)
        stored = con.execute(f"SELECT {columns} FROM {spec.name} ORDER BY ALL").fetchall()
        assert stored == _row_path(con, root, name, spec) and stored
    types = {t for (t,) in con.execute("SELECT DISTINCT type FROM events").fetchall()}
    assert types >= {"episode_start", "opportunity", "choice", "confirm", "failure", "recovery", "violation",
                     "intervention", "geometry", "state_report", "dwell", "validity", "episode_end"}
    # the defaults the writer left out are restored, only on the types that carry them
    assert con.execute("SELECT attempt, recoverable FROM events WHERE run_id = 'all-types' AND type = 'failure' "
                       "ORDER BY seq").fetchall() == [(2, False), (1, True)]
    assert con.execute("SELECT count(*) FROM events WHERE type <> 'choice' AND (track IS NOT NULL OR first IS NOT NULL)"
                       ).fetchone() == (0,)
    assert con.execute("SELECT episode FROM events WHERE run_id = 'all-types' ORDER BY seq").fetchall()[-3:] == \
        [(0,), (1,), (1,)]
    scores = msgspec.json.decode((root / "all-types" / SCORES_FILE).read_bytes())
    assert con.execute("SELECT status, metrics::VARCHAR, episodes::VARCHAR, created_at FROM final_scores").fetchall() == \
        [("complete", msgspec.json.encode(scores["metrics"]).decode(), '[{"episode":0}]', None)]
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (6, 6)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=12),
                         max_size=5), max_size=6))
def test_text_column_holds_each_kept_text(groups: list[list[str]]) -> None:
    """Blocks of kept texts (empty blocks, empty texts, any other character) make one
    Arrow column of the texts in order, each with its closing newline."""
    kept = KeptTexts()
    for group in groups:
        kept.extend([text.encode() for text in group])
    column = text_column(kept.blocks)
    flat = [text for group in groups for text in group]
    assert column.to_pylist() == [text + "\n" for text in flat]
    assert len(kept) == len(flat) and kept.lines() == [text.encode() for text in flat]


def test_text_column_by_hand() -> None:
    """Two blocks, b'a\\nbc\\n' and b'\\n' (an empty text): offsets 0, 2, 5, 6, so three
    values 'a\\n', 'bc\\n' and '\\n'."""
    column = text_column([b"a\nbc\n", b"\n"])
    import numpy as np

    assert np.frombuffer(column.buffers()[1], np.int64).tolist() == [0, 2, 5, 6]
    assert column.to_pylist() == ["a\n", "bc\n", "\n"]
