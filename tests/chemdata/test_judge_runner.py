"""The judge runner end to end against a chat-completions stand-in on 127.0.0.1."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')
from labrecord.chemdata.judge import CATEGORIES, check_judge
from labrecord.chemdata.judge_arithmetic import ReactionGrade, applicability, assemble_judgment
from labrecord.chemdata.judge_runner import JudgeConfig, judgment_path, parse_judgment, run_judging
from labrecord.chemdata.judge_rubric import RUBRIC, RUBRIC_VERSION
from labrecord.errors import LabrecordError
from labrecord.validation.findings import Report
from tests.chemdata.judge_server import SCRIPT, SECRET, JudgeServer, grades_a, write_benchmark


def config(url: str, **kw: Any) -> JudgeConfig:
    return JudgeConfig(endpoint=url, model="judge/vl:1", backoff_s=0.0, timeout_s=5.0, **kw)


def records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in out.rglob("*.json")}


def test_runner_end_to_end(tmp_path: Path) -> None:
    gold, pred = write_benchmark(tmp_path)
    out = tmp_path / "judgments"
    with JudgeServer(SCRIPT) as server:
        summary = run_judging(str(gold), str(pred), out, config(server.url))
        sent = [json.dumps(r) for r in server.requests]
        served = dict(server.served)
    assert (summary["judged"], summary["valid"], summary["failed"], summary["run_failures"]) == (4, 3, 1, 1)
    # C never reached the judge; B needed three attempts; D gave up after 1 + 2 retries
    assert served == {"A": 1, "B": 3, "D": 3}
    got = records(out)
    assert {k: (v["status"], v["origin"], len(v["attempts"])) for k, v in got.items()} == {
        "A": ("valid", "judge", 1), "B": ("valid", "judge", 3), "C": ("valid", "run_failure", 0), "D": ("failed", "judge", 3)}
    b = got["B"]["attempts"]
    assert (b[0]["http_status"], b[0]["error"]) == (503, f"HTTP 503 from {server.url}/chat/completions")
    assert b[1]["error"].startswith("judgment is not JSON") and b[2]["error"] is None
    d = got["D"]
    assert d["judgment"] is None and "no valid judgment after 3 attempt(s)" in d["error"]
    assert any("overall_score" in f for f in d["attempts"][0]["findings"])
    # provenance: model and rubric are kept, the path names both
    assert judgment_path(out, config(server.url), SECRET, "A").is_file()
    assert (got["A"]["judge_model"], got["A"]["rubric_version"]) == ("judge/vl:1", RUBRIC_VERSION)
    assert got["A"]["request"]["messages"][0]["content"] == RUBRIC
    assert "omitted_image" in json.dumps(got["A"]["request"])
    assert got["A"]["rule_based"] == {"n_gold": 2, "n_pred": 3, "matched_strict": 1, "matched_nonstereo": 2}
    assert got["C"]["judgment"]["overall_score"] == 0.0 and got["C"]["run_status"] == "timeout"
    # the judge sees the figure, reference and answer, never the run's metadata
    for body in sent:
        for leaked in (SECRET, "tool-log-entry", "wall_s", "provenance", "tool_read", "budget of 60 s"):
            assert leaked not in body
        assert "data:image/png;base64," in body


def test_rerun_skips_valid_judgments_and_asks_failed_ones_again(tmp_path: Path) -> None:
    gold, pred = write_benchmark(tmp_path)
    out = tmp_path / "judgments"
    with JudgeServer(SCRIPT) as server:
        run_judging(str(gold), str(pred), out, config(server.url))
        before = len(server.requests)
        summary = run_judging(str(gold), str(pred), out, config(server.url), workers=2)
        again = [json.dumps(r) for r in server.requests[before:]]
    assert (summary["skipped"], summary["judged"]) == (3, 1)
    assert len(again) == 3 and all('task_id \\"D\\"' in body for body in again)
    # another model, or a changed answer, is judged afresh
    with JudgeServer(SCRIPT) as server:
        other = run_judging(str(gold), str(pred), out, JudgeConfig(endpoint=server.url, model="other", backoff_s=0.0))
    assert other["skipped"] == 0 and other["judged"] == 4
    answer = json.loads((pred / "A.json").read_text())
    answer["reactions"].pop()
    (pred / "A.json").write_text(json.dumps(answer))
    with JudgeServer(SCRIPT) as server:
        changed = run_judging(str(gold), str(pred), out, config(server.url))
        assert server.served.get("A") == 1
    assert changed["skipped"] == 2


def test_a_timeout_is_retried(tmp_path: Path) -> None:
    gold, pred = write_benchmark(tmp_path)
    out = tmp_path / "judgments"
    script = {**SCRIPT, "A": [("sleep", 3.0), ("valid", grades_a)]}
    with JudgeServer(script) as server:
        run_judging(str(gold), str(pred), out, JudgeConfig(endpoint=server.url, model="m", timeout_s=0.5, backoff_s=0.0))
    a = records(out)["A"]
    assert a["status"] == "valid" and a["attempts"][0]["error"] == "no answer within 0.5s"


def test_unreachable_endpoint_gives_failed_records_for_every_figure(tmp_path: Path) -> None:
    gold, pred = write_benchmark(tmp_path)
    out = tmp_path / "judgments"
    with JudgeServer({}) as server:
        url = server.url
    summary = run_judging(str(gold), str(pred), out, JudgeConfig(endpoint=url, model="m", retries=0, backoff_s=0.0))
    got = records(out)
    assert summary["failed"] == 3 and len(got) == 4
    assert all(got[k]["error"].startswith("no valid judgment after 1 attempt(s): cannot reach") for k in "ABD")


def test_bad_options_are_refused(tmp_path: Path) -> None:
    gold, pred = write_benchmark(tmp_path)
    with pytest.raises(LabrecordError, match="--workers must be at least 1"):
        run_judging(str(gold), str(pred), tmp_path / "o", JudgeConfig(endpoint="http://x", model="m"), workers=0)
    with pytest.raises(LabrecordError, match="--retries must be 0 or more"):
        run_judging(str(gold), str(pred), tmp_path / "o", JudgeConfig(endpoint="http://x", model="m", retries=-1))


@pytest.mark.parametrize(("raw", "message"), [
    ("not json", "not a chat-completions answer"),
    (json.dumps({"choices": []}), "not a chat-completions answer"),
    (json.dumps({"choices": [{"message": {"content": None}}]}), "message content is NoneType"),
    (json.dumps({"choices": [{"message": {"content": "{\"a\": NaN}"}}]}), "judgment is not JSON"),
    (json.dumps({"choices": [{"message": {"content": "Here it is: {}"}}]}), "judgment is not JSON"),
])
def test_parse_judgment_refuses(raw: str, message: str) -> None:
    with pytest.raises(Exception, match=message):
        parse_judgment(raw)


def test_parse_judgment_accepts_one_fence() -> None:
    assert parse_judgment(json.dumps({"choices": [{"message": {"content": "```json\n{\"a\": 1}\n```"}}]})) == {"a": 1}


def test_assemble_judgment_hand_case() -> None:
    """One reference reaction with condition text and a yield, graded reactants 1,
    products 1, condition text 1, yield 0.5: applicable weights 0.25 + 0.30 + 0.10 + 0.09 =
    0.74, composite = (0.25 + 0.30 + 0.10 + 0.045) / 0.74 = 0.9392; one candidate, exact:
    precision 1; no extras: overall = 0.9392."""
    reference = {"reactions": [{"reactants": [{}], "products": [{}], "conditions": [{"text": "80 C"}], "yield": "80%"}]}
    judgment = assemble_judgment("B", reference, 1, [ReactionGrade(0, {"reactants": 1, "products": 1, "condition_text": 1,
                                                                       "yield": 0.5}, strict=True)])
    assert judgment["reaction_matches"][0]["composite_score"] == 0.9392
    assert judgment["overall_score"] == 0.9392 and judgment["reaction_precision"]["strict_stereo"] == 1.0
    assert judgment["image_category_scores"]["condition_molecules"] is None


score = st.floats(min_value=0, max_value=1, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans(), score, score, score), min_size=1,
                max_size=5), st.integers(min_value=0, max_value=4))
def test_assembled_judgments_always_pass_the_validator(rows: list[tuple[Any, ...]], extra: int) -> None:
    reactions, grades = [], []
    for i, (cm, ct, y, s, a, b, c) in enumerate(rows):
        reactions.append({"reactants": [{}], "products": [{}, {}],
                          "conditions": ([{"smiles": "O"}] if cm else []) + ([{"text": "rt"}] if ct else []),
                          "yield": "5%" if y else None, "selectivity": "9:1" if s else None})
        grades.append(ReactionGrade(i if a > 0.3 else None, {cat: v for cat, v in zip(CATEGORIES, (a, b, c, a, b, c))},
                                    strict=a > 0.9, nonstereo=a > 0.6))
    judgment = assemble_judgment("x", {"reactions": reactions}, len(rows) + extra, grades)
    report = Report()
    check_judge(judgment, report, "x")
    assert report.ok, [str(f) for f in report.errors]
    assert [applicability(r)["yield"] for r in reactions] == [y for _, _, y, *_ in rows]


def test_ray_executor_gives_the_same_verdicts(tmp_path: Path) -> None:
    ray = require_module("ray", 'pip install "labrecord[ray]"')
    gold, pred = write_benchmark(tmp_path)
    verdicts = []
    for executor, out in (("local", tmp_path / "local"), ("ray", tmp_path / "ray")):
        if executor == "ray":
            ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
        try:
            with JudgeServer(SCRIPT) as server:
                run_judging(str(gold), str(pred), out, config(server.url), executor=executor)
        finally:
            if executor == "ray":
                ray.shutdown()
        verdicts.append({k: (v["status"], len(v["attempts"]), v["judgment"]) for k, v in records(out).items()})
    assert verdicts[0] == verdicts[1]
