"""Tests for chemdata/extract/layout.py: white-space segmentation and shape rules."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st
from PIL import Image, ImageDraw

from labrecord.chemdata.extract.layout import contains, overlaps, segment
from labrecord.chemdata.extract.tesseract import TextLine


def canvas() -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("L", (700, 300), 255)
    return image, ImageDraw.Draw(image)


def test_row_with_structure_plus_arrow_and_a_text_line_below() -> None:
    image, pen = canvas()
    pen.rectangle((20, 20, 120, 120), outline=0, width=2)          # a "structure"
    pen.line((160, 70, 180, 70), fill=0, width=3)                   # "+"
    pen.line((170, 60, 170, 80), fill=0, width=3)
    pen.rectangle((220, 30, 320, 110), outline=0, width=2)
    pen.line((360, 70, 500, 70), fill=0, width=3)                   # arrow
    pen.rectangle((540, 20, 640, 120), outline=0, width=2)
    pen.rectangle((20, 200, 140, 220), fill=0)                      # a printed line
    segments = segment(image, [TextLine("1a R1 = Me", (20, 200, 140, 220), 90.0)])
    assert [(s.kind, s.band) for s in segments] == [("structure", 0), ("plus", 0), ("structure", 0), ("arrow", 0),
                                                    ("structure", 0), ("text", 1)]
    assert segments[3].box == (360, 69, 500, 71)


def test_blank_image_has_no_segments() -> None:
    image, _ = canvas()
    assert segment(image, []) == []


def test_box_helpers() -> None:
    assert overlaps((0, 0, 10, 10), (10, 10, 20, 20)) and not overlaps((0, 0, 10, 10), (11, 0, 20, 10))
    assert contains((0, 0, 100, 100), (40, 40, 60, 60)) and not contains((0, 0, 100, 100), (150, 0, 170, 20))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(10, 60), min_size=1, max_size=6))
def test_separated_blocks_become_one_segment_each(widths: list[int]) -> None:
    image = Image.new("L", (sum(widths) + 60 * len(widths) + 20, 200), 255)
    pen = ImageDraw.Draw(image)
    x = 10
    for width in widths:
        pen.rectangle((x, 50, x + width, 150), fill=0)
        x += width + 60
    segments = segment(image, [])
    assert len(segments) == len(widths)
    assert all(s.kind == "structure" and s.band == 0 for s in segments)


def test_conditions_over_an_arrow_leave_the_arrow_box_alone() -> None:
    image = Image.new("L", (400, 200), 255)
    pen = ImageDraw.Draw(image)
    pen.rectangle((120, 70, 260, 90), fill=0)                       # printed conditions
    pen.line((100, 110, 280, 110), fill=0, width=3)                 # the arrow shaft
    pen.polygon([(290, 110), (274, 102), (274, 118)], fill=0)       # and its head
    (arrow,) = segment(image, [])
    assert arrow.kind == "arrow" and arrow.box == (100, 102, 290, 118)


def test_a_blob_whose_long_row_is_joined_to_the_rest_is_not_an_arrow() -> None:
    image = Image.new("L", (400, 200), 255)
    pen = ImageDraw.Draw(image)
    pen.line((100, 110, 280, 110), fill=0, width=3)
    pen.line((150, 110, 150, 40), fill=0, width=3)                  # a bond joins it to more ink
    pen.line((150, 40, 200, 40), fill=0, width=3)
    assert [s.kind for s in segment(image, [])] == ["structure"]
