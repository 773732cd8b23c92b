"""The HTML report is one self-contained file with the figures and every metric."""
from __future__ import annotations

import re

from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.scorers.report import write_report
from labrecord.scorers.synthetic import write_table3


def test_report_is_self_contained_and_carries_the_numbers(tmp_path):
    runs = write_table3(tmp_path / "runs")
    result = CliRunner().invoke(cli, ["report", str(runs), "--out", str(tmp_path / "r.html"), "--resamples", "20", "--no-audit"])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text()
    assert len(re.findall(r"src='data:image/png;base64,", page)) == 2  # rates and reach funnel; no Oracle pairs here
    assert not re.search(r"(src|href)=['\"]https?:", page)
    for text in ("20 % (10/50)", "18 % (9/50)", "16 % (8/50)", "8 % (4/50)", "100 % (10/10)", "80 % (8/10)"):
        assert text in page


def test_report_library_call_returns_path(tmp_path):
    runs = write_table3(tmp_path / "runs")
    assert write_report(runs, tmp_path / "out.html", resamples=0).stat().st_size > 1000


def test_report_shows_oracle_gains_when_pairs_exist(tmp_path):
    from labrecord.scorers.synthetic import RolloutSpec, write_population, write_rollout

    write_population(tmp_path, "O", [{"type": "instance", "instance_id": "b"}, {"type": "instance", "instance_id": "s"},
                                     {"type": "oracle_pair", "pair_id": "p", "base": "b", "supported": "s", "mode": "assist",
                                      "oracle": "skill-exec", "site": "skill"}])
    write_rollout(tmp_path, RolloutSpec("base", population=("O", "b")))
    write_rollout(tmp_path, RolloutSpec("sup", population=("O", "s"), physical=True,
                                        intervention={"mode": "assist", "site": "skill", "oracle": "skill-exec", "branch": "supported"}))
    page = write_report(tmp_path, tmp_path / "r.html", resamples=10).read_text()
    assert "<h2>Oracle gains</h2>" in page and "gain.completion" in page


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_a_decision_one_system_never_reached_is_shown_as_such(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from labrecord.scorers.corpus import score_corpus
    from labrecord.scorers.report import decision_table, funnel_figure, rates_figure
    from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_rollout

    # "a" reaches d1 at an eligible opportunity and chooses wrong; "b" meets d1 only with
    # the Wait/Stop-only legal set, which is no native-track choice
    write_rollout(tmp_path, RolloutSpec("a0", system="a", decisions=[DecisionSpec("d0", "wrong"), DecisionSpec("d1", "none")]))
    write_rollout(tmp_path, RolloutSpec("b0", system="b", decisions=[DecisionSpec("d0"), DecisionSpec("d1", "none", terminal=True)]))
    groups = score_corpus(tmp_path, resamples=0)["groups"]
    funnel = funnel_figure(groups)
    assert "0 (0 %) — no eligible opportunity" in _texts(funnel)
    # per-decision rates sit in the trajectory-indexed table, apart from the checkpoint figure
    table = decision_table(groups)
    assert table.count("<td>d1</td><td>weighing-basic · b@0</td><td>not reached</td>") == 1
    assert "not reached" not in _texts(rates_figure(groups))


def _provisional_corpus(root):
    """4 Oracle pairs: p0 gains 0, p1 gains 1, p2's supported branch is missing, p3's base
    ended in a service fault; every run reports one geometry error."""
    from labrecord.scorers.synthetic import DecisionSpec, GeometrySpec, RolloutSpec, write_population, write_rollout

    records = [{"type": "instance", "instance_id": f"{s}{k}"} for k in range(4) for s in "bs"]
    records += [{"type": "oracle_pair", "pair_id": f"p{k}", "base": f"b{k}", "supported": f"s{k}", "mode": "assist",
                 "oracle": "o", "site": "decision"} for k in range(4)]
    write_population(root, "O", records)
    support = {"mode": "assist", "site": "decision", "oracle": "o", "branch": "supported"}
    for k in range(4):
        write_rollout(root, RolloutSpec(f"base{k}", population=("O", f"b{k}"), physical=k == 0, validity_fault=k == 3,
                                        decisions=[DecisionSpec(), DecisionSpec("d1", "wrong")],
                                        geometry=[GeometrySpec(p_hat=[0.01 * k, 0, 1], p_ref=[0, 0, 1])]))
        if k != 2:
            write_rollout(root, RolloutSpec(f"sup{k}", population=("O", f"s{k}"), physical=True, intervention=support,
                                            geometry=[GeometrySpec(p_hat=[0.0, 0, 1], p_ref=[0, 0, 1])]))


def test_report_sections_show_provisional_metrics_and_keep_decisions_apart(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from labrecord.scorers.corpus import score_corpus
    from labrecord.scorers.report import gains_figure, rates_figure

    _provisional_corpus(tmp_path)
    page = write_report(tmp_path, tmp_path / "r.html", resamples=50).read_text()
    for heading in ("Incomplete evidence", "Checkpoint choice, execution and completion", "Trajectory-indexed decisions",
                    "Oracle gains", "All metrics"):
        assert f"<h2>{heading}</h2>" in page
    assert "unresolved run base3: service_fault from policy-server" in page
    assert "missing registered member O/s2" in page
    # Δ completion: p0 0, p1 1, p2 ∈ [0, 1] (base 0), p3 ∈ [0, 1] (supported 1): [1/4, 3/4]
    assert "provisional [25 %, 75 %]" not in page and "provisional [0.25, 0.75], 2 of 4 unresolved" in page
    groups = score_corpus(tmp_path, resamples=0)["groups"]
    ticks = [t.get_text() for ax in rates_figure(groups).axes for t in ax.get_xticklabels()]
    assert not any("correct\n" in t or t.startswith("reach") for t in ticks)  # trajectory decisions are apart
    figure = gains_figure(groups)
    titles = [ax.get_title() for ax in figure.axes]
    assert len(titles) == 2 and "metres" in titles[1] and "shares" in titles[0]  # one panel per unit
    hatched = [p for p in figure.axes[0].patches if p.get_hatch()]
    assert len(hatched) == 2  # the bounds of both unresolved rate gains are drawn


def test_timing_table_shows_inference_latency_per_decision(tmp_path):
    import json

    from labrecord.scorers.report import timing_table
    from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_rollout
    from labrecord.store import connect, ingest_runs

    run = write_rollout(tmp_path, RolloutSpec("r0", decisions=[DecisionSpec("d0"), DecisionSpec("d1")]))
    lines = [json.loads(x) for x in (run / "observations.jsonl").read_text().splitlines()]
    for line, wall in zip(lines, (0.25, 0.5)):
        line["wall"] = wall
    (run / "observations.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    con = connect(None)
    ingest_runs(tmp_path, con)
    table = timing_table(con)
    assert "<td>d0</td><td>1</td><td>250.0 ms" in table and "<td>d1</td><td>1</td><td>500.0 ms" in table


def test_oracle_table_shows_agreement_and_substitution_beside_gains():
    """The Oracle panel's table: Δ beside delivery, agreement (null under replace) and the
    substitution share; base groups and groups without Oracle pairs are left out."""
    from labrecord.scorers.report import oracle_table

    def metric(value, num, den):
        return {"value": value, "num": num, "den": den, "n": den, "ci": None}

    identity = {"task_id": "weighing-basic", "system_name": "fp", "system_revision": "1"}
    replace = {"identity": {**identity, "intervention_mode": "replace", "intervention_site": "decision", "oracle": "legal"},
               "metrics": {"gain.correct": metric(0.75, 12, 16), "delivery": metric(1.0, 16, 16),
                           "agreement": metric(None, 0, 0), "substitution_share": metric(0.75, 12, 16)},
               "coverage": {}}
    joint = {"identity": {**identity, "intervention_mode": "assist+replace", "intervention_site": "semantic+decision",
                          "oracle": "shown+legal"},
             "metrics": {"interaction.correct": metric(0.0, 0, 2), "delivery": metric(1.0, 2, 2)}, "coverage": {}}
    base = {"identity": {**identity, "intervention_mode": "none"}, "metrics": {"B_next": metric(0.25, 4, 16)},
            "coverage": {}}
    text = oracle_table([base, replace, joint])
    assert "null (replace)" in text and "75.0 % (12/16)" in text.replace("75 %", "75.0 %")
    assert "(decision:replace)" in text and "(semantic:assist+decision:replace)" in text
    assert text.count("<tr>") == 3  # header + two supported conditions
    assert oracle_table([base]) == ""
