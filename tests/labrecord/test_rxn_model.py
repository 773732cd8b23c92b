"""The labrecord.rxn/1 model: JSON names, round trip, exported schema."""
from __future__ import annotations

import json

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from labrecord.models.rxn import RXN_SCHEMA, Condition, FigureDocument, Molecule, Provenance, Reaction, Template, Timing
from labrecord.schema_export import SCHEMA_MODELS, schema_documents


def test_yield_is_written_as_yield_and_defaults_are_left_out() -> None:
    doc = FigureDocument(figure_id="f", system="s", reactions=[Reaction(products=[Molecule(smiles="CCO")], yield_="80%")])
    data = json.loads(msgspec.json.encode(doc))
    assert (data["schema"], data["status"], data["error"]) == (RXN_SCHEMA, "ok", None)
    assert data["reactions"] == [{"products": [{"smiles": "CCO"}], "yield": "80%"}]


def test_status_and_origin_are_closed_sets() -> None:
    for bad in ({"figure_id": "f", "status": "done"},
                {"figure_id": "f", "reactions": [{"reactants": [{"smiles": "C", "provenance": {"origin": "guessed"}}]}]}):
        try:
            msgspec.convert(bad, FigureDocument)
        except msgspec.ValidationError:
            continue
        raise AssertionError(f"accepted {bad}")


def test_schema_is_exported() -> None:
    assert "rxn" in SCHEMA_MODELS
    schema = json.loads(schema_documents()["rxn.schema.json"])
    assert schema["title"] == "labrecord.rxn/1 figure document"
    assert "yield" in schema["$defs"]["Reaction"]["properties"]


text = st.text(alphabet="CNOc1()=[]@+-", max_size=8)
molecule = st.builds(Molecule, smiles=text, label=st.none() | text,
                     provenance=st.none() | st.builds(Provenance, origin=st.sampled_from(["tool_read", "template_derived", "model_written"]),
                                                      bindings=st.dictionaries(st.sampled_from(["R1", "R2"]), text)))
reaction = st.builds(Reaction, reactants=st.lists(molecule, max_size=3), products=st.lists(molecule, max_size=2),
                     conditions=st.lists(st.builds(Condition, role=st.sampled_from(["reagent", "solvent"]), text=st.none() | text), max_size=2),
                     yield_=st.none() | text, step=st.none() | st.integers(1, 5))
document = st.builds(FigureDocument, figure_id=text.filter(bool), system=text,
                     status=st.sampled_from(["ok", "failed", "timeout", "malformed"]),
                     reactions=st.lists(reaction, max_size=3), templates=st.lists(st.builds(Template), max_size=1),
                     timing=st.none() | st.builds(Timing, wall_s=st.floats(0, 1e4)))


@given(document)
def test_write_then_read_back_is_identity(doc: FigureDocument) -> None:
    assert msgspec.json.decode(msgspec.json.encode(doc), type=FigureDocument) == doc
