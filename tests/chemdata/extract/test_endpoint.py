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


def test_a_redirect_is_refused_and_the_key_goes_nowhere_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """The extraction endpoint uses the judge's client: a 307 is a tool failure, not followed,
    so the one request the server saw is the only place the key went."""
    monkeypatch.setenv("TEST_KEY", "secret-token")
    with model_server(lambda body: (307, "{}")) as (url, received):
        with pytest.raises(ToolFailed, match="redirect"):
            ask(url, Trajectory("fig", 60), api_key_env="TEST_KEY")
    assert len(received) == 1


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


def test_parse_stages_orders_and_refuses_unknown_names() -> None:
    from labrecord.chemdata.extract.endpoint import parse_stages

    assert parse_stages("recognition, layout") == ("layout", "recognition")
    assert parse_stages("association") == ("association",)
    with pytest.raises(ValueError, match="unknown model stage 'ocr'"):
        parse_stages("layout,ocr")


@given(st.lists(st.sampled_from(["layout", "recognition", "association"])))
def test_parse_stages_is_the_pipeline_order_of_any_selection(names: list[str]) -> None:
    from labrecord.chemdata.extract.endpoint import MODEL_STAGES, parse_stages

    assert parse_stages(",".join(names)) == tuple(s for s in MODEL_STAGES if s in names)


def test_layout_and_readings_round_trip() -> None:
    from labrecord.chemdata.extract.endpoint import request_layout, request_readings

    def answer(body: dict) -> tuple[int, str]:
        system = body["messages"][0]["content"]
        if "lay out" in system:
            return 200, json.dumps({"segments": [{"kind": "structure", "box": [5, 6, 50, 60]},
                                                 {"kind": "arrow", "box": [70, 30, 130.4, 36]},
                                                 {"kind": "text", "box": [-5, 90, 999, 95]}]})
        regions = json.loads(body["messages"][1]["content"][0]["text"].split("\n", 1)[1])["regions"]
        return 200, json.dumps({"structures": [{"region": r, "smiles": "CCO", "confidence": 0.5} for r in regions]})

    with model_server(answer) as (url, received):
        trajectory = Trajectory("fig", 60)
        layout = request_layout(trajectory, url, "vl", IMAGE, (200, 100), [], limit_s=10)
        readings = request_readings(trajectory, url, "vl", IMAGE, {"s0": (5, 6, 50, 60)}, [], limit_s=10)
    # boxes are rounded and clipped to the 200 x 100 figure
    assert layout == [("structure", (5, 6, 50, 60)), ("arrow", (70, 30, 130, 36)), ("text", (0, 90, 199, 95))]
    assert readings == [("s0", "CCO", 0.5)]
    assert [e["stage"] for e in trajectory.events if e["kind"] == "model_message"] == ["layout"] * 2 + ["recognition"] * 2


@pytest.mark.parametrize("content", ['{"segments": [{"kind": "molecule", "box": [0, 0, 1, 1]}]}',
                                     '{"segments": [{"kind": "arrow", "box": [0, 0, 1]}]}', '{"boxes": []}'])
def test_malformed_layout_is_a_tool_failure(content: str) -> None:
    from labrecord.chemdata.extract.endpoint import request_layout

    with model_server(lambda body: (200, content)) as (url, _):
        with pytest.raises(ToolFailed, match="model: "):
            request_layout(Trajectory("fig", 60), url, "vl", IMAGE, (10, 10), [], limit_s=10)


@pytest.mark.parametrize("content", ['{"structures": [{"region": "s9", "smiles": "C"}]}',
                                     '{"structures": [{"region": "s0"}]}',
                                     '{"structures": [{"region": "s0", "smiles": "C", "confidence": "high"}]}'])
def test_malformed_readings_are_a_tool_failure(content: str) -> None:
    from labrecord.chemdata.extract.endpoint import request_readings

    with model_server(lambda body: (200, content)) as (url, _):
        with pytest.raises(ToolFailed, match="model: "):
            request_readings(Trajectory("fig", 60), url, "vl", IMAGE, {"s0": (0, 0, 5, 5)}, [], limit_s=10)
