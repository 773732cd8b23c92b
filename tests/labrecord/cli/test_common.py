"""Terminal tables: no cell loses characters, whatever the terminal width."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from labrecord.cli.common import echo_table

HEADER = ("system", "decisions", "mean ms", "p50 ms", "p95 ms", "max ms", "episodes", "episode wall s")


def _printed(capsys, monkeypatch, width: int, rows: list[list[object]]) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    echo_table(list(HEADER), rows, title="latency")
    return capsys.readouterr().out


def test_narrow_terminal_keeps_every_number(capsys, monkeypatch) -> None:
    """At 40 columns the eight-column latency table (natural width ~100) cannot fit: it
    is printed whole at its natural width, every cell — 'reference-policy-v2', '1116',
    '123.4' … — on one line with both borders."""
    out = _printed(capsys, monkeypatch, 40, [["reference-policy-v2", 1116, 0.15, 0.16, 0.23, 123.4, 8, 6.99]])
    row = next(line for line in out.splitlines() if "reference" in line)
    assert row.startswith("│") and row.endswith("│")
    for cell in ("reference-policy-v2", "1116", "0.15", "0.16", "0.23", "123.4", "8", "6.99"):
        assert f" {cell} " in row
    assert "…" not in out


def test_wide_terminal_unchanged(capsys, monkeypatch) -> None:
    """With room to spare the table keeps the terminal's width budget (no line longer than 200)."""
    out = _printed(capsys, monkeypatch, 200, [["ref", 1, 2.5, 2.5, 2.5, 2.5, 1, 3.0]])
    assert max(len(line) for line in out.splitlines()) <= 200
    assert " 2.5 " in out


@settings(max_examples=25, deadline=None)
@given(width=st.integers(20, 120),
       cells=st.lists(st.text(alphabet="abcdefghij0123456789.%-", min_size=1, max_size=18), min_size=8, max_size=8))
def test_cells_whole_at_any_width(width: int, cells: list[str]) -> None:
    """Property: every cell appears whole on the row's single line at any width."""
    import io
    import os

    from contextlib import redirect_stdout

    os.environ["COLUMNS"] = str(width)
    try:
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            echo_table(list(HEADER), [cells])
    finally:
        del os.environ["COLUMNS"]
    lines = [line for line in buffer.getvalue().splitlines() if line.startswith("│")]
    assert len(lines) == 1 and lines[0].endswith("│")
    for cell in cells:
        assert cell in lines[0]
