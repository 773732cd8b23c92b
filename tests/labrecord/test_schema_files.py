"""The committed schemas/ match the models, and validate what the writer writes."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from labrecord.examples import write_example_run
from labrecord.schema_export import drifted_schemas, schema_documents

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def test_committed_schemas_match_models() -> None:
    assert drifted_schemas(SCHEMAS) == [], "run `labrecord schema export --out schemas` and commit the result"


def test_schemas_accept_written_records(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    documents = {name: json.loads(data) for name, data in schema_documents().items()}
    jsonschema.validate(json.loads((run_dir / "run.json").read_text()), documents["run.schema.json"])
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        jsonschema.validate(json.loads(line), documents["event.schema.json"])
    for line in (run_dir / "observations.jsonl").read_text().splitlines():
        jsonschema.validate(json.loads(line), documents["observation.schema.json"])


def test_schema_rejects_unknown_event_type() -> None:
    schema = json.loads(schema_documents()["event.schema.json"])
    try:
        jsonschema.validate({"type": "teleport", "seq": 1, "t": 0.0}, schema)
    except jsonschema.ValidationError:
        return
    raise AssertionError("an unknown event type passed the schema")
