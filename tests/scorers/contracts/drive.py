"""Drive a contract's online tracker over measurement rows, as a recorder would."""
from __future__ import annotations

from typing import Any

from labrecord.models import ObservationReceipt


def run_tracker(contract: Any, instance: Any, rows: list[dict], obs_every: int = 50) -> list:
    """Step a tracker row by row, delivering an observation every ``obs_every`` rows; then
    the events judged at the episode's end; the tracker's end summary is the last item."""
    tracker = contract.tracker(instance)
    events: list = []
    for index, row in enumerate(rows):
        events += tracker.step(row)
        if index % obs_every == 0:
            opened = tracker.observe(ObservationReceipt(obs_id=f"obs{index}", step=row["step"], t_acquired=row["t"],
                                                        t_delivered=row["t"], evidence_version=index))
            if opened is not None:
                events.append(opened)
    return events + tracker.finish() + [tracker.end()]


def of_type(events: list, kind: str) -> list:
    return [e for e in events if not isinstance(e, dict) and e.type == kind]
