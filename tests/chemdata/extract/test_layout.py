"""Tests for chemdata/extract/layout.py: ink components, arrow and rule shapes, rows."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st
from PIL import Image, ImageDraw

from labrecord.chemdata.extract.layout import (
    arrow_shape, bond_length, contains, group_label, ink_mask, overlaps, segment, straddles, stroke_bond, stroke_width,
)
from labrecord.chemdata.extract.tesseract import TextLine


def canvas(width: int = 700, height: int = 300) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("L", (width, height), 255)
    return image, ImageDraw.Draw(image)


def arrow(pen: ImageDraw.ImageDraw, x0: int, x1: int, y: int) -> None:
    pen.line((x0, y, x1 - 14, y), fill=0, width=3)
    pen.polygon([(x1, y), (x1 - 16, y - 8), (x1 - 16, y + 8)], fill=0)


def test_row_with_structure_plus_arrow_and_a_text_line_below() -> None:
    image, pen = canvas()
    pen.rectangle((20, 20, 120, 120), outline=0, width=2)          # a "structure"
    pen.line((160, 70, 180, 70), fill=0, width=3)                   # "+"
    pen.line((170, 60, 170, 80), fill=0, width=3)
    pen.rectangle((220, 30, 320, 110), outline=0, width=2)
    arrow(pen, 360, 500, 70)
    pen.rectangle((540, 20, 640, 120), outline=0, width=2)
    pen.rectangle((20, 200, 140, 220), fill=0)                      # a printed line
    segments = segment(image, [TextLine("1a R1 = Me", (20, 200, 140, 220), 90.0)])
    assert [(s.kind, s.band) for s in segments] == [("structure", 0), ("plus", 0), ("structure", 0), ("arrow", 0),
                                                    ("structure", 0), ("text", -1)]
    assert segments[3].box[0] == 360 and segments[3].box[2] == 500


def test_a_headless_line_is_not_an_arrow_and_a_full_width_one_is_a_rule() -> None:
    image, pen = canvas()
    pen.rectangle((20, 20, 120, 120), outline=0, width=2)
    pen.line((160, 70, 300, 70), fill=0, width=3)                   # no head: not an arrow
    pen.line((5, 200, 695, 200), fill=0, width=1)                   # a table rule
    kinds = sorted(s.kind for s in segment(image, []))
    assert "arrow" not in kinds and kinds.count("rule") == 1


def test_a_full_height_frame_line_is_a_rule_not_a_structure() -> None:
    image, pen = canvas()
    pen.rectangle((20, 20, 120, 120), outline=0, width=2)
    arrow(pen, 200, 340, 70)
    pen.rectangle((420, 20, 520, 120), outline=0, width=2)
    pen.line((698, 0, 698, 299), fill=0, width=1)                   # the figure's right frame edge
    segments = segment(image, [])
    assert [s.kind for s in segments if s.band == 0] == ["structure", "arrow", "structure"]
    assert [s.box[0] for s in segments if s.kind == "rule"] == [698]


def test_arrow_shapes() -> None:
    import numpy as np

    image, pen = canvas(300, 60)
    arrow(pen, 20, 200, 30)
    assert arrow_shape(ink_mask(image)[20:41, 20:201], 30) == "right"
    half, pen = canvas(300, 60)                                      # one barb of an equilibrium pair
    pen.line((20, 30, 200, 30), fill=0, width=2)
    pen.polygon([(200, 30), (184, 20), (184, 30)], fill=0)
    assert arrow_shape(ink_mask(half)[18:33, 20:201], 30) == "right"
    assert arrow_shape(np.ones((5, 100), dtype=bool), 30) is None     # a bare bar
    assert arrow_shape(np.ones((40, 40), dtype=bool), 30) is None     # a blob


def test_blank_image_has_no_segments() -> None:
    image, _ = canvas()
    assert segment(image, []) == []


def test_caption_lines_are_peeled_and_labels_join_their_drawing() -> None:
    image, pen = canvas(700, 300)
    pen.rectangle((100, 40, 200, 140), outline=0, width=2)          # a ring
    pen.rectangle((204, 80, 214, 92), fill=0)                       # an atom label glyph beside it
    pen.rectangle((20, 250, 680, 262), fill=0)                      # a caption line
    caption = TextLine("Scheme 1. Synthesis of the compounds", (20, 250, 680, 262), 95.0)
    segments = segment(image, [caption], bond=30)
    structures = [s for s in segments if s.kind == "structure"]
    assert len(structures) == 1 and structures[0].box[2] == 214
    assert [s.kind for s in segments if s.box[1] == 250] == ["text"]


def test_bond_length_from_text() -> None:
    lines = [TextLine(t, (0, 0, 20, 19), 90.0) for t in ("OH", "3a", "Br", "N")]
    assert bond_length(lines) == 30.0
    assert bond_length([]) == 30.0


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


@settings(max_examples=30, deadline=None)
@given(st.integers(90, 400), st.integers(1, 4), st.integers(4, 9), st.booleans())  # heads up to 2/3 of a 30 px bond
def test_any_drawn_arrow_is_found_and_a_bar_never_is(length: int, shaft: int, head: int, leftwards: bool) -> None:
    image = Image.new("L", (length + 40, 60), 255)
    pen = ImageDraw.Draw(image)
    x0, x1, y = 20, 20 + length, 30
    if leftwards:
        pen.line((x0 + 2 * head, y, x1, y), fill=0, width=shaft)
        pen.polygon([(x0, y), (x0 + 2 * head, y - head), (x0 + 2 * head, y + head)], fill=0)
    else:
        pen.line((x0, y, x1 - 2 * head, y), fill=0, width=shaft)
        pen.polygon([(x1, y), (x1 - 2 * head, y - head), (x1 - 2 * head, y + head)], fill=0)
    ink = ink_mask(image)
    rows, cols = ink.any(axis=1).nonzero()[0], ink.any(axis=0).nonzero()[0]
    mask = ink[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    assert arrow_shape(mask, 30) == ("left" if leftwards else "right")
    bar = ink[y - shaft // 2 - 1:y + shaft // 2 + 2, x0 + 2 * head + 2:x1 - 2 * head - 2]
    assert arrow_shape(bar[bar.any(axis=1)], 30) is None


def test_grey_takes_the_darkest_channel_so_colour_is_ink() -> None:
    from labrecord.chemdata.extract.layout import grey

    image = Image.new("RGB", (4, 1), (255, 255, 255))
    for x, colour in enumerate([(255, 0, 0), (0, 0, 230), (235, 235, 235)]):   # red, blue, light grey shading
        image.putpixel((x, 0), colour)
    assert [grey(image).getpixel((x, 0)) for x in range(4)] == [0, 0, 235, 255]
    assert ink_mask(grey(image)).tolist() == [[True, True, False, False]]


def test_a_short_label_word_joins_its_drawing_and_a_caption_glyph_is_no_arrow() -> None:
    image, pen = canvas(700, 300)
    pen.polygon([(60, 60), (100, 40), (140, 60), (140, 100), (100, 120), (60, 100)], outline=0, width=2)  # a ring
    pen.line((100, 120, 100, 150), fill=0, width=2)                 # its bond down to the label
    pen.rectangle((94, 153, 100, 165), fill=0)                      # "Bpin" glyphs right at the bond end
    pen.rectangle((103, 153, 109, 165), fill=0)
    pen.line((20, 20, 90, 20), fill=0, width=2)                     # a long glyph inside a title line
    pen.polygon([(90, 20), (80, 14), (80, 26)], fill=0)
    lines = [TextLine("Bpin", (94, 153, 109, 165), 90.0, (("Bpin", (94, 153, 109, 165)),), (90.0,)),
             TextLine("Scheme 1. Borylation of the isocoumarin ring", (10, 10, 600, 30), 95.0)]
    segments = segment(image, lines, bond=30)
    assert "arrow" not in [s.kind for s in segments]
    (drawing,) = [s for s in segments if s.kind == "structure"]
    assert drawing.box[3] >= 165                                    # the label went with the drawing


def test_glyphs_of_confidently_read_words_are_text_even_when_large() -> None:
    image, pen = canvas(700, 300)
    for x in (100, 130, 160):                                       # three 40 px tall glyphs of a table cell
        pen.rectangle((x, 100, x + 20, 140), outline=0, width=3)
    words = (("NMR", (100, 100, 180, 140)),)
    segments = segment(image, [TextLine("NMR", (100, 100, 180, 140), 50.0, words, (96.0,))], bond=20)
    assert [s.kind for s in segments] == ["text"]


def test_a_drawing_ocr_read_as_a_confident_non_word_stays_a_structure() -> None:
    image, pen = canvas(700, 300)
    pen.polygon([(60, 60), (100, 40), (140, 60), (140, 100), (100, 120), (60, 100)], outline=0, width=2)
    words = (("O}-", (50, 30, 150, 130)),)                          # tesseract "reads" the ring
    segments = segment(image, [TextLine("O}-", (50, 30, 150, 130), 40.0, words, (81.0,))], bond=30)
    assert [s.kind for s in segments] == ["structure"]


def test_a_line_over_a_drawing_gives_its_own_glyphs_not_its_box() -> None:
    """A product ring at x 60–140 and, 60 px to its right, three glyphs ``N``, ``H``, ``3``
    (x 200–238, y 70–84).  OCR read one line over both, box (60, 40, 240, 120): the ring
    box (60, 40, 140, 120) takes 81 × 81 = 6561 px² of the line's 181 × 81 = 14661 px²
    (45 % ≥ 25 %), so the line straddles the drawing, and the text item is the glyphs'
    union (200, 70, 238, 84), not the line box that would swallow the ring."""
    image, pen = canvas(700, 300)
    pen.polygon([(60, 60), (100, 40), (140, 60), (140, 100), (100, 120), (60, 100)], outline=0, width=2)
    for x0 in (200, 214, 228):
        pen.rectangle((x0, 70, x0 + 10, 84), outline=0, width=2)
    line = TextLine("LD vi", (60, 40, 240, 120), 45.0, (("LD", (60, 40, 140, 120)), ("vi", (200, 70, 238, 84))), (40.0, 50.0))
    segments = segment(image, [line], bond=30)
    assert [(s.kind, s.box) for s in segments] == [("structure", (60, 40, 140, 120)), ("text", (200, 70, 238, 84))]


def test_glyphs_no_line_covers_become_one_item_per_word() -> None:
    """``H``, ``2``, ``O`` (x 300–314, 318–324, 328–342; gaps 3 px, under the 14 px glyph
    height) and, 40 px further, ``N``, ``H`` (x 382–396, 400–414), with no OCR line over
    them: two text items, (300, 70, 342, 84) and (382, 70, 414, 84), so each word is read
    whole and not glyph by glyph.  A glyph on another line (y 150) stays apart."""
    image, pen = canvas(700, 300)
    pen.polygon([(60, 60), (100, 40), (140, 60), (140, 100), (100, 120), (60, 100)], outline=0, width=2)
    for x0, x1 in ((300, 314), (318, 324), (328, 342), (382, 396), (400, 414)):
        pen.rectangle((x0, 70, x1, 84), outline=0, width=2)
    pen.rectangle((320, 150, 334, 164), outline=0, width=2)
    segments = segment(image, [], bond=30)
    assert sorted(s.box for s in segments if s.kind == "text") == [(300, 70, 342, 84), (320, 150, 334, 164),
                                                                    (382, 70, 414, 84)]


@given(st.integers(0, 400), st.integers(0, 200), st.integers(1, 300), st.integers(1, 100))
def test_a_line_straddles_exactly_the_drawings_that_take_a_quarter_of_it(x: int, y: int, w: int, h: int) -> None:
    line = (100, 100, 299, 149)                                     # 200 × 50 = 10000 px²
    drawing = (x, y, x + w - 1, y + h - 1)
    ow = max(0, min(299, drawing[2]) - max(100, x) + 1)
    oh = max(0, min(149, drawing[3]) - max(100, y) + 1)
    assert straddles(line, [drawing]) == (ow * oh >= 2500)
    assert not straddles(line, [])


def dashed_arrow(pen: ImageDraw.ImageDraw, x0: int, x1: int, y: int, dash: int = 12, gap: int = 7,
                 shaft: int = 2, head: int = 8, with_head: bool = True) -> None:
    x = x0
    stop = x1 - 2 * head if with_head else x1
    while x < stop:
        pen.line((x, y, min(x + dash, stop), y), fill=0, width=shaft)
        x += dash + gap
    if with_head:
        pen.polygon([(x1, y), (x1 - 2 * head, y - head), (x1 - 2 * head, y + head)], fill=0)


def test_a_dashed_arrow_is_one_arrow_and_a_dashed_line_is_none() -> None:
    """Eleven 12 px dashes 7 px apart ending in a 16 px head form one arrow spanning the
    whole 220 px; the same dashes without a head stay separate small pieces."""
    image, pen = canvas(300, 60)
    dashed_arrow(pen, 20, 240, 30)
    arrows = [s for s in segment(image, [], bond=30) if s.kind == "arrow"]
    assert len(arrows) == 1
    assert arrows[0].box[0] <= 21 and arrows[0].box[2] >= 238
    plain, pen = canvas(300, 60)
    dashed_arrow(pen, 20, 240, 30, with_head=False)
    assert not [s for s in segment(plain, [], bond=30) if s.kind.startswith("arrow")]


@settings(max_examples=25, deadline=None)
@given(st.integers(120, 400), st.integers(6, 20), st.integers(3, 14), st.integers(1, 3))
def test_any_dashed_arrow_is_found(length: int, dash: int, gap: int, shaft: int) -> None:
    image = Image.new("L", (length + 40, 60), 255)
    dashed_arrow(ImageDraw.Draw(image), 20, 20 + length, 30, dash=dash, gap=gap, shaft=shaft)
    assert [s.kind for s in segment(image, [], bond=30) if s.kind.startswith("arrow")] == ["arrow"]


def _small_arrow(length: int, head: int, y: int = 40, x0: int = 20, width: int = 0) -> Image.Image:
    """A 1 px shaft ending in a filled head ``head`` px tall and ``head`` px long (a small
    figure's reaction arrow), drawn with numpy."""
    import numpy as np

    pixels = np.full((max(80, y + 40), width or x0 + length + 20), 255, dtype=np.uint8)
    pixels[y, x0:x0 + length] = 0
    tip = x0 + length - 1
    for step in range(head):  # column ``tip - step`` carries a run of about step + 1 px
        half = min(step, head - 1) // 2
        pixels[y - half:y + (min(step, head - 1) - half) + 1, tip - step] = 0
    return Image.fromarray(pixels, "L")


def test_a_small_head_on_a_one_pixel_shaft_scales_with_the_bond() -> None:
    """b = 13.5: the head must reach max(2 × 1, 1 + min(4, 13.5 / 5)) = max(2, 3.7) = 3.7 px,
    so a 4 px head is an arrow and a 3 px one is not.  At b = 30 the bar is 1 + 4 = 5 px,
    so the same 4 px head is no arrow there (as before)."""
    import numpy as np

    def mask(head: int) -> np.ndarray:
        ink = ink_mask(_small_arrow(150, head))
        rows, cols = ink.any(axis=1).nonzero()[0], ink.any(axis=0).nonzero()[0]
        return ink[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]

    assert arrow_shape(mask(4), 13.5) == "right"
    assert arrow_shape(mask(3), 13.5) is None
    assert arrow_shape(mask(4), 30) is None
    assert arrow_shape(mask(5), 30) == "right"


@settings(max_examples=30, deadline=None)
@given(st.floats(12, 20), st.floats(1.4, 12), st.integers(0, 3), st.integers(0, 3))
def test_an_arrow_under_condition_lines_is_found_exactly_once(bond: float, times: float, above: int,
                                                               below: int) -> None:
    """An arrow of length ≥ 1.4 b (1 px shaft, head ⌊b/5⌋ + 2 px, just over the
    1 + min(4, b/5) px asked for) with k printed condition lines
    above and below, each line a row of glyph-sized blobs that OCR read as one line, is
    found exactly once, and the glyphs are text."""
    import numpy as np

    length = int(max(30, times * bond)) + 1
    pitch = int(bond * 0.9)
    y = 20 + above * pitch + 6
    pixels = np.asarray(_small_arrow(length, int(bond / 5) + 2, y=y, width=length + 60)).copy()
    pixels = np.pad(pixels, ((0, max(0, y + (below + 1) * pitch + 20 - pixels.shape[0])), (0, 0)), constant_values=255)
    lines = []
    glyph = max(3, int(0.5 * bond))
    for k in range(above + below):
        top = y - 4 - (k + 1) * pitch if k < above else y + 6 + (k - above) * pitch
        xs = range(24, 20 + length - glyph, glyph + 3)
        for x in xs:
            pixels[top:top + glyph, x:x + glyph - 1] = 0
        lines.append(TextLine("CH2Cl2, 25 C, 4 h", (24, top, xs[-1] + glyph - 1, top + glyph - 1), 90.0))
    segments = segment(Image.fromarray(pixels, "L"), lines, bond)
    assert [s.kind for s in segments].count("arrow") == 1
    assert not [s for s in segments if s.kind == "structure"]


def _bold_arrow(pixels: "np.ndarray", x0: int, x1: int, y: int, shaft: int, head: int) -> None:  # noqa: F821
    """A filled bar ``shaft`` px thick from x0 and a filled triangular head ``head`` px
    across and ``head`` px long ending at x1."""
    pixels[y - shaft // 2:y - shaft // 2 + shaft, x0:x1 - head] = 0
    for step in range(head):  # the head narrows from ``head`` px to 1 px at the tip
        half = (head - step) // 2
        pixels[y - half:y + half + 1, x1 - head + step] = 0


def test_a_bold_arrow_is_found_and_a_bold_bar_a_wedge_and_a_serif_glyph_are_not() -> None:
    """A 50 px thick bar with a 90 px head, 600 px long (b = 30: the thin-arrow path refuses
    a shaft over max(6, 30/5) = 6 px): the bar is solid, 90 ≥ 1.5 × 50 = 75, the head
    narrows over 90 px ≥ 0.4 × 90 = 36, and 600 ≥ 3 × 91.  Without the head it is a bar; a
    wedge tapers along its whole length; an "l" 43 px tall with a 14 px serif widens over
    2 px < 0.4 × 14."""
    import numpy as np

    def shape(pixels: np.ndarray) -> str | None:
        ink = pixels < 170
        rows, cols = ink.any(axis=1).nonzero()[0], ink.any(axis=0).nonzero()[0]
        return arrow_shape(ink[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1], 30)

    pixels = np.full((140, 700), 255, dtype=np.uint8)
    _bold_arrow(pixels, 40, 640, 70, 50, 90)
    assert shape(pixels) == "right"
    assert shape(pixels[:, ::-1]) == "left"
    assert shape(pixels.T.copy()) == "down"
    bar = np.full((140, 700), 255, dtype=np.uint8)
    bar[45:95, 40:640] = 0
    assert shape(bar) is None
    wedge = np.full((140, 700), 255, dtype=np.uint8)
    for x in range(600):
        half = x * 45 // 600
        wedge[70 - half:70 + half + 1, 40 + x] = 0
    assert shape(wedge) is None
    serif = np.full((60, 30), 255, dtype=np.uint8)
    serif[5:48, 10:17] = 0
    serif[46:48, 6:20] = 0
    assert shape(serif) is None


@settings(max_examples=30, deadline=None)
@given(st.integers(8, 60), st.floats(1.6, 4), st.integers(4, 12), st.booleans())
def test_any_bold_arrow_is_found_once_in_a_figure(shaft: int, ratio: float, lengths: int, leftwards: bool) -> None:
    """A bold arrow of any shaft t ≥ 8 px, head ≥ 1.6 t and length ≥ 4 × head is one arrow."""
    import numpy as np

    head = int(ratio * shaft)
    length = lengths * head
    pixels = np.full((head + 40, length + 40), 255, dtype=np.uint8)
    _bold_arrow(pixels, 20, 20 + length, 20 + head // 2, shaft, head)
    if leftwards:
        pixels = pixels[:, ::-1].copy()
    segments = segment(Image.fromarray(pixels, "L"), [], 30)
    assert [s.kind for s in segments] == ["arrow"]


def test_a_bold_plus_larger_than_a_bond_is_a_plus_and_a_drawn_cross_is_not() -> None:
    """A bold "+" 80 × 66 px with 20 px bars (bars ≥ 80 / 6 ≈ 13 px: heavy) between two
    hexagons is a plus although it is wider than 0.9 b = 27 px (b = 30); a cross of 2 px
    bonds of the same size (a drawn neopentane) is a structure."""
    image, pen = canvas(900, 300)
    pen.polygon([(60, 110), (100, 90), (140, 110), (140, 150), (100, 170), (60, 150)], outline=0, width=2)
    pen.rectangle((200, 120, 279, 139), fill=0)
    pen.rectangle((230, 97, 249, 162), fill=0)
    pen.line((400, 130, 480, 130), fill=0, width=2)
    pen.line((440, 90, 440, 170), fill=0, width=2)
    kinds = [(s.kind, s.box[0]) for s in segment(image, [], bond=30)]
    assert ("plus", 200) in kinds and ("structure", 400) in kinds


def test_the_line_width_gives_a_bond_where_the_text_cannot() -> None:
    """Lines drawn 3 px wide measure 3 px (ridge distance 2: 2 × 2 − 1), so the bond is
    14.5 × 3 = 43.5 px; 7 px lines give 101.5; 1 px lines are too thin to tell (None)."""
    for width, expected in ((3, 43.5), (7, 101.5)):
        image, pen = canvas()
        pen.polygon([(60, 60), (100, 40), (140, 60), (140, 100), (100, 120), (60, 100)], outline=0, width=width)
        pen.line((200, 80, 400, 80), fill=0, width=width)
        assert stroke_width(ink_mask(image)) == width and stroke_bond(ink_mask(image)) == expected
    image, pen = canvas()
    pen.line((200, 80, 400, 80), fill=0, width=1)
    assert stroke_bond(ink_mask(image)) is None and stroke_width(ink_mask(canvas()[0])) == 0.0


def fork_image(second_branch: bool = True) -> Image.Image:
    """Reactant box, a stem into a 160 px bar at x = 300, branch arrows to two products."""
    image, pen = canvas(700, 300)
    pen.rectangle((20, 100, 120, 180), outline=0, width=2)
    pen.line((150, 140, 300, 140), fill=0, width=3)          # the stem
    pen.line((300, 60, 300, 220), fill=0, width=3)           # the bar
    arrow(pen, 300, 450, 60)
    if second_branch:
        arrow(pen, 300, 450, 220)
    pen.rectangle((500, 20, 600, 100), outline=0, width=2)
    pen.rectangle((500, 180, 600, 260), outline=0, width=2)
    return image


def test_a_fork_is_one_segment_with_a_branch_per_arrow() -> None:
    """A stem, a 160 px bar (over 2 b = 60 px at the default 30 px bond, 100 % of the
    component's height) and two arrows leaving it to the right: one ``fork`` whose parts
    are the two branches, top first; the products stay structures."""
    segments = segment(fork_image(), [])
    (fork,) = [s for s in segments if s.kind == "fork"]
    assert [(b[1] <= 60 <= b[3], b[1] <= 220 <= b[3]) for b in fork.parts] == [(True, False), (False, True)]
    assert all(b[2] >= 445 for b in fork.parts)
    assert sum(s.kind == "structure" for s in segments) == 3 and not any(s.kind == "arrow" for s in segments)


def test_a_bar_with_one_arrow_is_no_fork() -> None:
    """With one branch the bar and its arrow are not a fork (one reaction needs no fork;
    the component is then laid out as it was)."""
    assert not any(s.kind == "fork" for s in segment(fork_image(second_branch=False), []))


def test_a_long_group_label_joins_its_drawing_where_a_condition_word_stays_text() -> None:
    """``NHBoc`` printed at a bond end has five letters and runs 82 px, wider than 2.5
    bonds of 30 px, the measure that keeps condition words (``reflux``) apart from a
    drawing they stand beside; as a group label (:func:`group_label`) it joins the drawing
    all the same, while ``reflux`` in the same place stays text."""
    def drawn(word: str) -> tuple[int, int, int, int]:
        image, pen = canvas(700, 300)
        pen.polygon([(60, 60), (100, 40), (140, 60), (140, 100), (100, 120), (60, 100)], outline=0, width=2)
        pen.line((140, 80, 170, 80), fill=0, width=2)                  # the bond out to the label
        for k in range(5):                                             # five 14 px glyphs, 3 px apart
            pen.rectangle((172 + 17 * k, 72, 185 + 17 * k, 88), fill=0)
        box = (172, 72, 253, 88)
        line = TextLine(word, box, 90.0, ((word, box),), (90.0,))
        (structure,) = [s for s in segment(image, [line], bond=30) if s.kind == "structure"]
        return structure.box

    assert drawn("NHBoc")[2] >= 253
    assert drawn("reflux")[2] < 172
    assert group_label("NHBoc") and group_label("OTBS,") and group_label("NTs") and group_label("CO2Me")
    assert not group_label("reflux") and not group_label("N") and not group_label("THF/H2O")


def test_a_blob_holds_a_drawing_when_a_stroke_is_longer_than_a_character() -> None:
    """Bond 20 px, so a character is at most 16 px: a 30 px line (the vinyl before a
    printed ``CO2Bu``) is a drawn bond, two 10 px glyphs are not.  OCR's reading of the
    blob, ``7~co,Bu``, is 5 letters of 7 (< 3/4): not a printed word; ``Yield=72%`` is."""
    import numpy as np

    from labrecord.chemdata.extract.layout import holds_drawing, wordlike

    ink = np.zeros((40, 80), dtype=bool)
    ink[20, 2:32] = True                      # a 30 px stroke
    ink[10:20, 40:43] = True                  # glyph-sized marks
    ink[10:20, 50:53] = True
    assert holds_drawing(ink, (0, 0, 79, 39), 20.0)
    assert not holds_drawing(ink, (36, 0, 79, 39), 20.0)
    assert not wordlike("7~co,Bu") and wordlike("Yield=72%")


def _wedge_figure(hashes: list[int]) -> Image.Image:
    """A hexagon (right-hand carbon at x=140) and, 2 bonds of 35 px away, a second
    drawing (a bond from x=210 to 245); between them, hashes of a hashed wedge at the
    given x positions, vertical strokes 2 px wide, 5 px tall and 4 px taller each."""
    image, pen = canvas(400, 200)
    pen.polygon([(70, 100), (88, 70), (122, 70), (140, 100), (122, 130), (88, 130)], outline=0, width=2)
    pen.line((210, 100, 245, 80), fill=0, width=2)
    pen.line((245, 80, 245, 50), fill=0, width=2)
    for k, x in enumerate(hashes):
        half = 2 + 2 * k
        pen.line((x, 100 - half, x, 100 + half), fill=0, width=2)
    return image


def test_a_hashed_wedge_whose_narrow_end_faded_joins_the_drawings_at_its_ends() -> None:
    """Bond 35 px: a character joins a drawing within 0.35 b = 12 px, or a character
    that joined one within 0.3 b = 10 px.  The hashes at x = 156, 165 … 201 (2 px wide,
    7 px apart) chain from the other drawing's bond at x = 210 (8 px from the last one)
    but leave 15 px to the ring, its faint first hashes lost.  The hash at 156 has the
    ring 15 px to its left and the next hash 7 px to its right: ink of two drawings on
    opposite sides within 0.6 b = 21 px, so it unites them.  With no hashes the two
    drawings (70 px apart) stay two; with one hash at x = 175 (34 px from the ring, 34 px
    from the bond) neither is within reach and they stay two."""
    def structures(hashes: list[int]) -> list[tuple[int, int, int, int]]:
        return [s.box for s in segment(_wedge_figure(hashes), [], bond=35) if s.kind == "structure"]

    assert len(structures([156, 165, 174, 183, 192, 201])) == 1
    assert len(structures([])) == 2
    assert len(structures([175])) == 2


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=150, max_value=200))
def test_one_hash_near_only_one_drawing_never_joins_two(x: int) -> None:
    """A single hash-sized mark 15 px below the ring's lowest point has ring ink on one
    side only (the other drawing is over 60 px away): it never unites them."""
    image, pen = canvas(400, 200)
    pen.polygon([(70, 100), (88, 70), (122, 70), (140, 100), (122, 130), (88, 130)], outline=0, width=2)
    pen.line((300, 100, 335, 80), fill=0, width=2)
    pen.line((x // 2 + 30, 145, x // 2 + 30, 150), fill=0, width=2)
    assert len([s for s in segment(image, [], bond=35) if s.kind == "structure"]) == 2


def test_a_label_joins_by_its_word_not_by_the_line_that_holds_it() -> None:
    """OCR reads ``HBr + HO`` as one line: ``HO`` is printed at the drawing's bond end and
    joins it; ``HBr``, 80 px away in the same line, stays text."""
    image, pen = canvas(500, 200)
    pen.polygon([(200, 80), (240, 60), (280, 80), (280, 120), (240, 140), (200, 120)], outline=0, width=2)
    pen.line((200, 120, 182, 130), fill=0, width=2)              # the bond out to HO
    for x in (20, 36, 52):                                       # HBr: three 12 px glyphs
        pen.rectangle((x, 122, x + 11, 138), fill=0)
    pen.line((80, 130, 96, 130), fill=0, width=3)                # "+"
    pen.line((88, 122, 88, 138), fill=0, width=3)
    for x in (150, 166):                                         # HO, ending 3 px before the bond
        pen.rectangle((x, 122, x + 11, 138), fill=0)
    words = (("HBr", (20, 122, 63, 138)), ("+", (80, 122, 96, 138)), ("HO", (150, 122, 177, 138)))
    line = TextLine("HBr + HO", (20, 122, 177, 138), 60.0, words, (90.0, 90.0, 90.0))
    (structure,) = [s for s in segment(image, [line], bond=40) if s.kind == "structure"]
    assert structure.box[0] == 150
