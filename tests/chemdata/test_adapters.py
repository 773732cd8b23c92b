"""Adapters: each input format, figure ids, failures kept in the manifest."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from labrecord.chemdata import load_documents
from labrecord.chemdata.adapters import convert, detect, figure_id_from
from labrecord.errors import LabrecordError

CHEMEAGLE = {"reactions": [{"reactants": [{"smiles": "CCO"}, {"smiles": "CC(=O)O"}],
                            "products": [{"smiles": "CCOC(C)=O"}],
                            "conditions": [{"role": "catalyst", "smiles": "OS(=O)(=O)O"}, {"text": "reflux"}],
                            "yield": 85}]}


def write(path: Path, obj: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return path


@pytest.mark.parametrize("name, expected", [("X.png", "X"), ("X.jpg", "X"), ("X", "X"), ("dir/X.JPEG", "X"),
                                            ("X.v2", "X.v2"), ("a.b.png", "a.b")])
def test_figure_id_drops_one_image_extension(name: str, expected: str) -> None:
    assert figure_id_from(name) == expected


def test_chemeagle_style_reactions(tmp_path: Path) -> None:
    (doc,) = load_documents(write(tmp_path / "fig7.png.json", CHEMEAGLE), system="eagle")
    assert (doc.figure_id, doc.system, doc.status) == ("fig7", "eagle", "ok")
    rxn = doc.reactions[0]
    assert [m.smiles for m in rxn.reactants] == ["CCO", "CC(=O)O"]
    assert [(c.role, c.smiles, c.text) for c in rxn.conditions] == [("catalyst", "OS(=O)(=O)O", None), ("condition", None, "reflux")]
    assert rxn.yield_ == "85"


def test_document_id_field_wins_over_file_stem(tmp_path: Path) -> None:
    (doc,) = load_documents(write(tmp_path / "whatever.json", {**CHEMEAGLE, "image": "imgs/F12.jpg"}))
    assert doc.figure_id == "F12"


def test_openchemie_rgroup_file_with_many_diagrams(tmp_path: Path) -> None:
    data = [{"file_name": "acs.joc example 1.png",
             "reaction_template": {"reactants": ["*C(=O)NN=CC(F)(F)F", "N#CN"], "products": ["*C(=O)N1NC(C(F)(F)F)N=C1N"]},
             "detailed_reactions": {"a": {"reactants": ["O=C(NN=CC(F)(F)F)c1ccccc1", "N#CN"],
                                          "products": ["NC1=NC(C(F)(F)F)NN1C(=O)c1ccccc1"]}}},
            {"file_name": "acs.joc example 2.png", "reaction_template": {}, "detailed_reactions": {}}]
    docs = load_documents(write(tmp_path / "r_group.json", data), gold=True)
    assert [d.figure_id for d in docs] == ["acs.joc example 1", "acs.joc example 2"]
    assert len(docs[0].reactions) == 1 and docs[0].reactions[0].identifiers == ["a"]
    assert len(docs[0].templates) == 1 and docs[0].templates[0].reactants[0].smiles.startswith("*")


def test_gold_v2_selected_examples_and_templates(tmp_path: Path) -> None:
    gold = {"file_name": "g1.png", "is_multistep": True, "layout": "multistep",
            "reaction_templates": [{"reactants": ["[R1]c1ccccc1"], "products": ["[R1]c1ccccc1C"]}],
            "selected_examples": [{"steps": [{"reactants": ["CCO"], "products": ["CC=O"]},
                                             {"reactants": ["CC=O"], "products": ["CC(=O)O"]}]}]}
    (doc,) = load_documents(write(tmp_path / "g1.json", gold), gold=True)
    assert (doc.system, doc.layout, doc.extra) == ("gold", "multistep", {"is_multistep": True})
    assert [r.step for r in doc.reactions] == [1, 2]
    assert len(doc.templates) == 1


def test_rollout_wrapper_with_json_text_answer(tmp_path: Path) -> None:
    wrapper = {"model": "vlm-x", "trajectory": [{"tool": "ocr"}], "wall_s": 12.5,
               "answer": "```json\n" + json.dumps(CHEMEAGLE) + "\n```"}
    (doc,) = load_documents(write(tmp_path / "f3.json", wrapper))
    assert (doc.system, doc.status, len(doc.reactions), doc.timing.wall_s) == ("vlm-x", "ok", 1, 12.5)


@pytest.mark.parametrize("wrapper, status", [({"answer": None, "status": "timeout"}, "timeout"),
                                             ({"answer": None}, "failed"),
                                             ({"answer": CHEMEAGLE, "status": "error", "error": "tool crashed"}, "failed")])
def test_failed_runs_keep_a_failure_status(tmp_path: Path, wrapper: dict, status: str) -> None:
    (doc,) = load_documents(write(tmp_path / "f4.json", wrapper))
    assert (doc.figure_id, doc.status, doc.reactions) == ("f4", status, [])


@pytest.mark.parametrize("content", ["{not json", json.dumps({"answer": "no json here"}), json.dumps({"foo": 1}),
                                     json.dumps({"reactions": "CCO>>CC=O"}), json.dumps([1, 2])])
def test_unconvertible_predictions_become_malformed_documents(tmp_path: Path, content: str) -> None:
    (tmp_path / "f5.json").write_text(content)
    docs = load_documents(tmp_path / "f5.json")
    assert docs and all(d.status == "malformed" and d.error for d in docs)
    assert docs[0].figure_id.startswith("f5")


def test_unconvertible_gold_is_refused_with_the_file_name(tmp_path: Path) -> None:
    (tmp_path / "g.json").write_text("{truncated")
    with pytest.raises(LabrecordError, match=r"g\.json: gold document cannot be read"):
        load_documents(tmp_path / "g.json", gold=True)


def test_hostile_nesting_is_a_malformed_prediction(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (doc,) = load_documents(tmp_path / "deep.json")
    assert doc.status == "malformed" and "nested too deeply" in doc.error


def test_gold_documents_share_one_name(tmp_path: Path) -> None:
    write(tmp_path / "a.json", {"schema": "labrecord.rxn/1", "figure_id": "a", "system": "annotator-1"})
    write(tmp_path / "b.json", {"system": "annotator-2", "selected_examples": []})
    assert {d.system for d in load_documents(tmp_path, gold=True)} == {"gold"}
    assert {d.system for d in load_documents(tmp_path, gold=True, system="bench-v1")} == {"bench-v1"}


def test_gold_must_be_a_finished_annotation(tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match="has status 'timeout'"):
        load_documents(write(tmp_path / "g.json", {"answer": None, "status": "timeout"}), gold=True)


def test_odd_molecule_entries_become_malformed_molecules_not_dropped() -> None:
    doc = convert({"reactions": [{"reactants": [42, {"smiles": None}], "products": "CCO"}, "junk"]}, "f", "s")
    assert [m.smiles for m in doc.reactions[0].reactants] == ["", ""]
    assert [m.smiles for m in doc.reactions[0].products] == ["CCO"]
    assert len(doc.reactions) == 2 and doc.reactions[1].reactants[0].smiles == ""


def test_native_documents_round_trip_and_keep_unknown_fields(tmp_path: Path) -> None:
    native = {"schema": "labrecord.rxn/1", "figure_id": "n1", "system": "mine", "future_field": [1, 2],
              "reactions": [{"reactants": [{"smiles": "CCO", "provenance": {"origin": "tool_read", "region": "r3"}}],
                             "products": [{"smiles": "CC=O"}], "yield": "91%"}]}
    (doc,) = load_documents(write(tmp_path / "n1.json", native))
    assert doc.extra == {"future_field": [1, 2]}
    assert doc.reactions[0].reactants[0].provenance.origin == "tool_read"
    assert doc.reactions[0].yield_ == "91%"


def test_newer_major_schema_is_not_read(tmp_path: Path) -> None:
    (doc,) = load_documents(write(tmp_path / "n2.json", {"schema": "labrecord.rxn/2", "figure_id": "n2"}))
    assert doc.status == "malformed" and "labrecord.rxn/2" in doc.error


def test_jsonl_and_folders(tmp_path: Path) -> None:
    lines = "\n".join(json.dumps({**CHEMEAGLE, "figure_id": f"F{i}"}) for i in range(3)) + "\n"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "preds.jsonl").write_text(lines)
    write(tmp_path / "a.json", CHEMEAGLE)
    docs = load_documents(tmp_path, system="s")
    assert sorted(d.figure_id for d in docs) == ["F0", "F1", "F2", "a"]


def test_detect_names_each_format() -> None:
    assert detect({"schema": "labrecord.rxn/1"}) == "native"
    assert detect({"answer": {}}) == "rollout"
    assert detect({"selected_examples": []}) == "gold_v2"
    assert detect({"detailed_reactions": {}}) == "openchemie"
    assert detect({"reactions": []}) == "chemeagle"
    assert detect([]) is None


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match="no such file"):
        load_documents(tmp_path / "nope")
