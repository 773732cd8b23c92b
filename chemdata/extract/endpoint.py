"""Client for an OpenAI-compatible chat-completions endpoint that returns an entry plan.

The request is one ``POST {base}/chat/completions`` (``base`` such as
``http://127.0.0.1:8000/v1``; a URL already ending in ``/chat/completions`` is used as
is) with ``temperature 0``, a system message stating the plan contract, and a user
message holding the tool readings as JSON plus the figure as a ``data:image/png;base64``
URL.  The answer's ``choices[0].message.content`` must be the plan as JSON (a fenced
```json block is accepted).  Every message is kept in the trajectory, the image as its
SHA-256 and size rather than its bytes.  An API key, when needed, is read from the
environment variable named by ``api_key_env`` and never written anywhere.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.request
from typing import Any

from labrecord.chemdata.extract.trajectory import ToolFailed, Trajectory

SYSTEM_PROMPT = """You extract concrete reaction records from a chemistry figure.
You are given the figure and the structures and text that tools already read from it.
Answer with one JSON object and nothing else:
{"reactions": [{"id": str, "step": int, "identifiers": [str], "yield": str|null,
                "reactants": [REF], "products": [REF]}],
 "scopes": [{"id": str, "reactant_templates": [reading id], "product_template": reading id,
             "entries": [{"id": str, "bindings": {"R1": "Me", "X": "I"}, "product": reading id|null}]}]}
REF is {"reading": "<reading id>"} for a structure the tool read, or {"smiles": "..."} only when
no reading fits (it will be marked model-written). Use scopes for templates with R-groups:
give printed bindings per entry, and "product" when the entry's product is drawn."""

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def chat_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/chat/completions") else f"{base}/chat/completions"


def build_request(model: str, image_png: bytes, readings: list[dict[str, Any]], text_lines: list[dict[str, Any]],
                  rule_plan: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request body (OpenAI vision message format)."""
    evidence = {"readings": readings, "text": text_lines, "rule_based_plan": rule_plan}
    image_url = "data:image/png;base64," + base64.b64encode(image_png).decode("ascii")
    return {"model": model, "temperature": 0, "messages": [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": [
            {"type": "text", "text": "Tool readings:\n" + json.dumps(evidence, sort_keys=True)},
            {"type": "image_url", "image_url": {"url": image_url}},
        ]},
    ]}


def _loggable(body: dict[str, Any], image_png: bytes) -> dict[str, Any]:
    """The request as kept in the trajectory: image bytes replaced by their digest."""
    digest = {"sha256": hashlib.sha256(image_png).hexdigest(), "bytes": len(image_png)}
    messages = json.loads(json.dumps(body["messages"]))
    for part in messages[1]["content"]:
        if part.get("type") == "image_url":
            part["image_url"] = {"omitted_image": digest}
    return {"model": body["model"], "temperature": body["temperature"], "messages": messages}


def parse_plan(content: str) -> dict[str, Any]:
    """The JSON object in a model answer; raises ValueError naming what was wrong."""
    fenced = _FENCE.search(content)
    text = fenced.group(1) if fenced else content
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError(f"no JSON object in the answer: {content[:120]!r}")
    plan = json.loads(text[start:end + 1])
    if not isinstance(plan, dict):
        raise ValueError("the answer's JSON is not an object")
    return plan


def request_plan(trajectory: Trajectory, url: str, model: str, image_png: bytes, readings: list[dict[str, Any]],
                 text_lines: list[dict[str, Any]], rule_plan: dict[str, Any], *, limit_s: float,
                 api_key_env: str | None = None) -> dict[str, Any]:
    """Ask the endpoint for an entry plan; raises :class:`ToolFailed` on any transport,
    HTTP or format problem (recorded in the trajectory first)."""
    trajectory.check_budget("model")
    body = build_request(model, image_png, readings, text_lines, rule_plan)
    target = chat_url(url)
    trajectory.add("model_message", role="request", url=target, body=_loggable(body, image_png))
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    timeout = max(0.01, min(limit_s, trajectory.remaining()))
    began = time.monotonic()
    try:
        request = urllib.request.Request(target, data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (user-given URL)
            raw = response.read()
        answer = json.loads(raw)
        content = answer["choices"][0]["message"]["content"]
    except TimeoutError as exc:
        _fail(trajectory, began, f"no answer within {timeout:.3g}s", timeout=True, cause=exc)
    except urllib.error.HTTPError as exc:
        _fail(trajectory, began, f"HTTP {exc.code} from {target}", cause=exc)
    except urllib.error.URLError as exc:
        is_timeout = isinstance(exc.reason, TimeoutError)
        _fail(trajectory, began, f"cannot reach {target}: {exc.reason}", timeout=is_timeout, cause=exc)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        _fail(trajectory, began, f"not a chat-completions answer: {exc}", cause=exc)
    trajectory.add("model_message", role="response", content=content, elapsed_s=round(time.monotonic() - began, 6))
    try:
        return parse_plan(content)
    except ValueError as exc:
        raise ToolFailed(f"model: {exc}") from None


def _fail(trajectory: Trajectory, began: float, message: str, *, timeout: bool = False, cause: Exception) -> None:
    trajectory.add("model_message", role="error", error=message, elapsed_s=round(time.monotonic() - began, 6))
    raise ToolFailed(f"model: {message}", timeout=timeout) from cause
