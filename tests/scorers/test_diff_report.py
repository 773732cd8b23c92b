"""The diff section of labrecord report: tables, reasons and the per-episode flip chart."""
from __future__ import annotations

import base64
import re

from labrecord.scorers.diff import diff_paths
from labrecord.scorers.diff_report import _short_labels, flips_figure
from labrecord.scorers.report import write_report
from tests.scorers.test_diff import _two_policies


def test_report_has_a_diff_section_with_the_flip_chart(tmp_path):
    runs = tmp_path / "runs"
    _two_policies(runs)
    diff = diff_paths(f"a@{runs}", f"b@{runs}", audit=False, resamples=0)
    out = write_report(runs, tmp_path / "report.html", resamples=0, diff=diff)
    text = out.read_text()
    section = text[text.index("<h2>Diff: why two evaluations disagree</h2>"):text.index("<h2>All metrics</h2>")]
    assert "Explanation (attributed):" in section and "system_name" in section
    assert "unresolved pair pop/i6#0: B: registered, no run" in section
    assert "<td>B_next</td><td>2</td><td>4</td><td>0</td><td>0</td><td>2</td>" in section
    png = base64.b64decode(re.search(r"alt='per-episode flips' src='data:image/png;base64,([^']+)'", section).group(1))
    assert png.startswith(b"\x89PNG")


def test_flip_chart_draws_one_cell_per_pair_and_outcome(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    _two_policies(tmp_path)
    diff = diff_paths(f"a@{tmp_path}", f"b@{tmp_path}", audit=False, resamples=0)
    fig = flips_figure(diff)
    ax = fig.axes[0]
    # 8 pairs x 6 measured outcomes (agreement is measured by neither side)
    assert len(ax.patches) == 8 * len(diff["binary"]) == 48
    colours = [tuple(round(c, 3) for c in p.get_facecolor()[:3]) for p in ax.patches]
    red = tuple(round(c, 3) for c in matplotlib.colors.to_rgb("#b54a4a"))
    assert colours.count(red) == 4 + 2  # B_next lost at i2-i5, clean completion at i2, i3
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"i{k}" for k in range(8)]


def test_short_labels_drop_only_what_every_label_shares():
    assert _short_labels(["pop/i0#0", "pop/i1#0"]) == ["i0", "i1"]
    assert _short_labels(["pop/i0#0", "other/i1#0"]) == ["pop/i0", "other/i1"]
    assert _short_labels(["pop/i0#0", "pop/i0#1"]) == ["i0#0", "i0#1"]
