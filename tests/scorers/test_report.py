"""The HTML report is one self-contained file with the figures and every metric."""
from __future__ import annotations

import re

from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.scorers.report import write_report
from labrecord.scorers.synthetic import write_table3


def test_report_is_self_contained_and_carries_the_numbers(tmp_path):
    runs = write_table3(tmp_path / "runs")
    result = CliRunner().invoke(cli, ["report", str(runs), "--out", str(tmp_path / "r.html"), "--resamples", "20"])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text()
    assert len(re.findall(r"src='data:image/png;base64,", page)) == 2  # rates and reach funnel; no Oracle pairs here
    assert not re.search(r"(src|href)=['\"]https?:", page)
    for text in ("20 % (10/50)", "18 % (9/50)", "16 % (8/50)", "8 % (4/50)", "100 % (10/10)", "80 % (8/10)"):
        assert text in page


def test_report_library_call_returns_path(tmp_path):
    runs = write_table3(tmp_path / "runs")
    assert write_report(runs, tmp_path / "out.html", resamples=0).stat().st_size > 1000
