"""Checks on the order and references of ``events.jsonl``."""
from __future__ import annotations

import math
from itertools import repeat
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from labrecord.models import (
    EVENT_TYPES, Choice, EpisodeEnd, EpisodeStart, Event, Failure, Geometry, InterventionEvent, Opportunity,
    Recovery, StateReport,
)
from labrecord.validation.findings import Report
from labrecord.validation.jsonl import KeptTexts, decode_log

_decoder = msgspec.json.Decoder(Event)
#: event type -> small code, for the bulk checks (:func:`screen_events`)
_CODE: dict[type, int] = {cls: k for k, cls in enumerate(EVENT_TYPES.values())}
_SEQ, _T, _OPP, _VERSION = attrgetter("seq"), attrgetter("t"), attrgetter("opp"), attrgetter("evidence_version")
_WINDOW, _OBS, _OF_SEQ = attrgetter("window_s"), attrgetter("obs_id"), attrgetter("of_seq")


class EventLogSummary:
    """What later cross-file checks need from a log."""

    def __init__(self) -> None:
        self.opportunities: dict[str, Opportunity] = {}
        self.obs_ids: dict[str, int] = {}
        self.count = 0
        #: the episode still open after the last event (no episode_end), else None
        self.open_episode: int | None = None


def validate_events(path: str, data: bytes, report: Report, *, interrupted: bool = False,
                    keep: KeptTexts | None = None) -> EventLogSummary:
    """Validate one events log; every problem is added to ``report``.

    ``interrupted``: the run is still marked ``running`` (its writer never closed it), so
    a cut last line and an open last episode are warnings.  ``keep`` receives the
    canonical text of each decoded event (:func:`~labrecord.validation.jsonl.decode_jsonl`).
    """
    records, items = decode_log(path, data, _decoder, report, interrupted=interrupted, keep=keep)
    if records is not None:
        screened = screen_events(records)
        if screened is not None:
            if screened.open_episode is not None and screened.count:
                report.warn(path, None, "episode_end", f"episode {screened.open_episode} has no episode_end (run interrupted?)")
            return screened
    summary = EventLogSummary()
    opportunities = summary.opportunities
    first_native: set[str] = set()
    failures: set[int] = set()
    last_seq: int | None = None
    last_t = float("-inf")
    last_version = -1
    open_episode: int | None = None
    for line, event in items:
        summary.count += 1
        if last_seq is not None and event.seq <= last_seq:
            report.error(path, line, "seq", f"seq {event.seq} does not increase (previous {last_seq})")
        else:
            last_seq = event.seq
        if event.t < last_t:
            report.error(path, line, "t", f"t {event.t} goes back from {last_t}")
        else:
            last_t = event.t
        kind = type(event)
        if kind is Opportunity:
            if event.opp in opportunities:
                report.error(path, line, "opportunity.opp", f"opportunity {event.opp!r} opened again (first at seq {opportunities[event.opp].seq})")
            if event.evidence_version < last_version:
                report.error(path, line, "opportunity.evidence_version", f"evidence version {event.evidence_version} goes back from {last_version}")
            last_version = max(last_version, event.evidence_version)
            opportunities[event.opp] = event
            if event.window_s is not None and not (math.isfinite(event.window_s) and event.window_s > 0):
                report.error(path, line, "opportunity.window_s", f"window_s {event.window_s} is not a positive number of seconds")
            if event.obs_id is not None:
                summary.obs_ids[event.obs_id] = line
        elif kind is Choice:
            opened = _opened(path, line, "choice", event.opp, event.seq, opportunities, report)
            if event.first and event.track == "native":
                if event.opp in first_native:
                    report.error(path, line, "choice.first", f"second first=true native choice for opportunity {event.opp!r}")
                first_native.add(event.opp)
            if opened is not None and event.evidence_version is not None and event.evidence_version != opened.evidence_version:
                report.error(path, line, "choice.evidence_version", f"choice carries evidence version {event.evidence_version}, opportunity {event.opp!r} has {opened.evidence_version}")
        elif kind is InterventionEvent:
            opened = _opened(path, line, "intervention", event.opp, event.seq, opportunities, report)
            if opened is not None and event.evidence_version != opened.evidence_version:
                report.error(path, line, "intervention.evidence_version", f"intervention bound to evidence version {event.evidence_version}, opportunity {event.opp!r} has {opened.evidence_version}")
        elif kind is Geometry or kind is StateReport:
            _opened(path, line, kind.__struct_config__.tag, event.opp, event.seq, opportunities, report)
        elif kind is Failure:
            failures.add(event.seq)
        elif kind is Recovery:
            if event.of_seq not in failures:
                report.error(path, line, "recovery.of_seq", f"no failure at seq {event.of_seq} before seq {event.seq}")
        elif kind is EpisodeStart:
            if open_episode is not None:
                report.error(path, line, "episode_start.episode", f"episode {event.episode} starts before episode {open_episode} ended")
            open_episode = event.episode
        elif kind is EpisodeEnd:
            if open_episode != event.episode:
                report.error(path, line, "episode_end.episode", f"episode {event.episode} ends but the open episode is {open_episode}")
            open_episode = None
    summary.open_episode = open_episode
    if open_episode is not None and summary.count:
        report.warn(path, None, "episode_end", f"episode {open_episode} has no episode_end (run interrupted?)")
    return summary


def _opened(path: str, line: int, kind: str, opp: str, seq: int, opportunities: dict[str, Opportunity], report: Report) -> Opportunity | None:
    opened = opportunities.get(opp)
    if opened is None:
        report.error(path, line, f"{kind}.opp", f"no opportunity {opp!r} before seq {seq}")
    return opened


def screen_events(events: list[Any]) -> EventLogSummary | None:
    """The rules of :func:`validate_events` over a whole decoded log at once: its summary
    when none of them finds anything, else None (the caller then walks the events one by
    one, which names each problem in order).

    Each rule is a pass over arrays or over the events of one type: ``seq`` increases and
    ``t`` never goes back (no k with ``seq[k] <= seq[k-1]`` or ``t[k] < t[k-1]``, the row
    rule's own comparisons, so a nan compares as it does there); opportunity ids are
    unique and their evidence versions never fall below -1 or the running maximum; every
    choice, intervention, geometry and state report names an opportunity opened on an
    earlier line; a recovery names a failure on an earlier line; episodes start and end
    in turn.  For example seq ``[0, 1, 1]`` gives None (the third line repeats seq 1),
    and a log of ``episode_start 0`` alone gives a summary with ``open_episode == 0``.
    """
    n = len(events)
    code = np.fromiter(map(_CODE.__getitem__, map(type, events)), np.int64, n)
    try:
        seq = np.fromiter(map(_SEQ, events), np.int64, n)
    except OverflowError:
        return None
    t = np.fromiter(map(_T, events), np.float64, n)
    if (seq[1:] <= seq[:-1]).any() or (t[1:] < t[:-1]).any():
        return None

    def of(kind: type) -> tuple[np.ndarray, list[Any]]:
        at = np.flatnonzero(code == _CODE[kind])
        return at, [events[i] for i in at.tolist()]

    summary = EventLogSummary()
    summary.count = n
    opp_at, opps = of(Opportunity)
    names = list(map(_OPP, opps))
    opened_at = dict(zip(names, opp_at.tolist()))
    if len(opened_at) != len(names):
        return None
    versions = np.fromiter(map(_VERSION, opps), np.int64, len(opps))
    if len(versions) and (versions[0] < -1 or (versions[1:] < versions[:-1]).any()):
        return None
    windows = np.array([w for w in map(_WINDOW, opps) if w is not None], dtype=np.float64)
    if not (np.isfinite(windows) & (windows > 0)).all():
        return None
    summary.opportunities = dict(zip(names, opps))
    summary.obs_ids = dict(zip(map(_OBS, opps), (opp_at + 1).tolist()))
    summary.obs_ids.pop(None, None)  # type: ignore[call-overload]  # an opportunity without an observation
    for kind in (Choice, InterventionEvent, Geometry, StateReport):
        at, bound = of(kind)
        before = np.fromiter(map(opened_at.get, map(_OPP, bound), repeat(n)), np.int64, len(bound))
        if (before >= at).any():
            return None
        if kind is Choice:
            native = [e.opp for e in bound if e.first and e.track == "native"]
            if len(set(native)) != len(native) or any(
                    e.evidence_version is not None and e.evidence_version != summary.opportunities[e.opp].evidence_version
                    for e in bound):
                return None
        elif kind is InterventionEvent and any(e.evidence_version != summary.opportunities[e.opp].evidence_version
                                               for e in bound):
            return None
    fail_at, failures = of(Failure)
    failed_at = dict(zip(map(_SEQ, failures), fail_at.tolist()))
    rec_at, recoveries = of(Recovery)
    if (np.fromiter(map(failed_at.get, map(_OF_SEQ, recoveries), repeat(n)), np.int64, len(recoveries)) >= rec_at).any():
        return None
    bounds = np.flatnonzero((code == _CODE[EpisodeStart]) | (code == _CODE[EpisodeEnd])).tolist()
    starts, ends = bounds[0::2], bounds[1::2]
    if any(type(events[i]) is not EpisodeStart for i in starts) or any(
            type(events[i]) is not EpisodeEnd or events[i].episode != events[j].episode for i, j in zip(ends, starts)):
        return None
    if len(starts) > len(ends):
        summary.open_episode = events[starts[-1]].episode
    return summary
