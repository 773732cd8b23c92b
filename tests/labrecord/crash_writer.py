"""A run writer that is killed (SIGKILL) part-way; driven by tests/labrecord/test_crash_safety.py.

Usage: python crash_writer.py ROOT KILL_AT_OP KILL_AFTER_S

Writes ``EPISODES`` episodes (receipts, opportunities naming them, choices, confirmations,
online scores) and measurements through :class:`RunWriter`.  It kills itself just before
operation number KILL_AT_OP (-1: never), or from a timer thread after KILL_AFTER_S seconds
(negative: no timer), which lands anywhere, inside a write included.  After each episode
end returns, its number is appended to ROOT/progress : that episode must survive.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

EPISODES = 4
OPPORTUNITIES = 3


def main(root: Path, kill_at: int, kill_after: float) -> None:
    from labrecord.examples import example_manifest
    from labrecord.measurements import COMMON_COLUMNS, FAMILY_COLUMNS
    from labrecord.models import (
        Choice, Confirm, EpisodeEnd, EpisodeStart, ObservationReceipt, OnlineScore, Operation, Opportunity,
    )
    from labrecord.rundir import RunWriter

    if kill_after >= 0:
        threading.Timer(kill_after, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
    count = 0

    def op() -> None:
        nonlocal count
        if count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        count += 1

    progress = os.open(root / "progress", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    op()
    run = RunWriter.create(root, example_manifest("crash"))
    legal = [Operation("add", "w20", "pan")]
    t = 0.0
    for episode in range(EPISODES):
        op()
        run.emit(EpisodeStart, t=t, episode=episode)
        for index in range(OPPORTUNITIES):
            obs_id = f"obs{episode}-{index}"
            op()
            run.observation(ObservationReceipt(obs_id=obs_id, step=int(t * 10), t_acquired=t, t_delivered=t,
                                               evidence_version=episode * OPPORTUNITIES + index, channels=["display"]))
            op()
            run.emit(Opportunity, t=t, opp=f"o{episode}-{index}", decision=f"d{index}", trigger="initial",
                     legal=legal, obs_id=obs_id, evidence_version=episode * OPPORTUNITIES + index, window_s=5.0)
            op()
            run.emit(Choice, t=t + 0.5, opp=f"o{episode}-{index}", op=legal[0], recognizer="grasp", first=True)
            op()
            run.emit(Confirm, t=t + 1.0, obligation=f"d{index}", op=legal[0], predicate="supported", measured={"load_g": 20.0})
            op()
            run.online_score(OnlineScore(t=t + 1.0, seq=run.next_seq - 1))
            t += 2.0
        op()
        run.emit(EpisodeEnd, t=t, episode=episode, reason="success", physical_complete=True, valid_complete=True)
        os.write(progress, f"{episode}\n".encode())  # the kernel keeps it through SIGKILL
        t += 1.0
    op()
    import pyarrow as pa

    columns = {**COMMON_COLUMNS, **FAMILY_COLUMNS["weighing"]}
    steps = list(range(int(t * 10)))
    kinds = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    data = {name: [(s if kind == "int" else s / 10 if kind == "float" else False) for s in steps] for name, kind in columns.items()}
    run.write_measurements(pa.table({name: pa.array(values, kinds[columns[name]]) for name, values in data.items()}))
    op()
    run.close()
    op()
    os._exit(0)  # the timer thread must not keep a finished writer alive


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
