"""Tests for chemdata/extract/tesseract.py: TSV words grouped into lines."""
from __future__ import annotations

from pathlib import Path

from hypothesis import given, strategies as st

from labrecord.chemdata.extract.tesseract import TextLine, parse_tsv, read_text
from labrecord.chemdata.extract.trajectory import Trajectory

from .conftest import needs_tools

HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"


def word(block: int, line: int, left: int, top: int, text: str, conf: float = 90.0) -> str:
    return f"5\t1\t{block}\t1\t{line}\t1\t{left}\t{top}\t20\t10\t{conf}\t{text}\n"


def test_words_group_into_lines_in_reading_order() -> None:
    tsv = (HEADER + "1\t1\t0\t0\t0\t0\t0\t0\t100\t100\t-1\t\n" + word(2, 1, 100, 50, "OMe") + word(2, 1, 40, 50, "R1")
           + word(2, 1, 70, 50, "=") + word(1, 1, 40, 10, "1a"))
    assert parse_tsv(tsv) == [
        TextLine("1a", (40, 10, 60, 20), 90.0, (("1a", (40, 10, 60, 20)),), (90.0,)),
        TextLine("R1 = OMe", (40, 50, 120, 60), 90.0,
                 (("R1", (40, 50, 60, 60)), ("=", (70, 50, 90, 60)), ("OMe", (100, 50, 120, 60))), (90.0, 90.0, 90.0))]


def test_each_word_keeps_its_confidence_and_the_line_the_lowest() -> None:
    tsv = HEADER + word(1, 1, 40, 10, "NMR", 96.5) + word(1, 1, 70, 10, '"H', 29.0)
    (line,) = parse_tsv(tsv)
    assert line.word_confidences == (96.5, 29.0) and line.confidence == 29.0


def test_malformed_rows_are_skipped() -> None:
    assert parse_tsv(HEADER + "5\t1\tx\t1\t1\t1\t1\t1\t1\t1\t9\tbad\n" + "short\trow\n") == []


def test_confidence_floor() -> None:
    assert parse_tsv(HEADER + word(1, 1, 0, 0, "noise", conf=10.0), min_confidence=50) == []


@needs_tools
def test_real_tesseract_reads_a_binding_line(tmp_path: Path) -> None:
    from PIL import Image, ImageDraw

    from labrecord.chemdata.render import _font

    image = Image.new("L", (400, 80), 255)
    ImageDraw.Draw(image).text((20, 20), "2b    R1 = OMe", fill=0, font=_font(26))
    image.save(tmp_path / "t.png")
    lines = read_text(Trajectory("t", 60), str(tmp_path / "t.png"), command=["tesseract"], limit_s=60)
    assert "OMe" in " ".join(line.text for line in lines)


@given(st.lists(st.tuples(st.integers(1, 4), st.text("abcXYZ123", min_size=1, max_size=6)), max_size=12))
def test_every_word_lands_in_exactly_one_line(words: list[tuple[int, str]]) -> None:
    tsv = HEADER + "".join(word(1, line, 10 * i, 20 * line, text) for i, (line, text) in enumerate(words))
    lines = parse_tsv(tsv)
    assert sum(len(line.text.split()) for line in lines) == len(words)
    assert len(lines) == len({line for line, _ in words})


def test_boxes_of_an_enlarged_image_come_back_in_the_figure_pixels(tmp_path: Path) -> None:
    """A stand-in tesseract reports one word at (40, 60)-(100, 90) on an image enlarged
    twice: divided back (the far corner rounded up), that is (20, 30)-(50, 45), then
    shifted by the offset (5, 7) to (25, 37)-(55, 52)."""
    from .conftest import fake_tool

    tsv = HEADER + "5\t1\t1\t1\t1\t1\t40\t60\t60\t30\t91\tR=F\n"
    (tmp_path / "out.tsv").write_text(tsv)
    tool = fake_tool(tmp_path, "tesseract", f"cat {tmp_path / 'out.tsv'}")
    (line,) = read_text(Trajectory("t", 60), "x.png", command=[tool], limit_s=60, offset=(5, 7), scale=2)
    assert line.box == (25, 37, 55, 52) and line.words == (("R=F", (25, 37, 55, 52)),)
