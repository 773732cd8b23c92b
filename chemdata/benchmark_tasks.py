"""Benchmark task packages in the Harbor task layout (RxnMiner appendix A.1, Table 3), and
collecting the answers of a run over them.

:func:`package_tasks` writes one self-contained folder per gold figure::

    <figure_id>/
      instruction.md          visible   what to extract and where to write the answer
      environment/Dockerfile  visible   the container: pinned chemistry stack + the figure
      environment/figure.png  visible   the figure, re-encoded without metadata chunks
      task.toml               host only source, layout, reaction types, record count, limits
      tests/test.sh           hidden    the verifier, uploaded only after the run
      tests/verify.py         hidden    scores /app/answer.json with the reaction scorer
      tests/reference.json    hidden    the gold record
      solution/solve.sh       hidden    oracle: writes the reference as the answer
      solution/answer.json    hidden

What the system under evaluation sees is the instruction and the container built from
``environment/`` — no file there is derived from the reference (the instruction is the
same for every task, without the record count).  The verifier writes reaction P/R/F1 and
molecule F1, strict and stereo-blind, to ``/logs/verifier/scores.json`` and the strict
reaction F1 as ``reward.json``.

:func:`collect_answers` reads, for every task folder, what the harness left in
``<task>/run/``: ``answer.json`` (the file the system wrote to ``/app/answer.json``) and
optionally ``status.json`` (``{"status": "ok" | "timeout" | "error", "error": …}``), and
writes one ``labrecord.rxn/1`` document per task for ``rxn score`` and ``rxn judge``.  A
timeout, a tool error, a malformed or a missing answer keeps its figure with zero credit
and a failure status (App. A.1); the figure id comes from the task, never from the answer.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_write_bytes, dumps_pretty
from labrecord.models.rxn import check_figure_id
from labrecord.safeio import MAX_DOCUMENT_BYTES, decode_json, excerpt, read_bounded

TASK_FILE = "task.toml"
RUN_DIR = "run"
ANSWER_IN_CONTAINER = "/app/answer.json"
FIGURE_IN_CONTAINER = "/app/figure.png"
BASE_IMAGE = "python:3.11-slim-bookworm"
#: run statuses a harness may report, and the record status each becomes
RUN_STATUSES = {"ok": "ok", "timeout": "timeout", "error": "failed", "failed": "failed"}
INSTRUCTION = f"""# Extract the reactions of a chemistry figure

The figure is `{FIGURE_IN_CONTAINER}`: a reaction scheme, substrate scope, optimization
table or multi-step sequence from the chemical literature, with its caption and footnotes
where they were part of the crop.

Recover every concrete reaction it reports. A shared template with a table or grid of
substituents stands for one reaction per entry: instantiate each entry with its own
reactants and product (no R-group placeholders). A multi-step scheme is one record per
step. Keep stereochemistry the figure shows, and leave unspecified what it leaves open.

Write one JSON object to `{ANSWER_IN_CONTAINER}`:

```json
{{"reactions": [{{"reactants": [{{"smiles": "..."}}], "products": [{{"smiles": "..."}}],
                "conditions": [{{"role": "catalyst", "smiles": "..."}}, {{"role": "temperature", "text": "..."}}],
                "yield": "...", "selectivity": "...", "identifiers": ["..."]}}]}}
```

Reactants and products are scored by exact molecular identity after RDKit
canonicalization (salts split, common metal counter-ions equivalent); wildcards,
R-group labels and Extended-SMILES never match. Conditions, yields and selectivity are
graded separately. Only the final content of `{ANSWER_IN_CONTAINER}` counts.
"""

TEST_SH = """#!/bin/bash
# Verifier: scores /app/answer.json against the reference with the labrecord reaction scorer.
set -u
mkdir -p /logs/verifier
if ! python3 -c "import labrecord.scorers.reaction, rdkit" 2>/dev/null; then
  pip install --quiet "${LABRECORD_SPEC:-labrecord[chem]}" || {
    echo '{"reward": 0.0, "error": "the scorer could not be installed"}' > /logs/verifier/reward.json; exit 1; }
fi
python3 "$(dirname "$0")/verify.py" --reference "$(dirname "$0")/reference.json" --answer /app/answer.json --out /logs/verifier
"""

VERIFY_PY = '''"""Score one answer against the reference; write scores.json and reward.json."""
import argparse

from labrecord.chemdata.benchmark_tasks import verify_answer

parser = argparse.ArgumentParser()
parser.add_argument("--reference", required=True)
parser.add_argument("--answer", required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()
verify_answer(args.reference, args.answer, args.out)
'''

SOLVE_SH = """#!/bin/bash
# Oracle: the reference record as the answer.
cp "$(dirname "$0")/answer.json" /app/answer.json
"""


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # a JSON string is a TOML basic string, once DEL (allowed raw in JSON) is escaped
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007F")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_text(sections: Mapping[str, Mapping[str, Any]], top: Mapping[str, Any]) -> str:
    """TOML for flat sections of strings, numbers, booleans and lists (None values left out)."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in top.items() if v is not None]
    for name, values in sections.items():
        lines += ["", f"[{name}]"] + [f"{k} = {_toml_value(v)}" for k, v in values.items() if v is not None]
    return "\n".join(lines) + "\n"


def _clean_png(path: Path) -> bytes:
    """The figure re-encoded as PNG from its pixels alone: text and metadata chunks of the
    source file (some drawing tools store the molecule there) do not travel along."""
    from io import BytesIO

    from PIL import Image

    with Image.open(path) as image:
        pixels = image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB")
        clean = Image.frombytes(pixels.mode, pixels.size, pixels.tobytes())
    buffer = BytesIO()
    clean.save(buffer, format="PNG")
    return buffer.getvalue()


def _dockerfile(stack: Mapping[str, str]) -> str:
    pins = " ".join(f'"{name}=={version}"' for name, version in sorted(stack.items()))
    return (f"# The chemistry stack every task shares, pinned; the only task-specific content is the figure.\n"
            f"FROM {BASE_IMAGE}\n"
            f"RUN pip install --no-cache-dir {pins}\n"
            f"WORKDIR /app\n"
            f"COPY figure.png {FIGURE_IN_CONTAINER}\n")


def chemistry_stack() -> dict[str, str]:
    """Versions of the packages the scorer depends on, as installed here."""
    from importlib.metadata import PackageNotFoundError, version

    stack = {}
    for name in ("rdkit", "pillow", "numpy"):
        try:
            stack[name] = version(name)
        except PackageNotFoundError:
            continue
    if "rdkit" not in stack:
        raise LabrecordError("packaging needs RDKit installed (pip install 'labrecord[chem]') to pin the chemistry stack")
    return stack


def package_tasks(figures_dir: str | os.PathLike[str], gold_path: str | os.PathLike[str], out_dir: str | os.PathLike[str], *,
                  agent_timeout_s: float = 3600.0, verifier_timeout_s: float = 600.0, cpus: int = 1,
                  memory_mb: int = 4096) -> dict[str, Any]:
    """One task folder per gold figure; returns ``{"tasks", "out", "images_without_gold"}``."""
    import msgspec

    from labrecord.chemdata.adapters import load_documents
    from labrecord.chemdata.extract.records import document_json
    from labrecord.chemdata.judge_runner import IMAGE_SUFFIXES, find_image

    figures = Path(figures_dir)
    if not figures.is_dir():
        raise LabrecordError(f"{figures}: not a folder of figures")
    gold = sorted(load_documents(gold_path, gold=True), key=lambda d: d.figure_id)
    if not gold:
        raise LabrecordError(f"{gold_path}: no gold documents")
    sources: dict[str, str] = {}
    for doc in gold:  # every id is checked before any task is written
        where = str(doc.source or gold_path)
        check_figure_id(doc.figure_id, where)
        if doc.figure_id in sources:
            raise LabrecordError(f"{where}: gold figure {doc.figure_id!r} also given by {sources[doc.figure_id]}; "
                                 "one gold document per figure")
        sources[doc.figure_id] = where
    stack = chemistry_stack()
    out = Path(out_dir)
    written = []
    for doc in gold:
        image = find_image(doc.figure_id, [figures])
        if image is None:
            raise LabrecordError(f"{figures}: no image for gold figure {doc.figure_id!r} (looked for {doc.figure_id}.png, .jpg …)")
        figure_png = _clean_png(Path(image))
        task = out / doc.figure_id
        reference = document_json(msgspec.structs.replace(doc, source=Path(str(doc.source or image)).name))
        files: dict[str, bytes] = {
            "instruction.md": INSTRUCTION.encode(),
            "environment/Dockerfile": _dockerfile(stack).encode(),
            "environment/figure.png": figure_png,
            TASK_FILE: _task_toml(doc, image, figure_png, agent_timeout_s, verifier_timeout_s, cpus, memory_mb).encode(),
            "tests/test.sh": TEST_SH.encode(),
            "tests/verify.py": VERIFY_PY.encode(),
            "tests/reference.json": dumps_pretty(reference),
            "solution/solve.sh": SOLVE_SH.encode(),
            "solution/answer.json": dumps_pretty({"reactions": reference["reactions"]}),
        }
        umask = _umask()
        for name, data in files.items():
            path = task / name
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, data)
            # the temp-file write leaves 0600; a container user other than root must read
            # the figure, and the harness must run the scripts
            path.chmod((0o777 if name.endswith(".sh") else 0o666) & ~umask)
        written.append(str(task))
    known = {d.figure_id for d in gold}
    extra = sorted(p.stem for p in figures.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.stem not in known)
    return {"tasks": written, "out": str(out), "images_without_gold": extra}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _task_toml(doc: Any, image: str, figure_png: bytes, agent_timeout_s: float, verifier_timeout_s: float, cpus: int,
               memory_mb: int) -> str:
    extra = doc.extra or {}
    metadata = {"benchmark": "labrecord-rxn", "figure_id": doc.figure_id,
                "source": str(extra.get("source") or Path(str(doc.source or image).split(":")[0]).name),
                "layout": doc.layout or "unknown", "reaction_types": [str(t) for t in doc.tags],
                "record_count": len(doc.reactions), "difficulty_tier": extra.get("difficulty_tier"),
                "figure_file": Path(image).name, "figure_sha256": hashlib.sha256(figure_png).hexdigest(),
                "answer_path": ANSWER_IN_CONTAINER}
    return toml_text({"metadata": metadata,
                      "agent": {"timeout_sec": float(agent_timeout_s)},
                      "verifier": {"timeout_sec": float(verifier_timeout_s)},
                      "environment": {"build_timeout_sec": 1200.0, "cpus": cpus, "memory_mb": memory_mb}},
                     {"version": "1.0"})


# --------------------------------------------------------------------------- verifier

def verify_answer(reference: str | os.PathLike[str], answer: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Score one answer file against one reference; write ``scores.json`` (the score
    document of ``rxn score --json``) and ``reward.json`` (strict reaction F1)."""
    from labrecord.chemdata.adapters import load_documents
    from labrecord.chemdata.scoring import score_documents

    gold = load_documents(reference, gold=True)
    if len(gold) != 1:
        raise LabrecordError(f"{reference}: {len(gold)} gold documents, expected the one reference of this task")
    result = score_documents(gold, [answer_document(Path(answer), gold[0].figure_id, "answer")])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / "scores.json", dumps_pretty(result))
    reward = {"reward": result["macro"]["strict"]["f1"], "reaction_f1_nonstereo": result["macro"]["nonstereo"]["f1"],
              "molecule_f1_strict": result["molecule"]["strict"]["f1"],
              "molecule_f1_nonstereo": result["molecule"]["nonstereo"]["f1"]}
    atomic_write_bytes(out / "reward.json", dumps_pretty(reward))
    return result


def answer_document(answer: Path, figure_id: str, system: str) -> Any:
    """The answer file read by the adapters as the document of ``figure_id`` (the task's
    id, whatever the answer calls itself): ``failed`` when absent, ``malformed`` when it
    is not exactly one readable answer."""
    import msgspec

    from labrecord.chemdata.adapters import load_documents
    from labrecord.models.rxn import FigureDocument

    if not answer.is_file():
        return FigureDocument(figure_id=figure_id, system=system, status="failed",
                              error=f"missing answer: no {answer}", source=str(answer))
    docs = load_documents(answer, system=system)
    if len(docs) != 1:
        return FigureDocument(figure_id=figure_id, system=system, status="malformed",
                              error=f"{answer}: {len(docs)} documents, expected one answer", source=str(answer))
    return msgspec.structs.replace(docs[0], figure_id=figure_id, system=system)


# --------------------------------------------------------------------------- collect

def _task_figure_id(task: Path) -> str:
    import tomllib

    file = task / TASK_FILE
    try:
        data = tomllib.loads(read_bounded(file, MAX_DOCUMENT_BYTES).decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as error:
        raise LabrecordError(f"{file}: cannot read the task metadata: {excerpt(str(error))}") from error
    metadata = data.get("metadata")
    figure_id = metadata.get("figure_id") if isinstance(metadata, dict) else None
    if not isinstance(figure_id, str) or not figure_id:
        raise LabrecordError(f"{file}: metadata.figure_id is {excerpt(repr(figure_id))}, expected text")
    return check_figure_id(figure_id, f"{file} metadata.figure_id")


def _run_status(run: Path) -> tuple[str, str | None]:
    """(record status, error) from ``run/status.json``; ``ok`` when the harness wrote none."""
    file = run / "status.json"
    if not file.is_file():
        return "ok", None
    data = decode_json(read_bounded(file, MAX_DOCUMENT_BYTES), str(file))
    status = data.get("status") if isinstance(data, dict) else None
    if not isinstance(status, str) or status not in RUN_STATUSES:
        raise LabrecordError(f"{file}: status {excerpt(repr(status))}, expected one of {', '.join(RUN_STATUSES)}")
    message = data.get("error")
    return RUN_STATUSES[status], None if message is None else str(message)


def collect_one(task: Path, system: str, figure_id: str | None = None) -> Any:
    """The figure document of one task's run (never None: failures keep the figure);
    ``figure_id`` when the task's metadata was read already."""
    from labrecord.models.rxn import FigureDocument

    figure_id = figure_id or _task_figure_id(task)
    run = task / RUN_DIR
    status, error = _run_status(run)
    if status != "ok":
        return FigureDocument(figure_id=figure_id, system=system, status=status,  # type: ignore[arg-type]
                              error=error or f"run ended with status {status}", source=str(run))
    return answer_document(run / "answer.json", figure_id, system)


def collect_answers(tasks_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, system: str = "system") -> dict[str, Any]:
    """Write ``out_dir/<figure_id>.json`` for every task folder under ``tasks_dir``;
    returns ``{"figures", "status": {status: n}, "out", "refused"}``.

    Each task is read on its own: a task whose run files cannot be read (a status.json
    that is not JSON, too large or nested too deeply, an unreadable answer) gives a
    ``malformed`` record for its figure, and the others are collected as usual.  A task
    whose figure id cannot be known or is not a safe file name gets no record: it is
    listed under ``refused`` with its reason (``labrecord rxn collect`` then exits 1).
    """
    from labrecord.chemdata.extract.records import write_document
    from labrecord.models.rxn import FigureDocument

    root = Path(tasks_dir)
    if not root.is_dir():
        raise LabrecordError(f"{root}: not a folder of task packages")
    tasks = sorted(p.parent for p in root.glob(f"*/{TASK_FILE}"))
    if not tasks:
        raise LabrecordError(f"{root}: no task packages (folders with {TASK_FILE})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    statuses: dict[str, int] = {}
    seen: dict[str, Path] = {}
    refused: list[dict[str, str]] = []
    for task in tasks:
        try:
            figure_id = _task_figure_id(task)
        except LabrecordError as error:
            refused.append({"task": str(task), "error": str(error)})
            continue
        if figure_id in seen:
            refused.append({"task": str(task), "error": f"{task}: figure {figure_id!r} also packaged in {seen[figure_id]}"})
            continue
        seen[figure_id] = task
        try:
            doc = collect_one(task, system, figure_id)
        except (LabrecordError, OSError, ValueError, RecursionError) as error:
            message = str(error) if isinstance(error, LabrecordError) else f"{task}: {type(error).__name__}: {error}"
            doc = FigureDocument(figure_id=figure_id, system=system, status="malformed", error=excerpt(message, 400),
                                 source=str(task / RUN_DIR))
        write_document(out / f"{figure_id}.json", doc)
        statuses[doc.status] = statuses.get(doc.status, 0) + 1
    return {"figures": len(seen), "status": dict(sorted(statuses.items())), "out": str(out), "refused": refused}
