"""The judge test bench: four gold figures with one system's answers, and an
OpenAI-compatible chat-completions stand-in on 127.0.0.1 that plays recorded judge answers.

``script[task_id]`` is a list of behaviours, one per request for that figure (the last one
repeats): ``("valid", grades_fn)`` answers with :func:`assemble_judgment` of the request's
own reference, graded by ``grades_fn(reference, candidate)``; ``("json", obj)`` answers
with ``obj`` as the message content; ``("text", s)`` with raw content ``s``; ``("status",
code)`` with that HTTP status; ``("sleep", seconds)`` answers only after ``seconds``.
Every request body is kept in ``requests``.
"""
from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from labrecord.chemdata.judge_arithmetic import ReactionGrade, assemble_judgment

Behaviour = tuple[str, Any]

SECRET = "secret-agent-v9"


def mol(smiles: str) -> dict[str, Any]:
    return {"smiles": smiles, "provenance": {"origin": "tool_read", "region": "r1"}}


def write_benchmark(root: Path) -> tuple[Path, Path]:
    """Four gold figures and one system's answers.

    A: two reactions (r2 stereo), answered with r1 exact, r2 inverted, one extra reaction.
    B: one reaction with condition text and a yield, answered exactly (yield 70 % for 80 %).
    C: one reaction, the system timed out.
    D: one reaction answered exactly (the judge will never answer it validly).
    """
    from PIL import Image

    gold, pred = root / "gold", root / "pred"
    gold.mkdir()
    pred.mkdir()
    refs = {
        "A": [{"reactants": [mol("CCO")], "products": [mol("CC=O")]},
              {"reactants": [mol("C[C@H](N)O")], "products": [mol("C[C@H](N)OC")]}],
        "B": [{"reactants": [mol("Brc1ccccc1")], "products": [mol("c1ccc(-c2ccccc2)cc1")],
               "conditions": [{"role": "temperature", "text": "80 °C"}], "yield": "80%"}],
        "C": [{"reactants": [mol("CC(=O)O"), mol("OCC")], "products": [mol("CCOC(C)=O")]}],
        "D": [{"reactants": [mol("CCN")], "products": [mol("CCNC(C)=O")]}],
    }
    answers = {
        "A": [{"reactants": [mol("OCC")], "products": [mol("O=CC")]},
              {"reactants": [mol("C[C@@H](N)O")], "products": [mol("C[C@@H](N)OC")]},
              {"reactants": [mol("c1ccccc1")], "products": [mol("Cc1ccccc1")]}],
        "B": [{"reactants": [mol("Brc1ccccc1")], "products": [mol("c1ccc(-c2ccccc2)cc1")],
               "conditions": [{"role": "temperature", "text": "80 C"}], "yield": "70%"}],
        "D": refs["D"],
    }
    for figure_id, reactions in refs.items():
        doc = {"schema": "labrecord.rxn/1", "figure_id": figure_id, "system": "gold", "status": "ok", "reactions": reactions}
        (gold / f"{figure_id}.json").write_text(json.dumps(doc))
        Image.new("RGB", (40, 20), "white").save(gold / f"{figure_id}.png")
    for figure_id, reactions in answers.items():
        doc = {"schema": "labrecord.rxn/1", "figure_id": figure_id, "system": SECRET, "status": "ok", "reactions": reactions,
               "timing": {"wall_s": 12.5}, "extra": {"trajectory": "trajectories/tool-log-entry.ndjson"}}
        (pred / f"{figure_id}.json").write_text(json.dumps(doc))
    (pred / "C.json").write_text(json.dumps({"schema": "labrecord.rxn/1", "figure_id": "C", "system": SECRET,
                                             "status": "timeout", "error": "budget of 60 s spent", "reactions": []}))
    return gold, pred


def grades_a(reference: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    return {"grades": [ReactionGrade(0, {"reactants": 1.0, "products": 1.0}, strict=True),
                       ReactionGrade(1, {"reactants": 1.0, "products": 0.8}, nonstereo=True)]}


def grades_b(reference: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    return {"grades": [ReactionGrade(0, {"reactants": 1.0, "products": 1.0, "condition_text": 1.0, "yield": 0.5}, strict=True)]}


def grades_d(reference: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    return {"grades": [ReactionGrade(0, {"reactants": 1.0, "products": 1.0}, strict=True)]}


def broken(grades_fn: Any) -> dict[str, Any]:
    """A judgment whose overall score disagrees with its own arithmetic."""
    judgment = assemble_judgment("D", {"reactions": [{"reactants": [{}], "products": [{}]}]}, 1, **grades_fn({}, {}))
    judgment["overall_score"] = 0.25
    return judgment


SCRIPT = {
    "A": [("valid", grades_a)],
    "B": [("status", 503), ("text", "{'not': json"), ("valid", grades_b)],
    "D": [("json", broken(grades_d))],
}



def request_parts(body: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(task_id, reference, candidate) from a judge request body."""
    text = body["messages"][1]["content"][0]["text"]
    reference = json.loads(text.split("REFERENCE:\n", 1)[1].split("\n\nCANDIDATE:\n", 1)[0])
    candidate = json.loads(text.split("\n\nCANDIDATE:\n", 1)[1].split("\n\nUse task_id ", 1)[0])
    task_id = json.loads(re.search(r"Use task_id (\".*\")\.$", text).group(1))  # type: ignore[union-attr]
    return task_id, reference, candidate


class JudgeServer:
    def __init__(self, script: dict[str, list[Behaviour]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.served: dict[str, int] = {}
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, content = outer.answer(self.path, body)
                if status is None:
                    return
                data = content.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout case)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int | None, str]:
        if path != "/v1/chat/completions":
            return 404, json.dumps({"error": f"no route {path}"})
        task_id, reference, candidate = request_parts(body)
        with self._lock:
            self.requests.append(body)
            n = self.served.get(task_id, 0)
            self.served[task_id] = n + 1
        behaviours = self.script[task_id]
        kind, value = behaviours[min(n, len(behaviours) - 1)]
        if kind == "status":
            return value, json.dumps({"error": {"message": "server unavailable"}})
        if kind == "sleep":
            time.sleep(value)
            kind, value = "valid", behaviours[-1][1]
        if kind == "valid":
            grades_fn: Callable[..., Any] = value
            n_candidates = len(candidate["reactions"])
            value = assemble_judgment(task_id, reference, n_candidates, **grades_fn(reference, candidate))
            kind = "json"
        content = json.dumps(value) if kind == "json" else value
        return 200, json.dumps({"id": "cmpl-1", "object": "chat.completion", "model": body["model"],
                                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                             "finish_reason": "stop"}]})

    def __enter__(self) -> JudgeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()
