"""Task packages (Harbor layout) of rendered figures, and collecting a run's answers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')
from rdkit import Chem

from labrecord.chemdata.benchmark_tasks import toml_text, verify_answer
from labrecord.cli import main

REACTIONS = """\
c1ccccc1I.OB(O)c1ccc(C)cc1>>c1ccccc1-c1ccc(C)cc1 suzuki-tolyl
Brc1ccc(OC)cc1.OB(O)c1ccccc1>[Pd]>COc1ccc(-c2ccccc2)cc1 suzuki-anisyl
CC(=O)c1ccccc1>>C[C@@H](O)c1ccccc1 asymmetric-reduction
Brc1ccccc1>>OB(O)c1ccccc1>>Cc1ccccc1 two-step
@scope-table [*:1]c1ccc(I)cc1>>[*:1]c1ccc(-c2ccccc2)cc1 R1=Me,OMe,Cl scope
"""
VISIBLE = ("instruction.md", "environment")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return done.value.code, out, err


@pytest.fixture()
def bench(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    (tmp_path / "reactions.smi").write_text(REACTIONS)
    assert run(capsys, "rxn", "render", str(tmp_path / "reactions.smi"), "--out", str(tmp_path / "figures"))[0] == 0
    code, out, err = run(capsys, "rxn", "package", str(tmp_path / "figures"), "--gold", str(tmp_path / "figures"),
                         "--out", str(tmp_path / "tasks"), "--json")
    assert code == 0, err
    assert len(json.loads(out)["tasks"]) == 5
    return tmp_path


def visible_files(task: Path) -> list[Path]:
    files = [task / "instruction.md"] + [p for p in (task / "environment").rglob("*") if p.is_file()]
    assert files[1:], "the environment holds the figure"
    return files


def reference_strings(gold: dict[str, Any]) -> set[str]:
    """Every molecule string of the reference, as written and canonical, and the reaction ids."""
    found: set[str] = set()
    for part in gold["reactions"] + gold.get("templates", []):
        for mol in part.get("reactants", []) + part.get("products", []):
            found.add(mol["smiles"])
            parsed = Chem.MolFromSmiles(mol["smiles"])
            if parsed is not None:
                found.add(Chem.MolToSmiles(parsed))
        if part.get("id"):
            found.add(part["id"])
    return found


def test_no_file_the_system_sees_holds_the_reference(bench: Path) -> None:
    tasks = sorted((bench / "tasks").iterdir())
    assert [t.name for t in tasks] == ["asymmetric-reduction", "scope", "suzuki-anisyl", "suzuki-tolyl", "two-step"]
    instructions = {(t / "instruction.md").read_text() for t in tasks}
    assert len(instructions) == 1          # the same words for every figure: nothing figure-specific leaks
    for task in tasks:
        gold = json.loads((bench / "figures" / f"{task.name}.json").read_text())
        assert json.loads((task / "tests" / "reference.json").read_text())["reactions"] == gold["reactions"]
        secrets = reference_strings(gold)
        for file in visible_files(task):
            data = file.read_bytes()
            for secret in secrets:
                # binary files only for strings long enough that a chance byte match is negligible
                if file.suffix == ".png" and len(secret) < 8:
                    continue
                assert secret.encode() not in data, f"{file} holds {secret!r}"
            assert b"labrecord.rxn/1" not in data and b"selected_examples" not in data
        assert sorted(p.name for p in (task / "environment").iterdir()) == ["Dockerfile", "figure.png"]
        assert {p.name for p in task.iterdir()} == {"instruction.md", "task.toml", "environment", "tests", "solution"}


def test_task_metadata_and_environment(bench: Path) -> None:
    task = bench / "tasks" / "scope"
    meta = tomllib.loads((task / "task.toml").read_text())
    assert meta["version"] == "1.0"
    assert {k: meta["metadata"][k] for k in ("figure_id", "layout", "record_count", "reaction_types", "figure_file")} == {
        "figure_id": "scope", "layout": "scope-table", "record_count": 3, "reaction_types": [], "figure_file": "scope.png"}
    assert meta["metadata"]["source"].endswith("scope.json")
    assert meta["agent"]["timeout_sec"] == 3600.0 and meta["environment"]["cpus"] == 1
    dockerfile = (task / "environment" / "Dockerfile").read_text()
    assert f'"rdkit=={version("rdkit")}"' in dockerfile and "COPY figure.png /app/figure.png" in dockerfile
    assert (task / "tests" / "test.sh").stat().st_mode & 0o100
    umask = os.umask(0)
    os.umask(umask)
    assert (task / "environment" / "figure.png").stat().st_mode & 0o777 == 0o666 & ~umask


def test_the_verifier_scores_the_oracle_answer_one(bench: Path) -> None:
    task = bench / "tasks" / "two-step"
    logs = bench / "logs"
    done = subprocess.run([sys.executable, str(task / "tests" / "verify.py"), "--reference", str(task / "tests" / "reference.json"),
                           "--answer", str(task / "solution" / "answer.json"), "--out", str(logs)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    reward = json.loads((logs / "reward.json").read_text())
    assert reward == {"reward": 1.0, "reaction_f1_nonstereo": 1.0, "molecule_f1_strict": 1.0, "molecule_f1_nonstereo": 1.0}
    assert json.loads((logs / "scores.json").read_text())["per_figure"][0]["n_gold"] == 2
    missing = verify_answer(task / "tests" / "reference.json", bench / "nowhere.json", bench / "logs2")
    assert missing["per_figure"][0]["status"] == "failed" and missing["macro"]["strict"]["f1"] == 0.0


def write_runs(bench: Path) -> Path:
    """Five runs: an exact answer, a ChemEAGLE-style answer with one wrong product, text that
    is not JSON, a timeout and no answer at all.  Returns a folder with the same answers
    named by figure for scoring them directly."""
    tasks, direct = bench / "tasks", bench / "direct"
    direct.mkdir()
    exact = (tasks / "suzuki-tolyl" / "solution" / "answer.json").read_text()
    scope_gold = json.loads((tasks / "scope" / "tests" / "reference.json").read_text())
    eagle = {"reactions": [{"reactants": [m["smiles"] for m in r["reactants"]],
                            "products": ["c1ccccc1" if i == 0 else m["smiles"] for m in r["products"]]}
                           for i, r in enumerate(scope_gold["reactions"])]}
    answers = {"suzuki-tolyl": exact, "scope": json.dumps(eagle), "suzuki-anisyl": "{'reactions': oops"}
    for name, text in answers.items():
        (tasks / name / "run").mkdir()
        (tasks / name / "run" / "answer.json").write_text(text)
        (direct / f"{name}.json").write_text(text)
    (tasks / "two-step" / "run").mkdir()
    (tasks / "two-step" / "run" / "status.json").write_text(json.dumps({"status": "timeout", "error": "agent timed out"}))
    (direct / "two-step.json").write_text(json.dumps({"answer": None, "status": "timeout"}))
    return direct


def test_collect_then_score_equals_scoring_the_answers_directly(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    direct = write_runs(bench)
    code, out, err = run(capsys, "rxn", "collect", str(bench / "tasks"), "--out", str(bench / "answers"), "--system", "agent",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == {"failed": 1, "malformed": 1, "ok": 2, "timeout": 1}
    missing = json.loads((bench / "answers" / "asymmetric-reduction.json").read_text())
    assert (missing["status"], missing["figure_id"]) == ("failed", "asymmetric-reduction")
    assert "missing answer" in missing["error"]
    scores = []
    for pred in (bench / "answers", direct):
        code, out, err = run(capsys, "rxn", "score", "--gold", str(bench / "figures"), "--pred", str(pred), "--json")
        assert code == 0, err
        scores.append(json.loads(out))
    collected, straight = scores
    assert collected["macro"] == straight["macro"] and collected["molecule"] == straight["molecule"]
    assert [r["f1"] for r in collected["per_figure"]] == [r["f1"] for r in straight["per_figure"]]
    # every figure stays in the manifest: 1 exact, scope 2 of 3, the rest zero
    assert collected["macro"]["strict"]["f1"] == pytest.approx((1 + 2 / 3) / 5)
    assert [r["status"] for r in collected["per_figure"]] == ["failed", "ok", "malformed", "ok", "timeout"]


def test_a_bad_run_status_marks_only_its_own_figure(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (bench / "tasks" / "scope" / "run").mkdir()
    (bench / "tasks" / "scope" / "run" / "status.json").write_text(json.dumps({"status": "crashed"}))
    code, out, err = run(capsys, "rxn", "collect", str(bench / "tasks"), "--out", str(bench / "answers"), "--json")
    assert code == 0, err
    assert json.loads(out)["figures"] == 5
    record = json.loads((bench / "answers" / "scope.json").read_text())
    assert record["status"] == "malformed"
    assert "status.json: status 'crashed', expected one of ok, timeout, error, failed" in record["error"]
    code, _, err = run(capsys, "rxn", "collect", str(bench / "figures"), "--out", str(bench / "answers"))
    assert code == 1 and "no task packages" in err


@pytest.mark.parametrize("content", [b"[" * 200_000 + b"]" * 200_000, b"{\"status\": " * 5000 + b"1" + b"}" * 5000,
                                     b"\xff\xfe not text", b"{\"status\": {\"a\": []}}"])
def test_a_hostile_status_file_is_one_figure_s_failure(bench: Path, capsys: pytest.CaptureFixture[str],
                                                        content: bytes) -> None:
    """A status.json nested 200,000 deep once crashed the whole collection (RecursionError)."""
    (bench / "tasks" / "scope" / "run").mkdir()
    (bench / "tasks" / "scope" / "run" / "status.json").write_bytes(content)
    code, out, err = run(capsys, "rxn", "collect", str(bench / "tasks"), "--out", str(bench / "answers"), "--json")
    assert code == 0, err
    records = {p.stem: json.loads(p.read_text()) for p in (bench / "answers").glob("*.json")}
    assert len(records) == 5 and records["scope"]["status"] == "malformed"
    assert "status.json" in records["scope"]["error"] and len(records["scope"]["error"]) < 500


def test_a_deeply_nested_answer_is_one_figure_s_failure(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (bench / "tasks" / "scope" / "run").mkdir()
    (bench / "tasks" / "scope" / "run" / "answer.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    code, _, err = run(capsys, "rxn", "collect", str(bench / "tasks"), "--out", str(bench / "answers"), "--json")
    assert code == 0, err
    assert json.loads((bench / "answers" / "scope.json").read_text())["status"] in ("malformed", "failed")
    assert len(list((bench / "answers").glob("*.json"))) == 5


@pytest.mark.parametrize("figure_id", ["../../escaped", "a/b", "/tmp/abs", ".hidden", "", "x" * 200, "a\x00b"])
def test_collect_writes_only_under_out(bench: Path, capsys: pytest.CaptureFixture[str], figure_id: str) -> None:
    """A figure_id of ../../… in task.toml once wrote its record outside --out."""
    toml = bench / "tasks" / "scope" / "task.toml"
    text = toml.read_text()
    toml.write_text(text.replace('figure_id = "scope"', f"figure_id = {json.dumps(figure_id)}"))
    assert toml.read_text() != text
    before = sorted(str(p) for p in bench.rglob("*"))
    code, out, err = run(capsys, "rxn", "collect", str(bench / "tasks"), "--out", str(bench / "o" / "answers"))
    assert code == 1
    assert "tasks/scope" in err and "refused" in err and "Traceback" not in err
    after = sorted(str(p) for p in bench.rglob("*") if not str(p).startswith(str(bench / "o")))
    assert after == before  # nothing written outside --out
    assert sorted(p.name for p in (bench / "o" / "answers").iterdir()) == [
        "asymmetric-reduction.json", "suzuki-anisyl.json", "suzuki-tolyl.json", "two-step.json"]


def test_package_refuses_two_gold_documents_for_one_figure(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two gold files for one figure once printed "wrote 2" and wrote one."""
    gold = bench / "gold"
    gold.mkdir()
    document = json.loads((bench / "figures" / "scope.json").read_text())
    for name in ("first.json", "second.json"):
        (gold / name).write_text(json.dumps(document))
    code, out, err = run(capsys, "rxn", "package", str(bench / "figures"), "--gold", str(gold), "--out", str(bench / "t2"))
    assert code == 1 and "gold figure 'scope' also given by" in err, err
    assert not (bench / "t2").exists()


def test_package_refuses_an_unsafe_figure_id(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = bench / "gold"
    gold.mkdir()
    document = json.loads((bench / "figures" / "scope.json").read_text())
    (gold / "scope.json").write_text(json.dumps({**document, "figure_id": "../escaped"}))
    code, out, err = run(capsys, "rxn", "package", str(bench / "figures"), "--gold", str(gold), "--out", str(bench / "t2"))
    assert code == 1 and "'../escaped' is not a safe file name" in err, err
    assert not (bench / "escaped").exists() and not (bench / "t2").exists()


@pytest.mark.parametrize("command", [
    ("rxn", "package", "{b}/figures", "--gold", "{b}/figures", "--out", "{b}/figures"),
    ("rxn", "package", "{b}/figures", "--gold", "{b}/figures", "--out", "{b}/figures/tasks"),
    ("rxn", "package", "{b}/figures", "--gold", "{b}/figures", "--out", "{b}"),
    ("rxn", "collect", "{b}/tasks", "--out", "{b}/tasks/scope"),
    ("rxn", "render", "{b}/reactions.smi", "--out", "{b}"),
    ("rxn", "ingest", "{b}/figures", "--db", "{b}/figures/scope.json", "--gold"),
])
def test_rxn_outputs_never_land_on_inputs(bench: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]) -> None:
    before = {p: p.read_bytes() for p in bench.rglob("*") if p.is_file()}
    code, _, err = run(capsys, *[part.format(b=bench) for part in command])
    assert code == 1 and "choose a path outside the inputs" in err, err
    assert len(err.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in bench.rglob("*") if p.is_file()} == before


def test_package_needs_an_image_for_every_gold_figure(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (bench / "figures" / "scope.png").unlink()
    code, _, err = run(capsys, "rxn", "package", str(bench / "figures"), "--gold", str(bench / "figures"),
                       "--out", str(bench / "t2"))
    assert code == 1 and "no image for gold figure 'scope'" in err


text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@given(st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
                       st.one_of(text, st.integers(-10**6, 10**6), st.booleans(), st.lists(text, max_size=3)), max_size=5))
def test_toml_round_trip(values: dict[str, Any]) -> None:
    assert tomllib.loads(toml_text({"metadata": values}, {"version": "1.0"})) == {"version": "1.0", "metadata": values}
