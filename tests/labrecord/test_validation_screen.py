"""The bulk checks of a clean log give what the event-by-event rules give."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.fileio import dumps
from labrecord.models import (
    Choice, Dwell, EpisodeEnd, EpisodeStart, Failure, Geometry, InterventionEvent, ObservationReceipt, Operation,
    Opportunity, Recovery, StateReport,
)
from labrecord.validation import events as events_module
from labrecord.validation import files as files_module
from labrecord.validation.events import screen_events, validate_events
from labrecord.validation.files import RunContext, screen_receipts, validate_observations_file
from labrecord.validation.findings import Report
from labrecord.validation.jsonl import KeptTexts

OP = Operation("add", "w20", "pan")


def _log(records: list) -> bytes:
    return b"".join(dumps(r) + b"\n" for r in records)


def _validate(data: bytes, bulk: bool) -> tuple[list[str], dict, dict, int, list[bytes]]:
    with pytest.MonkeyPatch.context() as patch:
        if not bulk:
            patch.setattr(events_module, "screen_events", lambda events: None)
        report, kept = Report(), KeptTexts()
        summary = validate_events("e.jsonl", data, report, keep=kept)
    return ([str(f) for f in report.errors + report.warnings], dict(summary.obs_ids),
            {k: dumps(v) for k, v in summary.opportunities.items()}, summary.count, kept.lines())


def test_a_clean_log_by_hand() -> None:
    """episode_start 0, opportunity o0 (version 0), a first native choice bound to it,
    episode_end 0: no finding, one opportunity, o0's observation on line 2."""
    log = [EpisodeStart(seq=0, t=0.0, episode=0),
           Opportunity(seq=1, t=0.0, opp="o0", decision="d0", trigger="initial", legal=[OP], obs_id="obs0",
                       evidence_version=0),
           Choice(seq=2, t=0.1, opp="o0", op=OP, first=True, evidence_version=0),
           EpisodeEnd(seq=3, t=0.2, episode=0, reason="success", physical_complete=True, valid_complete=True)]
    summary = screen_events(log)
    assert summary is not None and summary.count == 4 and summary.obs_ids == {"obs0": 2}
    assert list(summary.opportunities) == ["o0"] and summary.open_episode is None
    assert screen_events(log[:3]).open_episode == 0  # type: ignore[union-attr]


def test_each_rule_sends_the_log_to_the_event_by_event_reading() -> None:
    """seq 0, 1, 1 repeats a seq; t 1.0 then 0.5 goes back; a choice of o9 names no
    opportunity: each gives None."""
    start = EpisodeStart(seq=0, t=1.0, episode=0)
    assert screen_events([start, Dwell(seq=1, t=1.0, state="start"), Dwell(seq=1, t=1.0, state="reset")]) is None
    assert screen_events([start, Dwell(seq=1, t=0.5, state="start")]) is None
    assert screen_events([start, Choice(seq=1, t=1.0, opp="o9", op=OP)]) is None


def test_receipts_by_hand() -> None:
    """Versions 0, 0, 3 pass (obs_id -> line); 0, 2, 1 go back; a repeated id or a delivery
    before its acquisition is a finding too."""
    def receipts(versions: list[int], ids: str = "abc", late: float = 0.01) -> list[ObservationReceipt]:
        return [ObservationReceipt(obs_id=i, step=k, t_acquired=float(k), t_delivered=k + late, evidence_version=v)
                for k, (i, v) in enumerate(zip(ids, versions))]
    assert screen_receipts(receipts([0, 0, 3])) == {"a": 1, "b": 2, "c": 3}
    assert screen_receipts(receipts([0, 2, 1])) is None
    assert screen_receipts(receipts([0, 0, 3], ids="aba")) is None
    assert screen_receipts(receipts([0, 0, 3], late=-0.5)) is None


# -- generated logs: small id and version alphabets, so every rule is hit and often passes --
_opp = st.sampled_from(["o0", "o1", "o2"])
_version = st.integers(-2, 3)
_t = st.floats(0.0, 3.0)  # (a nan or infinity is written as null, which no log decodes)


@st.composite
def _event(draw: st.DrawFn, seq: int) -> object:
    t = draw(_t)
    kind = draw(st.sampled_from(["start", "end", "opp", "choice", "intervention", "geometry", "report", "failure",
                                 "recovery", "dwell"]))
    if kind == "start":
        return EpisodeStart(seq=seq, t=t, episode=draw(st.integers(0, 2)))
    if kind == "end":
        return EpisodeEnd(seq=seq, t=t, episode=draw(st.integers(0, 2)), reason="timeout", physical_complete=False,
                          valid_complete=False)
    if kind == "opp":
        return Opportunity(seq=seq, t=t, opp=draw(_opp), decision="d0", trigger="initial", legal=[OP],
                           obs_id=draw(st.sampled_from([None, "a", "b", "c"])), evidence_version=draw(_version),
                           window_s=draw(st.sampled_from([None, 5.0, 0.0, -1.0, float("inf")])))
    if kind == "choice":
        return Choice(seq=seq, t=t, opp=draw(_opp), op=OP, first=draw(st.booleans()),
                      track=draw(st.sampled_from(["native", "report"])),
                      evidence_version=draw(st.none() | _version))
    if kind == "intervention":
        return InterventionEvent(seq=seq, t=t, opp=draw(_opp), evidence_version=draw(_version), mode="assist",
                                 site="decision")
    if kind == "geometry":
        return Geometry(seq=seq, t=t, opp=draw(_opp), target="w20", p_ref=[0.0, 0.0, 0.0])
    if kind == "report":
        return StateReport(seq=seq, t=t, opp=draw(_opp))
    if kind == "failure":
        return Failure(seq=seq, t=t, reason="miss")
    if kind == "recovery":
        return Recovery(seq=seq, t=t, of_seq=draw(st.integers(0, 12)), resolved=True)
    return Dwell(seq=seq, t=t, state="start")


@st.composite
def _logs(draw: st.DrawFn) -> list:
    n = draw(st.integers(1, 12))
    seqs = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))  # steps of 0 repeat a seq
    out, seq = [], -1
    for step in seqs:
        seq += step if draw(st.integers(0, 9)) == 0 else max(step, 1)
        out.append(draw(_event(seq)))
    if draw(st.booleans()):  # time in order most of the time
        for e, t in zip(out, sorted(e.t for e in out)):
            e.t = t
    return out


@settings(max_examples=300, deadline=None)
@given(_logs())
def test_bulk_and_event_by_event_checks_agree(log: list) -> None:
    """Any generated log: the same findings (text and order), summary and kept texts."""
    data = _log(log)
    assert _validate(data, True) == _validate(data, False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.floats(0, 2), st.floats(-0.5, 0.5), st.integers(-2, 3)),
                min_size=1, max_size=8))
def test_bulk_and_receipt_by_receipt_checks_agree(tmp_path_factory: pytest.TempPathFactory, rows: list) -> None:
    """Any generated receipts: the same findings and obs_id -> first line."""
    path = tmp_path_factory.mktemp("obs") / "observations.jsonl"
    path.write_bytes(_log([ObservationReceipt(obs_id=i, step=k, t_acquired=t, t_delivered=t + d, evidence_version=v)
                           for k, (i, t, d, v) in enumerate(rows)]))
    seen = []
    for bulk in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not bulk:
                patch.setattr(files_module, "screen_receipts", lambda receipts: None)
            report, ctx = Report(), RunContext()
            validate_observations_file(path, report, ctx)
        seen.append(([str(f) for f in report.errors], ctx.receipts))
    assert seen[0] == seen[1]
