"""The trajectory of one figure's extraction: every input, tool call and model message.

A trajectory is a list of JSON-able events, written as ``trajectories/<figure_id>.ndjson``
beside the records.  Each event has ``seq`` (0, 1, …), ``t`` (seconds since the figure
started), ``kind`` (input | tool_call | model_message | failure | result) and its fields.
Tool calls carry ``tool``, ``args``, ``output``, ``elapsed_s`` and ``status`` (ok | error |
timeout).  The budget clock lives here too, so every tool call can be given the time that
is left.
"""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labrecord.fileio import atomic_write_bytes, dumps

#: a stage name for every failure, so the run summary can count failures per stage
STAGES = ("input", "recognition", "text", "layout", "arbitration", "association", "rgroup", "model", "budget")


class BudgetExceeded(Exception):
    """The figure's wall-clock budget ran out (the figure gets status ``timeout``)."""


class ToolFailed(Exception):
    """A tool exited non-zero, could not start or timed out (status ``failed``/``timeout``)."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


@dataclass
class Trajectory:
    """Events of one figure plus its budget clock (``budget_s`` seconds of wall time)."""

    figure_id: str
    budget_s: float
    events: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining(self) -> float:
        return self.budget_s - self.elapsed()

    def check_budget(self, stage: str) -> None:
        if self.remaining() <= 0:
            raise BudgetExceeded(f"budget of {self.budget_s:g}s used up before {stage}")

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"seq": len(self.events), "t": round(self.elapsed(), 6), "kind": kind, **fields}
        self.events.append(event)
        return event

    def failure(self, stage: str, kind: str, message: str, **fields: Any) -> dict[str, Any]:
        """Record a failure that does not stop the figure (one entry, one crop …)."""
        return self.add("failure", stage=stage, failure=kind, message=message, **fields)

    def run_tool(self, tool: str, argv: list[str], *, limit_s: float, stdin: bytes | None = None,
                 note: dict[str, Any] | None = None) -> str:
        """Run one external tool with the smaller of ``limit_s`` and the remaining budget.

        Returns stdout; raises :class:`ToolFailed` (recorded first) on a non-zero exit, a
        missing binary or a timeout, and :class:`BudgetExceeded` if no time is left.
        """
        self.check_budget(tool)
        timeout = max(0.01, min(limit_s, self.remaining()))
        began = time.monotonic()
        status, output, error = "ok", "", ""
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, check=False)
            output = done.stdout.decode("utf-8", "replace")
            error = done.stderr.decode("utf-8", "replace")[-2000:]
            if done.returncode != 0:
                status = "error"
                error = f"exit status {done.returncode}: {error.strip()[:500]}"
        except subprocess.TimeoutExpired:
            status, error = "timeout", f"no answer within {timeout:.3g}s"
        except OSError as exc:  # binary missing or not executable
            status, error = "error", f"cannot start {argv[0]!r}: {exc.strerror or exc}"
        self.add("tool_call", tool=tool, args=argv, **(note or {}), output=output, stderr=error,
                 elapsed_s=round(time.monotonic() - began, 6), status=status)
        if status != "ok":
            raise ToolFailed(f"{tool}: {error}", timeout=status == "timeout")
        return output

    def write(self, path: str | os.PathLike[str]) -> None:
        """One event per line, deterministic key order (atomic)."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, b"".join(dumps(e) + b"\n" for e in self.events))
