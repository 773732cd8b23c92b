"""JSON Schema files generated from the typed models (``schemas/*.schema.json``)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from labrecord.fileio import atomic_write_bytes, dumps_pretty
from labrecord.models import Event, FinalScores, ObservationReceipt, OnlineScore, PopulationEntry, RunManifest
from labrecord.models.agent import AgentReply, AgentRequest
from labrecord.models.rxn import FigureDocument

#: file stem -> (model, title); a wing's models are added here when they join the core
SCHEMA_MODELS: dict[str, tuple[Any, str]] = {
    "run": (RunManifest, "labrecord.run/1.1 run.json"),
    "event": (Event, "labrecord.run/1.1 events.jsonl line"),
    "observation": (ObservationReceipt, "labrecord.run/1.1 observations.jsonl line"),
    "online_score": (OnlineScore, "labrecord.run/1.1 online_scores.jsonl line"),
    "scores": (FinalScores, "labrecord.run/1.1 scores.json"),
    "population": (PopulationEntry, "labrecord.run/1.1 populations/<name>.jsonl line"),
    "rxn": (FigureDocument, "labrecord.rxn/1 figure document"),
    "agent_request": (AgentRequest, "labrecord.agent/1 request to an HTTP agent"),
    "agent_reply": (AgentReply, "labrecord.agent/1 reply of an HTTP agent"),
}


def schema_documents() -> dict[str, bytes]:
    """``{file name: bytes}`` for every schema, deterministic."""
    documents = {}
    for stem, (model, title) in SCHEMA_MODELS.items():
        schema = msgspec.json.schema(model)
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, **schema}
        documents[f"{stem}.schema.json"] = dumps_pretty(schema)
    return documents


def export_schemas(out_dir: str | os.PathLike[str]) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in schema_documents().items():
        atomic_write_bytes(out / name, data)
        written.append(out / name)
    return written


def drifted_schemas(out_dir: str | os.PathLike[str]) -> list[str]:
    """Names of committed schema files that differ from the models (or are missing)."""
    out = Path(out_dir)
    return [name for name, data in schema_documents().items()
            if not (out / name).is_file() or (out / name).read_bytes() != data]
