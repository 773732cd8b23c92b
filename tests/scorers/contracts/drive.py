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


def display_chain(t: Any, force_n: Any, valid: Any, f_empty_n: float, g0: float, thresholds: Any) -> tuple[Any, Any]:
    """Eq. 8–9 and the stability flag of a pan-force series through the weighing
    contract's feature kernel (the production path): ``(m_bar, stable)`` (n,) for a pan
    with nothing else touching or moving."""
    import numpy as np

    from labrecord.scorers.contracts.weighing import STANDARDS, WeighingContract, WeighingInstance

    n = len(t)
    still, off = np.zeros(n), np.zeros(n, dtype=bool)
    columns: dict[str, Any] = {"step": np.arange(n), "t": np.asarray(t, dtype=np.float64),
                               "pan_force_n": np.asarray(force_n, dtype=np.float64),
                               "sensor_ok": np.asarray(valid, dtype=bool), "pan_speed": still, "hand_pan_contact": off}
    for w in STANDARDS:
        columns.update({f"{w}_on_pan": off, f"{w}_contact": off, f"{w}_grasped": off, f"{w}_speed": still})
    instance = WeighingInstance(target_g=0.0, sample_g=0.0, goal=frozenset(), f_empty_n=f_empty_n, g0=g0)
    f = WeighingContract(thresholds).stepper(instance).push_block(columns)
    return f["m_bar"], f["stable"]
