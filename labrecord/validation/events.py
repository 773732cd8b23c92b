"""Checks on the order and references of ``events.jsonl``."""
from __future__ import annotations

import math

import msgspec

from labrecord.models import (
    Choice, EpisodeEnd, EpisodeStart, Event, Failure, Geometry, InterventionEvent, Opportunity,
    Recovery, StateReport,
)
from labrecord.validation.findings import Report
from labrecord.validation.jsonl import KeptTexts, decode_jsonl

_decoder = msgspec.json.Decoder(Event)


class EventLogSummary:
    """What later cross-file checks need from a log."""

    def __init__(self) -> None:
        self.opportunities: dict[str, Opportunity] = {}
        self.obs_ids: dict[str, int] = {}
        self.count = 0


def validate_events(path: str, data: bytes, report: Report, *, interrupted: bool = False,
                    keep: KeptTexts | None = None) -> EventLogSummary:
    """Validate one events log; every problem is added to ``report``.

    ``interrupted``: the run is still marked ``running`` (its writer never closed it), so
    a cut last line and an open last episode are warnings.  ``keep`` receives the
    canonical text of each decoded event (:func:`~labrecord.validation.jsonl.decode_jsonl`).
    """
    summary = EventLogSummary()
    opportunities = summary.opportunities
    first_native: set[str] = set()
    failures: set[int] = set()
    last_seq: int | None = None
    last_t = float("-inf")
    last_version = -1
    open_episode: int | None = None
    for line, event in decode_jsonl(path, data, _decoder, report, interrupted=interrupted, keep=keep):
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
    if open_episode is not None and summary.count:
        report.warn(path, None, "episode_end", f"episode {open_episode} has no episode_end (run interrupted?)")
    return summary


def _opened(path: str, line: int, kind: str, opp: str, seq: int, opportunities: dict[str, Opportunity], report: Report) -> Opportunity | None:
    opened = opportunities.get(opp)
    if opened is None:
        report.error(path, line, f"{kind}.opp", f"no opportunity {opp!r} before seq {seq}")
    return opened
