"""Tests for chemdata/extract/endpoint.py against a local chat-completions server."""
from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, strategies as st

from labrecord.chemdata.extract.endpoint import chat_url, parse_plan, request_plan
from labrecord.chemdata.extract.trajectory import ToolFailed, Trajectory

from .modelserver import model_server

PLAN = {"reactions": [{"id": "r1", "reactants": [{"reading": "m1"}], "products": [{"reading": "m2"}]}]}
IMAGE = b"\x89PNG fake image bytes"


def ask(url: str, trajectory: Trajectory, **kwargs: object) -> dict:
    return request_plan(trajectory, url, "test-vl", IMAGE, [{"id": "m1", "smiles": "CCO"}], [{"text": "1a"}],
                        {"reactions": []}, limit_s=10, **kwargs)  # type: ignore[arg-type]


def test_plan_round_trip_and_request_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_KEY", "secret-token")
    with model_server(lambda body: (200, "Here:\n```json\n" + json.dumps(PLAN) + "\n```")) as (url, received):
        trajectory = Trajectory("fig", 60)
        assert ask(url, trajectory, api_key_env="TEST_KEY") == PLAN
    (request,) = received
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer secret-token"
    body = request["body"]
    assert body["model"] == "test-vl" and body["temperature"] == 0
    text, image = body["messages"][1]["content"]
    assert json.loads(text["text"].split("\n", 1)[1])["readings"] == [{"id": "m1", "smiles": "CCO"}]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(IMAGE).decode()
    roles = [e["role"] for e in trajectory.events if e["kind"] == "model_message"]
    assert roles == ["request", "response"]
    logged = json.dumps(trajectory.events)
    assert "secret-token" not in logged and base64.b64encode(IMAGE).decode() not in logged
    assert '"omitted_image"' in logged


def test_http_error_is_a_tool_failure() -> None:
    with model_server(lambda body: (500, "overloaded")) as (url, _):
        trajectory = Trajectory("fig", 60)
        with pytest.raises(ToolFailed, match="HTTP 500"):
            ask(url, trajectory)
    assert trajectory.events[-1]["role"] == "error"


def test_answer_without_json_is_a_tool_failure() -> None:
    with model_server(lambda body: (200, "I cannot see the figure.")) as (url, _):
        with pytest.raises(ToolFailed, match="no JSON object"):
            ask(url, Trajectory("fig", 60))


def test_unreachable_endpoint_is_a_tool_failure() -> None:
    with model_server(lambda body: (200, "{}")) as (url, _):
        pass  # the server is shut down: nothing listens on that port any more
    with pytest.raises(ToolFailed, match="cannot reach"):
        ask(url, Trajectory("fig", 60))


@pytest.mark.parametrize(("base", "expected"), [("http://h:1/v1", "http://h:1/v1/chat/completions"),
                                                ("http://h:1/v1/", "http://h:1/v1/chat/completions"),
                                                ("http://h:1/v1/chat/completions", "http://h:1/v1/chat/completions")])
def test_chat_url(base: str, expected: str) -> None:
    assert chat_url(base) == expected


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.integers(), max_size=4), st.text(max_size=20).filter(lambda t: "{" not in t and "}" not in t))
def test_parse_plan_finds_the_object_in_any_wrapping(plan: dict, chatter: str) -> None:
    assert parse_plan(chatter + json.dumps(plan) + chatter) == plan
