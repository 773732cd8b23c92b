"""An OpenAI-compatible chat-completions stand-in on 127.0.0.1 that plays recorded judge answers.

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
from typing import Any

from labrecord.chemdata.judge_arithmetic import assemble_judgment

Behaviour = tuple[str, Any]


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
