"""Tests for chemdata/extract/runner.py and ``labrecord rxn extract``/``render`` end to end."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.support import require_module, require_programs

from labrecord.chemdata.extract.runner import ExtractConfig, list_figures, run_extraction
from labrecord.cli import main
from labrecord.errors import LabrecordError

from .conftest import fake_tool, needs_tools
from .modelserver import model_server


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def records(out: Path) -> dict[str, dict[str, Any]]:
    """Every record of a run, without the wall-clock fields that differ between runs."""
    found = {}
    for path in sorted(out.glob("*.json")):
        document = json.loads(path.read_text())
        document.pop("timing", None)
        found[path.stem] = document
    return found


@pytest.fixture(scope="module")
def baseline(rendered: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``--workers 1`` records of the rendered figures read by osra (shared by the comparisons
    with ``ExtractConfig()``, whose reader is osra; DECIMER end to end: test_decimer.py)."""
    require_programs("osra", "tesseract", install="bash scripts/install-test-deps.sh (osra, tesseract-ocr)")
    out = tmp_path_factory.mktemp("baseline")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exited:
        main(["rxn", "extract", str(rendered), "--out", str(out), "--workers", "1", "--readers", "osra", "--json"])
    assert exited.value.code == 0
    (out / "printed-summary.txt").write_text(printed.getvalue())
    return out


@needs_tools
def test_render_extract_score_end_to_end(rendered: Path, baseline: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = baseline
    summary = json.loads((out / "printed-summary.txt").read_text())
    assert summary["figures"] == 3 and summary["status"] == {"ok": 3}
    for figure in ("suzuki-1", "two-step", "scope-t"):
        assert (out / f"{figure}.json").exists() and (out / "trajectories" / f"{figure}.ndjson").exists()
    code, stdout, _ = cli(capsys, "rxn", "score", "--gold", str(rendered), "--pred", str(out), "--json")
    scores = json.loads(stdout)
    by_figure = {row["figure_id"]: row for row in scores["per_figure"]}
    assert set(by_figure) == {"suzuki-1", "two-step", "scope-t"}
    # the scope table is read, bound and instantiated through the R-group engine
    assert by_figure["scope-t"]["matched_strict"] >= 2
    assert scores["macro"]["strict"]["f1"] >= 0.6


@needs_tools
def test_provenance_and_trajectory_content(baseline: Path) -> None:
    scope = json.loads((baseline / "scope-t.json").read_text())
    origins = {m["provenance"]["origin"] for r in scope["reactions"] for m in r["reactants"] + r["products"]}
    assert origins == {"template_derived"}
    assert scope["templates"][0]["products"][0]["esmiles"].count("*") == 1
    events = [json.loads(line) for line in (baseline / "trajectories" / "suzuki-1.ndjson").read_text().splitlines()]
    assert events[0]["kind"] == "input" and events[-1]["kind"] == "result"
    tools = [e["tool"] for e in events if e["kind"] == "tool_call"]
    assert tools[0] == "tesseract" and tools.count("osra") >= 2
    suzuki = json.loads((baseline / "suzuki-1.json").read_text())
    assert suzuki["reactions"][0]["products"][0]["provenance"]["origin"] == "tool_read"
    assert suzuki["extra"]["readings"][0]["confidence"] is not None
    # the catalyst printed over the arrow is read by the second text pass and kept as a condition
    assert "Pd" in " ".join(c.get("text", "") for c in suzuki["reactions"][0]["conditions"])


@needs_tools
def test_ray_executor_gives_the_same_records(rendered: Path, baseline: Path, tmp_path: Path) -> None:
    ray = require_module("ray", 'pip install "labrecord[ray]"')
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        summary = run_extraction(rendered, tmp_path, ExtractConfig(), executor="ray")
    finally:
        ray.shutdown()
    assert summary["executor"] == "ray"
    assert records(tmp_path) == records(baseline)


@needs_tools
def test_worker_pool_gives_the_same_records(rendered: Path, baseline: Path, tmp_path: Path) -> None:
    run_extraction(rendered, tmp_path, ExtractConfig(), workers=2)
    assert records(tmp_path) == records(baseline)


def test_tool_error_gives_failed_status_for_every_figure(rendered: Path, tmp_path: Path) -> None:
    broken = fake_tool(tmp_path, "osra", "echo 'segfault' >&2; exit 139")
    tesseract = fake_tool(tmp_path, "tesseract", "exit 0")
    summary = run_extraction(rendered, tmp_path / "out", ExtractConfig(osra_command=(broken,), tesseract_command=(tesseract,)))
    assert summary["status"] == {"failed": 3} and summary["stage_failures"] == {"recognition": 3}
    document = json.loads((tmp_path / "out" / "suzuki-1.json").read_text())
    assert document["status"] == "failed" and "exit status 139" in document["error"]
    assert document["reactions"] == [] and document["schema"] == "labrecord.rxn/1"
    assert (tmp_path / "out" / "trajectories" / "suzuki-1.ndjson").exists()


def test_slow_tool_gives_timeout_status(rendered: Path, tmp_path: Path) -> None:
    slow = fake_tool(tmp_path, "tesseract", "sleep 30")
    summary = run_extraction(rendered, tmp_path / "out", ExtractConfig(tesseract_command=(slow,), tool_timeout_s=0.2))
    assert summary["status"] == {"timeout": 3} and summary["stage_failures"] == {"text": 3}


def test_spent_budget_fails_the_figure_at_its_stage(rendered: Path, tmp_path: Path) -> None:
    summary = run_extraction(rendered, tmp_path, ExtractConfig(budget_s=1e-9))
    assert summary["status"] == {"failed": 3} and all(kind.endswith(":budget") for kind in summary["failure_kinds"])


def test_budget_stops_a_running_stage(rendered: Path, tmp_path: Path) -> None:
    """A text reader that hangs for 30 s under a 120 s tool limit: the 1.5 s budget stops
    it while it runs; each figure fails at "text" with one line, the others go on."""
    slow = fake_tool(tmp_path, "tesseract", "sleep 30")
    summary = run_extraction(rendered, tmp_path / "out", ExtractConfig(tesseract_command=(slow,), budget_s=1.5))
    assert summary["status"] == {"failed": 3} and summary["failure_kinds"] == {"text:budget": 3}
    document = json.loads((tmp_path / "out" / "suzuki-1.json").read_text())
    assert document["error"] == "budget of 1.5s used up during text" and document["timing"]["wall_s"] < 30


def test_figure_over_the_pixel_limit_fails_at_input(tmp_path: Path) -> None:
    """A blank 4000 x 3000 PNG (12 Mpx, a few KiB) over a 10 Mpx limit is refused before
    any tool runs; the small figure beside it is still extracted (here: failed later,
    as a blank figure gives nothing — but not at input)."""
    from PIL import Image

    figures = tmp_path / "figs"
    figures.mkdir()
    Image.new("L", (4000, 3000), 255).save(figures / "blank.png")
    Image.new("L", (40, 30), 255).save(figures / "small.png")
    summary = run_extraction(figures, tmp_path / "out", ExtractConfig(max_pixels=10_000_000,
                                                                      tesseract_command=("true",), osra_command=("true",)))
    blank = json.loads((tmp_path / "out" / "blank.json").read_text())
    assert blank["status"] == "failed" and blank["extra"]["failed_stage"] == "input"
    assert blank["error"] == "blank.png: 4000x3000 = 12000000 pixels, over the limit of 10000000"
    assert summary["figures"] == 2 and summary["failure_kinds"].get("input:too_large") == 1
    small = json.loads((tmp_path / "out" / "small.json").read_text())
    assert small["extra"]["failed_stage"] != "input"


def test_unreadable_image_is_failed_not_dropped(tmp_path: Path) -> None:
    figures = tmp_path / "figs"
    figures.mkdir()
    (figures / "broken.png").write_bytes(b"not a png")
    tool = fake_tool(tmp_path, "tesseract", "exit 0")
    summary = run_extraction(figures, tmp_path / "out", ExtractConfig(tesseract_command=(tool,)))
    document = json.loads((tmp_path / "out" / "broken.json").read_text())
    assert summary["status"] == {"failed": 1} and "UnidentifiedImageError" in document["error"]


@needs_tools
def test_model_endpoint_plan_replaces_the_rules(rendered: Path, tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> tuple[int, str]:
        evidence = json.loads(body["messages"][1]["content"][0]["text"].split("\n", 1)[1])
        plan = evidence["rule_based_plan"]
        for reaction in plan["reactions"]:
            reaction["reactants"].append({"smiles": "O"})  # the model adds water as a reactant
        return 200, json.dumps(plan)

    figures = tmp_path / "figs"
    figures.mkdir()
    shutil.copy(rendered / "suzuki-1.png", figures)
    with model_server(answer) as (url, received):
        run_extraction(figures, tmp_path / "out", ExtractConfig(model_endpoint=url, model="vl"))
    assert len(received) == 1
    document = json.loads((tmp_path / "out" / "suzuki-1.json").read_text())
    assert document["extra"]["plan_source"] == "model"
    water = document["reactions"][0]["reactants"][-1]
    assert water == {"smiles": "O", "provenance": {"origin": "model_written"}}
    kinds = [json.loads(line)["kind"] for line in (tmp_path / "out" / "trajectories" / "suzuki-1.ndjson").read_text().splitlines()]
    assert kinds.count("model_message") == 2


@needs_tools
def test_model_error_gives_failed_status(rendered: Path, tmp_path: Path) -> None:
    figures = tmp_path / "figs"
    figures.mkdir()
    shutil.copy(rendered / "suzuki-1.png", figures)
    with model_server(lambda body: (503, "")) as (url, _):
        summary = run_extraction(figures, tmp_path / "out", ExtractConfig(model_endpoint=url, model="vl"))
    assert summary["failure_kinds"] == {"model:failed": 1}


def test_figure_listing_rules(tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match="no figures"):
        list_figures(tmp_path)
    (tmp_path / "a.png").write_bytes(b"")
    (tmp_path / "a.jpg").write_bytes(b"")
    with pytest.raises(LabrecordError, match="figure id 'a' also names"):
        list_figures(tmp_path)


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "a.png").write_bytes(b"")
    code, _, err = cli(capsys, "rxn", "extract", str(figures), "--out", str(tmp_path / "o"), "--workers", "0")
    assert code == 1 and err.strip() == "Error: --workers must be at least 1, got 0"
    code, _, err = cli(capsys, "rxn", "extract", str(figures), "--out", str(tmp_path / "o"), "--model", "x")
    assert code == 1 and "go together" in err


def test_nothing_extracted_is_failed_empty_with_its_stage(rendered: Path, tmp_path: Path) -> None:
    # osra reads nothing: the figures run through every stage but give no reaction
    silent = fake_tool(tmp_path, "osra", "exit 0")
    summary = run_extraction(rendered, tmp_path / "out", ExtractConfig(osra_command=(silent,)))
    assert summary["status"] == {"failed": 3}
    assert summary["failure_kinds"]["recognition:empty"] == 3
    document = json.loads((tmp_path / "out" / "suzuki-1.json").read_text())
    assert document["extra"]["failed_stage"] == "recognition" and document["extra"]["failed_reason"] == "empty"
    assert document["error"].startswith("empty:")


@pytest.mark.parametrize(("bond", "target", "expected"), [(15, 45, 3.0), (45, 45, 1.0), (40, 45, 1.0), (200, 45, 0.25),
                                                          (5, 45, 4.0), (30, None, 1.0)])
def test_crop_scale(bond: float, target: float | None, expected: float) -> None:
    from labrecord.chemdata.extract.runner import crop_scale

    assert crop_scale(bond, target) == expected


def _stage_server_answer(layout: list[dict[str, Any]], smiles: dict[str, str]) -> Any:
    """A stand-in vision model: the given layout; each region read by its index."""
    def answer(body: dict[str, Any]) -> tuple[int, str]:
        system = body["messages"][0]["content"]
        if "lay out" in system:
            return 200, json.dumps({"segments": layout})
        regions = json.loads(body["messages"][1]["content"][0]["text"].split("\n", 1)[1])["regions"]
        return 200, json.dumps({"structures": [{"region": r, "smiles": smiles[r]} for r in regions if r in smiles]})
    return answer


def test_model_takes_over_layout_and_recognition(tmp_path: Path) -> None:
    from PIL import Image

    figures = tmp_path / "figs"
    figures.mkdir()
    Image.new("L", (400, 200), 255).save(figures / "blank.png")  # nothing for the tools to find
    broken_osra = fake_tool(tmp_path, "osra", "echo 'osra must not run' >&2; exit 1")
    silent_tesseract = fake_tool(tmp_path, "tesseract", "exit 0")
    layout = [{"kind": "structure", "box": [10, 50, 100, 150]}, {"kind": "arrow", "box": [150, 95, 250, 105]},
              {"kind": "structure", "box": [300, 50, 390, 150]}]
    answer = _stage_server_answer(layout, {"s0": "Ic1ccccc1", "s2": "c1ccc(-c2ccccc2)cc1"})
    config = dict(osra_command=(broken_osra,), tesseract_command=(silent_tesseract,), model="vl")
    with model_server(answer) as (url, received):
        summary = run_extraction(figures, tmp_path / "out", ExtractConfig(
            model_endpoint=url, model_stages=("layout", "recognition"), **config))  # type: ignore[arg-type]
    assert summary["status"] == {"ok": 1} and len(received) == 2
    document = json.loads((tmp_path / "out" / "blank.json").read_text())
    assert document["extra"]["layout_source"] == "model" and document["extra"]["recognition_source"] == "model"
    assert document["extra"]["plan_source"] == "rules"
    (reaction,) = document["reactions"]
    assert [m["smiles"] for m in reaction["reactants"]] == ["Ic1ccccc1"]
    assert [m["smiles"] for m in reaction["products"]] == ["c1ccc(-c2ccccc2)cc1"]
    assert {m["provenance"]["origin"] for m in reaction["reactants"] + reaction["products"]} == {"model_written"}
    assert reaction["products"][0]["provenance"]["region"] == "300,50,390,150"
    # the same figure with the tools' layout: the blank page has no arrow
    with model_server(answer) as (url, received):
        summary = run_extraction(figures, tmp_path / "out2", ExtractConfig(
            model_endpoint=url, model_stages=("recognition",), **config))  # type: ignore[arg-type]
    assert summary["failure_kinds"] == {"association:no_arrow": 1, "layout:empty": 1} and received == []


def test_a_bad_model_layout_fails_the_layout_stage(tmp_path: Path) -> None:
    from PIL import Image

    figures = tmp_path / "figs"
    figures.mkdir()
    Image.new("L", (100, 100), 255).save(figures / "blank.png")
    silent = fake_tool(tmp_path, "tesseract", "exit 0")
    with model_server(lambda body: (200, '{"segments": [{"kind": "wiggle", "box": [0, 0, 5, 5]}]}')) as (url, _):
        summary = run_extraction(figures, tmp_path / "out", ExtractConfig(
            tesseract_command=(silent,), model_endpoint=url, model="vl", model_stages=("layout",)))
    assert summary["failure_kinds"] == {"layout:failed": 1}


def test_model_stages_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "a.png").write_bytes(b"")
    code, _, err = cli(capsys, "rxn", "extract", str(figures), "--out", str(tmp_path / "o"), "--model-stages", "layout")
    assert code == 1 and err.strip() == "Error: --model-stages needs --model-endpoint and --model"
    code, _, err = cli(capsys, "rxn", "extract", str(figures), "--out", str(tmp_path / "o"), "--model-endpoint",
                       "http://127.0.0.1:9/v1", "--model", "vl", "--model-stages", "layout,ocr")
    assert code == 1 and "unknown model stage 'ocr'" in err
    with pytest.raises(LabrecordError, match="model-stages"):
        run_extraction(figures, tmp_path / "o", ExtractConfig(model_stages=("ocr",)))


def test_sound_first_prefers_a_sanitizable_reading_then_confidence() -> None:
    from labrecord.chemdata.extract.runner import sound_first

    # the second is the most confident but has a five-valent carbon; the third wins on confidence
    assert sound_first([("CCO", 2.0), ("C(C)(C)(C)(C)C", 9.0), ("c1ccccc1O", 4.0)]) == 2
    assert sound_first([("CCO", 3.0), ("CCN", 3.0)]) == 0          # ties keep the target scale's reading
    assert sound_first([("C(C)(C)(C)(C)C", 1.0), ("N(C)(C)(C)(C)C", 2.0)]) == 1  # none sound: confidence


@given(st.lists(st.tuples(st.sampled_from(["CCO", "c1ccccc1", "C(C)(C)(C)(C)C", "*C(=O)O", "not smiles"]),
                          st.floats(-5, 10)), min_size=1, max_size=5))
def test_sound_first_never_keeps_an_unsound_reading_over_a_sound_one(readings: list[tuple[str, float]]) -> None:
    from rdkit import Chem

    from labrecord.chemdata.extract.runner import sound_first

    sound = [Chem.MolFromSmiles(s) is not None for s, _ in readings]
    kept = sound_first(readings)
    assert sound[kept] or not any(sound)
    assert readings[kept][1] == max(c for (_, c), ok in zip(readings, sound) if ok == sound[kept])


@pytest.mark.parametrize(("bond", "multiscale", "expected"), [(15, True, [3.0, 1.0, 1.732]), (15, False, [3.0]),
                                                              (45, True, [1.0]), (180, True, [0.25, 1.0, 0.5])])
def test_crop_scales(bond: float, multiscale: bool, expected: list[float]) -> None:
    from labrecord.chemdata.extract.runner import crop_scales

    assert crop_scales(bond, ExtractConfig(multiscale=multiscale)) == expected


def test_a_crop_leaves_out_a_neighbours_ink_but_keeps_its_own_faint_ink(tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    from labrecord.chemdata.extract.layout import Segment
    from labrecord.chemdata.extract.runner import _crop_file, foreign_boxes

    page = np.full((100, 200), 255, dtype=np.uint8)
    page[40:42, 10:60] = 0        # the structure's own bond (one of its parts)
    page[40:42, 60:90] = 200      # a faint bond of the same drawing, lighter than the ink threshold
    page[20:80, 85:95] = 0        # a neighbour reaching into the box
    segments = [Segment("structure", (10, 30, 90, 50), 0, ((10, 40, 59, 41),)), Segment("structure", (85, 20, 150, 80), 0)]
    foreign = foreign_boxes(segments, 0)
    assert foreign == ((85, 20, 150, 80),)
    path, offset = _crop_file(Image.fromarray(page), segments[0].box, str(tmp_path), "c.png", segments[0].parts, 1.0, foreign)
    crop = np.asarray(Image.open(path))[30:-30, 30:-30]  # without the white margin
    assert offset == (10 - 30, 30 - 30)
    assert (crop[10:12, 0:50] == 0).all() and (crop[10:12, 50:75] == 200).all() and (crop[:, 75:] == 255).all()


def test_a_table_region_ignores_glyph_high_blobs_but_not_drawings() -> None:
    from labrecord.chemdata.extract.layout import Segment
    from labrecord.chemdata.extract.runner import _table_region

    row = [Segment("structure", (10, 10, 110, 110), 0), Segment("arrow", (150, 55, 250, 65), 0),
           Segment("structure", (300, 10, 400, 110), 0)]
    glyphs = Segment("structure", (200, 150, 240, 180), 1)          # 31 px: a superscripted header word
    drawing = Segment("structure", (200, 150, 300, 250), 1)         # 101 px: a drawn product
    assert _table_region(row + [glyphs], (400, 500), bond=30) == (0, 113, 499, 399)
    assert _table_region(row + [drawing], (400, 500), bond=30) is None


def test_a_printed_formula_is_read_from_the_words_inside_the_blob() -> None:
    from labrecord.chemdata.extract.runner import _printed_formula
    from labrecord.chemdata.extract.tesseract import TextLine

    lines = [TextLine("H.N-C=N", (216, 103, 289, 118), 3.0, (("H.N-C=N", (216, 103, 289, 118)),), (3.0,)),
             TextLine("base", (340, 90, 375, 102), 96.0, (("base", (340, 90, 375, 102)),), (96.0,))]
    assert _printed_formula((212, 99, 294, 122), lines) == "N#CN"
    assert _printed_formula((330, 85, 380, 105), lines) is None      # a condition word is no formula
    assert _printed_formula((0, 0, 50, 50), lines) is None           # no word inside


def test_a_small_molecule_printed_beside_the_arrow_is_a_species_of_the_row() -> None:
    """The dithiocarbamate row prints ``R+ CS2`` in one OCR line with the ``rt, 30 min``
    under the arrow (arrow x 645..799, axis y 161.5).  ``cs,`` (x 607..646, centre x
    626.5 < 645, centre y 184, 22.5 px from the axis, under 1.5 bonds of 30) is CS2: its
    box is cut at the arrow's tail (x1 = 644) and reaches the axis (y0 = 161).  ``rt,``
    stands under the arrow (a condition) and ``R+`` names no molecule."""
    from labrecord.chemdata.extract.layout import Segment
    from labrecord.chemdata.extract.runner import _printed_species
    from labrecord.chemdata.extract.tesseract import TextLine

    words = (("R+", (556, 163, 591, 186)), ("cs,", (607, 173, 646, 195)), ("rt,", (672, 172, 692, 191)))
    lines = [TextLine("R+ cs, rt,", (556, 163, 692, 195), 70.0, words, (93.0, 70.0, 70.0))]
    segments = [Segment("structure", (456, 105, 590, 218), 0), Segment("text", (556, 163, 770, 195), 0),
                Segment("arrow", (645, 155, 799, 168), 0)]
    assert _printed_species(segments, lines, [], 30.0) == [((607, 161, 644, 195), 0, "S=C=S")]
    assert _printed_species(segments, lines, [(600, 170, 650, 199)], 30.0) == []   # already read there
    assert _printed_species(segments, lines, [], 10.0) == []                        # 22.5 px off the axis > 15


def test_a_reagent_printed_by_name_is_read_from_its_name_not_by_osra(tmp_path: Path) -> None:
    """Bond 30 px.  A word-high blob (x 100..190, y 40..60: 21 px <= 1.2 b = 36 px) whose
    OCR word ``B,(pin)2`` names B2(pin)2 is read from the name (source ``formula``,
    reader tesseract) though osra, here a stand-in that reads a C8 chain everywhere,
    would read it soundly; a drawing two bonds tall (y 100..170) beside it is osra's."""
    from PIL import Image, ImageDraw

    from labrecord.chemdata.extract.layout import Segment
    from labrecord.chemdata.extract.runner import _printed_name, _recognize
    from labrecord.chemdata.extract.tesseract import TextLine
    from labrecord.chemdata.extract.trajectory import Trajectory

    image = Image.new("L", (300, 200), 255)
    pen = ImageDraw.Draw(image)
    pen.rectangle((100, 40, 190, 60), fill=0)
    pen.polygon([(100, 120), (130, 100), (160, 120), (160, 150), (130, 170), (100, 150)], outline=0, width=2)
    lines = [TextLine("B,(pin)2", (100, 40, 190, 60), 25.0, (("B,(pin)2", (100, 40, 190, 60)),), (25.0,))]
    segments = [Segment("structure", (100, 40, 190, 60), 0), Segment("structure", (100, 100, 160, 170), 1)]
    chain = fake_tool(tmp_path, "osra", "echo 'CCCCCCCC 1.0 2x2-40x40'")
    config = ExtractConfig(osra_command=(chain,), osra_dictionaries=False, multiscale=False)
    _, readings = _recognize(Trajectory("f", 60.0), tmp_path / "f.png", image, segments, config, 30.0, lines)
    by_box = {r.box: (r.smiles, r.source, r.reader) for r in readings}
    assert by_box[(100, 40, 190, 60)] == ("CC1(C)OB(B2OC(C)(C)C(C)(C)O2)OC1(C)C", "formula", "tesseract")
    assert by_box[(100, 100, 160, 170)][1:] == ("crop", "osra")
    assert _printed_name((100, 100, 160, 170), lines) is None          # no word inside the drawing


def test_small_print_is_read_again_enlarged_by_the_height_of_its_well_read_words() -> None:
    """Well-read words 11 px high (median 11 < 18) give ceil(24 / 11) = 3, capped at 3;
    12 px give 2; 20 px give 1; words under confidence 60 or without a letter or digit
    (``—``) do not count, and nothing well read gives 1."""
    from labrecord.chemdata.extract.runner import text_scale
    from labrecord.chemdata.extract.tesseract import TextLine

    def lines(height: int, conf: float = 90.0, word: str = "5e") -> list[TextLine]:
        return [TextLine(word, (0, 10 * k, 20, 10 * k + height - 1), conf, ((word, (0, 10 * k, 20, 10 * k + height - 1)),),
                         (conf,)) for k in range(5)]

    assert text_scale(lines(11)) == 3
    assert text_scale(lines(12)) == 2
    assert text_scale(lines(20)) == 1
    assert text_scale(lines(11, conf=40.0)) == 1
    assert text_scale(lines(11, word="—")) == 1
    assert text_scale(lines(12) + lines(30) + lines(30)) == 1          # median 30


def test_the_page_is_read_again_enlarged_and_its_words_replace_the_page_pass(tmp_path: Path) -> None:
    """A stand-in tesseract reports the word ``5e`` 11 px high at (30, 30)-(50, 40) on
    every image: the page pass as drawn keeps it there; 11 px < 18 gives scale 3, and
    the enlarged pass's report comes back as (10, 10)-(17, 14).  Swapped into the lines
    after the crop passes, the enlarged words replace the page pass and a crop pass's
    line stays."""
    from PIL import Image

    from labrecord.chemdata.extract.runner import _page_text, _swap_page_text
    from labrecord.chemdata.extract.tesseract import TextLine
    from labrecord.chemdata.extract.trajectory import Trajectory

    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
    (tmp_path / "out.tsv").write_text(header + "5\t1\t1\t1\t1\t1\t30\t30\t20\t10\t90\t5e\n")
    tool = fake_tool(tmp_path, "tesseract", f"cat {tmp_path / 'out.tsv'}")
    image = Image.new("L", (100, 60), 255)
    page, enlarged = _page_text(Trajectory("f", 60.0), tmp_path / "f.png", image, ExtractConfig(tesseract_command=(tool,)))
    assert [ln.box for ln in page] == [(30, 30, 50, 40)]
    assert enlarged is not None and [ln.box for ln in enlarged] == [(10, 10, 17, 14)]
    crop = TextLine("rt", (60, 5, 70, 12), 90.0)
    assert [ln.box for ln in _swap_page_text(page + [crop], page, enlarged)] == [(60, 5, 70, 12), (10, 10, 17, 14)]


def test_the_labels_printed_in_a_drawing_are_its_variable_words_normalized() -> None:
    """``Ry`` is R₁ as OCR reads it, ``R2=`` a label run into its sign; ``OH`` and a word
    outside the drawing's box are no label of it."""
    from labrecord.chemdata.extract.runner import _printed_labels
    from labrecord.chemdata.extract.tesseract import TextLine

    line = TextLine("Ry R OH R2= R3", (10, 10, 300, 60), 90.0, words=(
        ("Ry", (10, 10, 20, 20)), ("R", (30, 30, 40, 40)), ("OH", (45, 45, 55, 55)), ("R2=", (50, 50, 60, 60)),
        ("R3", (250, 50, 260, 60))))
    assert _printed_labels((0, 0, 100, 100), [line]) == {"R1", "R", "R2"}
