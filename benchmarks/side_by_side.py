"""Timing an import against the reader a user would otherwise run, side by side in one run.

:func:`compare` times each baseline and the import in turn, ``repeat`` times (so a burst of
load on a shared machine hits both sides alike), prints one JSON line per repeat and a
last line with the range of every ratio baseline / import and the target it is held to.
One untimed round runs first, so that loading modules and reading the source into the
page cache for the first time are charged to neither side.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

#: ``labrecord import`` should run at no less than half the speed of the source's own reader
TARGET = 0.5


def compare(baselines: dict[str, Callable[[int], Any]], run_import: Callable[[int], Any], *, repeat: int,
            target: str | None, extra: dict[str, Any] | None = None) -> list[dict[str, float]]:
    """Time ``baselines`` (name -> ``f(repeat_index)``) and ``run_import(repeat_index)``
    alternately, after one untimed round (index -1); ``target`` names the baseline the ≥ 0.5 target is measured against
    (None: no baseline here is the source's own reader, so none is claimed)."""
    for baseline in baselines.values():
        baseline(-1)
    run_import(-1)
    rows: list[dict[str, float]] = []
    for index in range(repeat):
        row: dict[str, float] = {}
        for name, baseline in baselines.items():
            start = time.perf_counter()
            baseline(index)
            row[f"{name}_s"] = round(time.perf_counter() - start, 4)
        start = time.perf_counter()
        run_import(index)
        row["import_s"] = round(time.perf_counter() - start, 4)
        for name in baselines:
            row[f"ratio_{name}"] = round(row[f"{name}_s"] / row["import_s"], 4)
        rows.append(row)
        print(json.dumps({"repeat": index, **(extra or {}), **row}), flush=True)
    summary: dict[str, Any] = {**(extra or {}), "repeats": repeat}
    for key in rows[0]:
        values = [row[key] for row in rows]
        summary[key] = [min(values), max(values)]
    if target is not None:
        low, high = summary[f"ratio_{target}"]
        summary["target"] = f"ratio_{target} >= {TARGET}"
        summary["target_met"] = "all repeats" if low >= TARGET else ("some repeats" if high >= TARGET else "no")
    print(json.dumps(summary), flush=True)
    return rows
