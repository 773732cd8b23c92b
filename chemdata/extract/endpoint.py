"""Client for an OpenAI-compatible chat-completions endpoint that takes over extraction stages.

The model can take over any of :data:`MODEL_STAGES` (``--model-stages``):

* ``layout`` — :func:`request_layout`: the figure in, ``{"segments": [{"kind", "box"}]}``
  out (kinds of :class:`labrecord.chemdata.extract.layout.Segment`); rows are formed from
  the boxes by the same banding rule as the rule-based layout;
* ``recognition`` — :func:`request_readings`: the figure and the structure regions in,
  ``{"structures": [{"region", "smiles", "confidence"?}]}`` out (R-group labels written as
  ``[R1]``, ``[Ar]`` …); molecules from these readings are ``model_written``;
* ``association`` — :func:`request_plan`: the readings, text and rule-based plan in, the
  entry plan out (below).

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
from typing import Any

from labrecord.chemdata import judge_http
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

LAYOUT_PROMPT = """You lay out a chemistry figure for reaction extraction.
Answer with one JSON object and nothing else:
{"segments": [{"kind": "structure"|"arrow"|"arrow_v"|"plus"|"text"|"rule", "box": [x0, y0, x1, y1]}]}
Boxes are in pixels of the figure (x to the right, y down, inclusive). "arrow" is a horizontal
reaction arrow, "arrow_v" a vertical one, "rule" a table or footnote line; every drawn chemical
structure (with its atom labels) is one "structure"; printed lines are "text"."""

RECOGNITION_PROMPT = """You read chemical structures from a figure.
You are given the figure and the regions where structures are drawn.
Answer with one JSON object and nothing else:
{"structures": [{"region": "<region id>", "smiles": "...", "confidence": 0..1}]}
Write one SMILES per region you can read (leave out a region you cannot read). Write
R-group and variable labels as bracket atoms: [R1], [R2], [R'], [Ar], [X], [Y]."""

#: the stages a model endpoint can take over, in pipeline order
MODEL_STAGES = ("layout", "recognition", "association")
_KINDS = ("structure", "arrow", "arrow_v", "plus", "text", "rule")

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def chat_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/chat/completions") else f"{base}/chat/completions"


def parse_stages(text: str | None) -> tuple[str, ...]:
    """``"layout,recognition"`` -> the stages in pipeline order; an unknown name raises
    ValueError naming it and the known ones."""
    names = [part.strip() for part in (text or "").split(",") if part.strip()]
    unknown = [name for name in names if name not in MODEL_STAGES]
    if unknown:
        raise ValueError(f"unknown model stage {unknown[0]!r} (known: {', '.join(MODEL_STAGES)})")
    return tuple(stage for stage in MODEL_STAGES if stage in names)


def build_request(model: str, image_png: bytes, readings: list[dict[str, Any]], text_lines: list[dict[str, Any]],
                  rule_plan: dict[str, Any]) -> dict[str, Any]:
    """The association request body (OpenAI vision message format)."""
    evidence = {"readings": readings, "text": text_lines, "rule_based_plan": rule_plan}
    return build_stage_request(model, SYSTEM_PROMPT, "Tool readings", evidence, image_png)


def build_stage_request(model: str, system: str, heading: str, evidence: dict[str, Any],
                        image_png: bytes) -> dict[str, Any]:
    """A chat-completions body: the stage's contract, the evidence as JSON, the figure."""
    image_url = "data:image/png;base64," + base64.b64encode(image_png).decode("ascii")
    return {"model": model, "temperature": 0, "messages": [
        {"role": "system", "content": system},
        {"role": "user", "content": [
            {"type": "text", "text": f"{heading}:\n" + json.dumps(evidence, sort_keys=True)},
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
    body = build_request(model, image_png, readings, text_lines, rule_plan)
    return _ask(trajectory, url, body, image_png, limit_s=limit_s, api_key_env=api_key_env, stage="association")


def request_layout(trajectory: Trajectory, url: str, model: str, image_png: bytes, size: tuple[int, int],
                   text_lines: list[dict[str, Any]], *, limit_s: float,
                   api_key_env: str | None = None) -> list[tuple[str, tuple[int, int, int, int]]]:
    """Ask the endpoint for the figure's layout: ``[(kind, box)]`` with boxes clipped to
    the figure (``size`` = width, height).  An unknown kind or a malformed box is a
    :class:`ToolFailed`, never dropped silently."""
    evidence = {"width": size[0], "height": size[1], "text": text_lines}
    items = _ask_list(trajectory, url, build_stage_request(model, LAYOUT_PROMPT, "Figure", evidence, image_png),
                      image_png, "segments", limit_s=limit_s, api_key_env=api_key_env, stage="layout")
    found = []
    for item in items:
        kind = item.get("kind") if isinstance(item, dict) else None
        if kind not in _KINDS:
            raise ToolFailed(f"model: layout segment kind {kind!r} is not one of {', '.join(_KINDS)}")
        found.append((str(kind), _box(item.get("box"), size)))
    return found


def request_readings(trajectory: Trajectory, url: str, model: str, image_png: bytes,
                     regions: dict[str, tuple[int, int, int, int]], text_lines: list[dict[str, Any]], *,
                     limit_s: float, api_key_env: str | None = None) -> list[tuple[str, str, float]]:
    """Ask the endpoint to read the structures in ``regions`` (id -> box): ``[(region id,
    SMILES, confidence)]``.  A reading of an unknown region or without a SMILES string is
    a :class:`ToolFailed`."""
    evidence = {"regions": {k: list(v) for k, v in regions.items()}, "text": text_lines}
    body = build_stage_request(model, RECOGNITION_PROMPT, "Structure regions", evidence, image_png)
    items = _ask_list(trajectory, url, body, image_png, "structures", limit_s=limit_s, api_key_env=api_key_env,
                      stage="recognition")
    found = []
    for item in items:
        if not isinstance(item, dict) or item.get("region") not in regions or not isinstance(item.get("smiles"), str):
            raise ToolFailed(f"model: recognition item {str(item)[:80]!r} names no known region with a SMILES string")
        confidence = item.get("confidence", 1.0)
        if not isinstance(confidence, (int, float)) or isinstance(confidence, bool):
            raise ToolFailed(f"model: recognition confidence {confidence!r} is not a number")
        found.append((str(item["region"]), item["smiles"], float(confidence)))
    return found


def _box(value: Any, size: tuple[int, int]) -> tuple[int, int, int, int]:
    if not (isinstance(value, list) and len(value) == 4 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                                for v in value)):
        raise ToolFailed(f"model: a box must be [x0, y0, x1, y1], got {str(value)[:60]!r}")
    x0, y0, x1, y1 = (int(round(v)) for v in value)
    x0, x1 = sorted((max(0, min(size[0] - 1, x0)), max(0, min(size[0] - 1, x1))))
    y0, y1 = sorted((max(0, min(size[1] - 1, y0)), max(0, min(size[1] - 1, y1))))
    return x0, y0, x1, y1


def _ask_list(trajectory: Trajectory, url: str, body: dict[str, Any], image_png: bytes, key: str, *, limit_s: float,
              api_key_env: str | None, stage: str) -> list[Any]:
    """Send one request whose answer must hold a list under ``key``; that list."""
    items = _ask(trajectory, url, body, image_png, limit_s=limit_s, api_key_env=api_key_env, stage=stage).get(key)
    if not isinstance(items, list):
        raise ToolFailed(f"model: {stage} answer has no {key!r} list")
    return items


def _ask(trajectory: Trajectory, url: str, body: dict[str, Any], image_png: bytes, *, limit_s: float,
         api_key_env: str | None, stage: str) -> dict[str, Any]:
    """Send one request; the answer's JSON object (``ToolFailed`` on any problem)."""
    trajectory.check_budget("model")
    target = chat_url(url)
    trajectory.add("model_message", role="request", stage=stage, url=target, body=_loggable(body, image_png))
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    timeout = max(0.01, min(limit_s, trajectory.remaining()))
    began = time.monotonic()
    try:
        # the judge's client: one total deadline, a size cap, no redirect (the key goes
        # only to the endpoint the user named)
        _status, raw = judge_http.post(target, json.dumps(body).encode(), headers, timeout_s=timeout)
    except judge_http.EndpointError as exc:
        message = f"no answer within {timeout:.3g}s" if exc.timeout else str(exc)
        _fail(trajectory, began, message, timeout=exc.timeout, cause=exc)
    try:
        answer = json.loads(raw)
        content = answer["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
        _fail(trajectory, began, f"not a chat-completions answer: {type(exc).__name__}", cause=exc)
    trajectory.add("model_message", role="response", stage=stage, content=content, elapsed_s=round(time.monotonic() - began, 6))
    try:
        return parse_plan(content)
    except ValueError as exc:
        raise ToolFailed(f"model: {exc}") from None


def _fail(trajectory: Trajectory, began: float, message: str, *, timeout: bool = False, cause: Exception) -> None:
    trajectory.add("model_message", role="error", error=message, elapsed_s=round(time.monotonic() - began, 6))
    raise ToolFailed(f"model: {message}", timeout=timeout) from cause
