"""Judge aggregation (Table 7 columns): a hand-worked example through the runner, the
corpus tables and the command line."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')
from labrecord.chemdata.judge_runner import JudgeConfig, run_judging
from labrecord.chemdata.judge_stats import load_judgments, stats_for_path, summarize_group
from labrecord.cli import main
from labrecord.errors import LabrecordError
from labrecord.store.schema import RXN_JUDGMENTS
from tests.chemdata.judge_server import SCRIPT, SECRET, JudgeServer, write_benchmark


@pytest.fixture()
def judged(tmp_path: Path) -> Path:
    gold, pred = write_benchmark(tmp_path)
    out = tmp_path / "judgments"
    with JudgeServer(SCRIPT) as server:
        run_judging(str(gold), str(pred), out, JudgeConfig(endpoint=server.url, model="judge-vl", backoff_s=0.0))
    return out


def test_hand_worked_three_figures_and_a_failed_judgment(judged: Path) -> None:
    """Figures A, B, C have valid judgments, D's judge never answered validly.

    A: two reference reactions (reactants and products apply), three candidates: r1 exact
       (1, 1), r2 stereo inverted (reactants 1, products 0.8: composite (0.25 + 0.24) / 0.55
       = 0.8909), one extra.  Unadjusted (1 + 0.8909) / 2 = 0.94545, factor 2 / 3:
       Overall 0.6303.  RP strict 1/3 = 0.3333, stereo-blind 2/3 = 0.6667.  Rule-based: 1 of
       2 gold matched strictly, 2 of 2 stereo-blind, so RR 0.5 and 1.  RF1 strict
       2 * 0.3333 * 0.5 / 0.8333 = 0.4000, blind 2 * 0.6667 * 1 / 1.6667 = 0.8000.
       Category means: reactants 1, products 0.9.
    B: one reaction with condition text and yield, graded 1, 1, 1, 0.5:
       composite = Overall = 0.695 / 0.74 = 0.9392; RP 1, RR 1, RF1 1.
    C: the system timed out: all zero (RP 0, RR 0, RF1 0, Overall 0, reactants and products 0).
    D: no valid judgment; its rule-based recall is 1 (exact answer).

    Means over the valid figures A, B, C: Overall (0.6303 + 0.9392 + 0) / 3 = 0.5232;
    RP strict (0.3333 + 1 + 0) / 3 = 0.4444, blind (0.6667 + 1) / 3 = 0.5556;
    RF1 strict (0.4 + 1 + 0) / 3 = 0.4667, blind (0.8 + 1) / 3 = 0.6;
    reactants (1 + 1 + 0) / 3 = 0.6667, products (0.9 + 1 + 0) / 3 = 0.6333,
    condition text 1 and yield 0.5 (only B has them), so Conditions = 1; condition
    molecules and selectivity apply nowhere: null.
    RR over all four figures run: strict (0.5 + 1 + 0 + 1) / 4 = 0.625, blind 3 / 4 = 0.75.
    Coverage 3 / 4.
    """
    (group,) = stats_for_path(judged)["groups"]
    assert (group["system"], group["judge_model"], group["figures"]) == (SECRET, "judge-vl", 4)
    approx = lambda v: pytest.approx(v, abs=1e-4)  # noqa: E731
    assert group["overall"] == approx(0.5232)
    assert group["rp"] == {"strict": approx(0.4444), "nonstereo": approx(0.5556)}
    assert group["rf1"] == {"strict": approx(0.4667), "nonstereo": approx(0.6)}
    assert group["rr"] == {"strict": 0.625, "nonstereo": 0.75}
    assert group["categories"] == {"reactants": approx(0.6667), "products": approx(0.6333), "condition_molecules": None,
                                   "condition_text": 1.0, "yield": 0.5, "selectivity": None, "conditions": 1.0}
    assert group["coverage"] == {"valid": 3, "run": 4, "value": 0.75}
    assert group["origins"] == {"judge": 2, "run_failure": 1}
    assert [f["figure_id"] for f in group["failed"]] == ["D"]


def test_corpus_tables_keep_every_attempt(judged: Path, tmp_path: Path) -> None:
    import duckdb

    db = str(tmp_path / "corpus.duckdb")
    first = stats_for_path(judged, db)
    again = stats_for_path(None, db)       # read back from the corpus alone
    assert first == again
    con = duckdb.connect(db)
    try:
        rows = con.execute("SELECT figure_id, attempt, http_status, error IS NULL FROM rxn_judge_attempts "
                           "ORDER BY figure_id, attempt").fetchall()
        comments = con.execute("SELECT count(*) FROM duckdb_columns() WHERE table_name = 'rxn_judgments' "
                               "AND comment IS NOT NULL").fetchone()[0]
    finally:
        con.close()
    assert [r[:2] for r in rows] == [("A", 1), ("B", 1), ("B", 2), ("B", 3), ("D", 1), ("D", 2), ("D", 3)]
    assert rows[1][2] == 503 and rows[3][3] is True
    assert comments == len(RXN_JUDGMENTS.columns)
    stats_for_path(judged, db)             # re-ingest replaces, never duplicates
    assert stats_for_path(None, db) == first


def test_cli_judge_then_judge_stats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    gold, pred = write_benchmark(tmp_path)
    out = tmp_path / "j"
    with JudgeServer(SCRIPT) as server:
        with pytest.raises(SystemExit) as done:
            main(["rxn", "judge", "--gold", str(gold), "--pred", str(pred), "--model-endpoint", server.url,
                  "--model", "judge-vl", "--out", str(out), "--retries", "0", "--json"])
    assert done.value.code == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["valid"], summary["failed"]) == (2, 2)   # B needs retries, D is never valid
    with pytest.raises(SystemExit) as done:
        main(["rxn", "judge-stats", str(out), "--json"])
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["coverage"] == {"valid": 2, "run": 4, "value": 0.5}
    with pytest.raises(SystemExit) as done:
        main(["rxn", "judge-stats", str(out)])
    assert "2/4" in capsys.readouterr().out


def test_cli_refuses_a_file_that_is_not_a_judgment(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"schema": "labrecord.rxn/1"}))
    with pytest.raises(SystemExit) as done:
        main(["rxn", "judge-stats", str(tmp_path)])
    assert done.value.code == 1
    assert "x.json: not a judgment record: schema 'labrecord.rxn/1'" in capsys.readouterr().err
    with pytest.raises(LabrecordError, match="none.duckdb: no such corpus file"):
        stats_for_path(None, str(tmp_path / "none.duckdb"))
    with pytest.raises(LabrecordError, match="not JSON"):
        (tmp_path / "x.json").write_text("{")
        load_judgments(tmp_path)
    hostile = {"schema": "labrecord.judgment/1", "system": "s", "figure_id": "f", "judge_model": "m",
               "rubric_version": "r", "status": "valid", "judgment": None}
    (tmp_path / "x.json").write_text(json.dumps(hostile))
    with pytest.raises(LabrecordError, match="x.json: a valid judgment record without its judgment object"):
        load_judgments(tmp_path)
    (tmp_path / "x.json").write_text(json.dumps({**hostile, "status": "great"}))
    with pytest.raises(LabrecordError, match="judgment status 'great'"):
        load_judgments(tmp_path)


def _row(status: str, rp: float, rr_matched: int, n_gold: int, overall: float) -> dict[str, Any]:
    base = {c: None for c in ("reactants", "products", "condition_molecules", "condition_text", "yield", "selectivity")}
    return {**base, "figure_id": "f", "status": status, "origin": "judge", "error": None, "rp_strict": rp,
            "rp_nonstereo": rp, "rule_matched_strict": rr_matched, "rule_matched_nonstereo": rr_matched,
            "rule_n_gold": n_gold, "overall": overall, "reactants": overall}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.floats(0, 1), st.integers(0, 5), st.integers(1, 5), st.floats(0, 1)),
                min_size=1, max_size=8))
def test_summary_bounds_and_coverage(items: list[tuple[bool, float, int, int, float]]) -> None:
    rows = [_row("valid" if ok else "failed", rp, min(m, n), n, o) for ok, rp, m, n, o in items]
    out = summarize_group(rows)
    valid = sum(ok for ok, *_ in items)
    assert out["coverage"] == {"valid": valid, "run": len(items), "value": valid / len(items)}
    assert (out["overall"] is None) == (valid == 0) and (out["rf1"]["strict"] is None) == (valid == 0)
    if valid:
        # per figure, F1 lies between its precision and its recall
        pairs = [(rp, min(m, n) / n) for ok, rp, m, n, _ in items if ok]
        low = sum(min(p, r) for p, r in pairs) / valid
        high = sum(max(p, r) for p, r in pairs) / valid
        assert low - 1e-12 <= out["rf1"]["strict"] <= high + 1e-12
    assert 0 <= out["rr"]["strict"] <= 1
