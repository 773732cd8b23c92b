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
    from labrecord.scorers.report import funnel_figure, rates_figure
    from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_rollout

    # "a" reaches d1 at an eligible opportunity and chooses wrong; "b" meets d1 only with
    # the Wait/Stop-only legal set, which is no native-track choice
    write_rollout(tmp_path, RolloutSpec("a0", system="a", decisions=[DecisionSpec("d0", "wrong"), DecisionSpec("d1", "none")]))
    write_rollout(tmp_path, RolloutSpec("b0", system="b", decisions=[DecisionSpec("d0"), DecisionSpec("d1", "none", terminal=True)]))
    groups = score_corpus(tmp_path, resamples=0)["groups"]
    funnel = funnel_figure(groups)
    assert "0 (0 %) — no eligible opportunity" in _texts(funnel)
    assert _texts(rates_figure(groups)).count("not reached") == 1
