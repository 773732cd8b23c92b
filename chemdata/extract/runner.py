"""The extraction runner: a folder of figures -> one reaction record per figure.

Per figure (:func:`extract_figure`, a pure function of the image and the config):

1. **text** — ``tesseract`` over the whole figure (identifiers, binding lines), then on
   crops it tends to miss: conditions over and under each arrow, small unlabelled blobs,
   and a substrate table under the last arrow row (one block);
2. **layout** — ink components classified by shape into arrows, rules, "+" signs, text
   and structures, and grouped into rows (:mod:`.layout`);
3. **recognition** — ``osra`` with the project's abbreviation tables on each structure
   (its box with neighbours blanked, rescaled to a target bond length and, for a real
   rescale, also as drawn and halfway; the soundest, most confident reading kept; short
   blobs beside an arrow are tried too, small molecules look like words), one reading
   per region; the whole figure only when no structure was found; template attachment
   points are named after the labels printed at them;
4. **association** — the rule-based plan (:mod:`.associate`), or, with a model endpoint,
   the plan the model returns from the figure plus the tool readings;
5. **assembly** — readings and the R-group engine turn the plan into records.

With a model endpoint, ``ExtractConfig.model_stages`` names the stages the model takes
over (layout, recognition, association; :mod:`.endpoint`); the others run as above.

Tool errors and timeouts end the figure with status ``failed``/``timeout`` and a reason;
a figure that gives no reaction is ``failed`` with reason ``empty`` and the first stage
that produced nothing usable;
an unexpected exception does the same (with its traceback in the trajectory).  No
figure is ever dropped: each gets ``<out>/<figure_id>.json`` and its trajectory
``<out>/trajectories/<figure_id>.ndjson`` (one JSON event per line; the ``.ndjson``
suffix keeps record readers, which take every ``.json``/``.jsonl`` under a folder, from
mistaking it for a prediction); ``<out>/trajectories/summary.ndjson`` (one line) counts
statuses and failures per stage.  Executors: in-process (``workers=1``), a process pool
(``workers=N``) or Ray (``executor="ray"``); all call the same function, so the records
agree.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from labrecord.chemdata import rgroup
from labrecord.chemdata.extract import arbitrate, associate, assemble, cleanup, decimer, endpoint, layout, osra, readers, tesseract
from labrecord.chemdata.extract.records import document_json, write_document
from labrecord.chemdata.extract.trajectory import BudgetExceeded, ToolFailed, Trajectory
from labrecord import parallel
from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_write_bytes, dumps

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".gif", ".bmp")
TRAJECTORY_DIR = "trajectories"
TRAJECTORY_SUFFIX = ".ndjson"
SUMMARY_NAME = "summary.ndjson"
CROP_MARGIN = 30
#: a region more than this many bond lengths across both ways is not given to DECIMER
MAX_LEARNED_BONDS = 14


@dataclass(frozen=True)
class ExtractConfig:
    """Everything that shapes a run (kept in every trajectory's input event)."""

    system: str = "labrecord-rules"
    #: wall-clock seconds per figure; a stage still running when they are spent is stopped
    budget_s: float = 300.0
    #: a figure of more pixels than this is refused before any stage (it fails at "input")
    max_pixels: int = 16_000_000
    #: the structure readers (:mod:`.readers`): osra alone, or osra with DECIMER arbitrated
    #: by chemistry (:func:`_second_reading`)
    readers: tuple[str, ...] = ("osra",)
    #: at most this many DECIMER reads per figure (the template row first, then products):
    #: about 4 s each on a shared core, beside osra's 20 s a figure
    learned_reads: int = 8
    tool_timeout_s: float = 120.0
    osra_command: tuple[str, ...] = ("osra",)
    tesseract_command: tuple[str, ...] = ("tesseract",)
    model_endpoint: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    #: the stages the model endpoint takes over (any of ``endpoint.MODEL_STAGES``); the
    #: others run the tools and rules
    model_stages: tuple[str, ...] = ("association",)
    #: crops are rescaled so a bond is about this many pixels before osra (None: as drawn)
    target_bond: float | None = 45.0
    #: give osra the project's abbreviation and spelling tables (:func:`.osra.write_dictionaries`)
    osra_dictionaries: bool = True
    #: read a rescaled crop also as drawn and halfway between (:func:`crop_scales`) and
    #: keep the best reading (:func:`sound_first`); False reads each crop once
    multiscale: bool = True


@dataclass
class FigureResult:
    """What one figure produced: the record (plain JSON data) and its trajectory events."""

    figure_id: str
    document: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)


def figure_id_of(path: Path) -> str:
    """The file stem: ``X.png`` and ``X.jpg`` name one figure (docs/design.md)."""
    return path.stem


def list_figures(figures_dir: str | os.PathLike[str]) -> list[Path]:
    """Image files of ``figures_dir`` in name order; two images of one figure id are refused."""
    folder = Path(figures_dir)
    if not folder.is_dir():
        raise LabrecordError(f"{folder}: not a directory of figures")
    images = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    seen: dict[str, Path] = {}
    for image in images:
        other = seen.setdefault(figure_id_of(image), image)
        if other != image:
            raise LabrecordError(f"{image}: figure id {figure_id_of(image)!r} also names {other.name}")
    if not images:
        raise LabrecordError(f"{folder}: no figures ({', '.join(IMAGE_SUFFIXES)})")
    return images


# --------------------------------------------------------------------------- one figure

def extract_figure(image_path: str, config: ExtractConfig) -> FigureResult:
    """Run every stage on one figure; never raises for a bad figure or a failing tool."""
    path = Path(image_path)
    figure_id = figure_id_of(path)
    loaded_s = _load_readers(config)  # once per process, outside the figure's budget
    trajectory = Trajectory(figure_id, config.budget_s)
    timing: dict[str, float] = {}
    state: dict[str, Any] = {"readings": [], "failures": [], "plan": None, "plan_source": "rules"}
    status, error, stage = "ok", None, None
    reactions: list[Any] = []
    templates: list[Any] = []
    try:
        data = path.read_bytes()
        trajectory.add("input", figure=path.name, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data),
                       config=_config_json(config))
        if loaded_s:
            trajectory.add("reader_load", reader="decimer", elapsed_s=loaded_s)
        with budget_alarm(config.budget_s, state):
            reactions, templates = _stages(trajectory, path, data, config, timing, state)
    except BudgetExceeded as exc:
        status, error, stage = "failed", str(exc), state.get("stage") or "input"
        state["reason"] = "budget"
    except FigureRefused as exc:
        status, error, stage = "failed", str(exc), "input"
        state["reason"] = "too_large"
    except ToolFailed as exc:
        status, error = ("timeout" if exc.timeout else "failed"), str(exc)
        stage = state.get("stage")
    except assemble.PlanError as exc:
        status, error, stage = "failed", f"plan: {exc}", state.get("stage")
    except Exception as exc:  # a bug or an unreadable image must not drop the figure
        status, error, stage = "failed", f"{type(exc).__name__}: {exc}", state.get("stage")
        trajectory.add("error", traceback=traceback.format_exc(limit=8))
    reason = None
    if status == "ok" and not reactions:
        stage, error = _empty_stage(state)
        status, reason = "failed", "empty"
        trajectory.failure(stage, "empty", error)
    elif status != "ok":
        trajectory.failure(stage or "unknown", status, error or "")
    state["reason"] = reason or state.get("reason") or (status if status != "ok" else None)
    document = _document(figure_id, path, config, status, error, stage, reactions, templates, timing, state, trajectory)
    trajectory.add("result", status=status, reactions=len(document.get("reactions", [])), error=error)
    return FigureResult(figure_id, document, trajectory.events)


def _load_readers(config: ExtractConfig) -> float:
    """Load the learned reader's model if this process has not yet; the seconds spent
    (0 when it was loaded before), reported apart from the figure's own time."""
    if "decimer" not in config.readers:
        return 0.0
    before = decimer.loaded_seconds()
    decimer.load()
    return round(decimer.loaded_seconds() - before, 3)


class FigureRefused(Exception):
    """The figure is refused before any stage runs (over the pixel limit)."""


@contextlib.contextmanager
def budget_alarm(budget_s: float, state: dict[str, Any]) -> Iterator[None]:
    """Stop the running stage when the figure's budget is spent: a wall-clock alarm
    raises :class:`BudgetExceeded` wherever the figure is (a tool call is killed by
    ``subprocess.run`` on the way out).  Needs the main thread of its process (the
    in-process, process-pool and Ray executors all run figures there); elsewhere only
    the checks between tool calls apply."""
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise BudgetExceeded(f"budget of {budget_s:g}s used up during {state.get('stage') or 'input'}")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, budget_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _empty_stage(state: dict[str, Any]) -> tuple[str, str]:
    """(stage, message) for a figure that ran through but gave no reaction: the first
    stage that produced nothing usable."""
    kinds = {f["kind"] for f in state["failures"]}
    if "no_arrow" in kinds:
        return "layout", "empty: no reaction arrow found"
    if not state["readings"]:
        return "recognition", "empty: no structure was read"
    plan = state.get("plan") or {}
    if not plan.get("reactions") and not any(scope.get("entries") for scope in plan.get("scopes") or []):
        return "association", "empty: no step or scope entry could be formed from the readings"
    return "assembly", "empty: every planned reaction or entry was refused"


def _timed(timing: dict[str, float], state: dict[str, Any], name: str, work: Callable[[], Any]) -> Any:
    state["stage"] = name
    began = time.monotonic()
    try:
        return work()
    finally:
        timing[name] = round(timing.get(name, 0.0) + time.monotonic() - began, 6)


def _stages(trajectory: Trajectory, path: Path, data: bytes, config: ExtractConfig, timing: dict[str, float],
            state: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    from io import BytesIO

    from PIL import Image

    state["stage"] = "input"
    opened = Image.open(BytesIO(data))
    if opened.width * opened.height > config.max_pixels:
        raise FigureRefused(f"{path.name}: {opened.width}x{opened.height} = {opened.width * opened.height} pixels, "
                            f"over the limit of {config.max_pixels}")
    state["stage"] = "recognition"
    image = layout.grey(opened)
    page, enlarged = _timed(timing, state, "text", lambda: _page_text(trajectory, path, opened, config))
    lines = page
    # None: too little text to tell, and lines too thin to measure
    measured = layout.bond_length(lines, default=None) or layout.stroke_bond(layout.ink_mask(image))
    bond = measured or layout.DEFAULT_BOND
    stages = config.model_stages if config.model_endpoint else ()
    text_json = [{"text": ln.text, "box": list(ln.box)} for ln in lines]
    if "layout" in stages:
        segments = _timed(timing, state, "layout", lambda: layout.rows(
            [(kind, box, (box,) if kind == "structure" else ()) for kind, box in endpoint.request_layout(
                trajectory, config.model_endpoint or "", config.model or "", data, image.size, text_json,
                limit_s=config.tool_timeout_s, api_key_env=config.api_key_env)], bond))
        state["layout_source"] = "model"
    else:
        segments = _timed(timing, state, "layout", lambda: layout.segment(image, lines, bond))
    segments, lines = _timed(timing, state, "text", lambda: _read_crops(trajectory, image, segments, lines, config, bond))
    trajectory.add("layout", bond=bond, segments=[{"kind": s.kind, "box": list(s.box), "band": s.band} for s in segments])
    if "recognition" in stages:
        readings = _timed(timing, state, "recognition", lambda: _model_readings(trajectory, data, image.size, segments,
                                                                                lines, config))
        state["recognition_source"] = "model"
    else:
        segments, readings = _timed(timing, state, "recognition",
                                    lambda: _recognize(trajectory, path, image, segments, config, measured or 0.0, lines))
    if enlarged is not None:  # the words are read from the enlarged pass from here on
        lines = _swap_page_text(lines, page, enlarged)
    if "decimer" in config.readers and "recognition" not in stages:
        readings = _timed(timing, state, "arbitration", lambda: _second_reading(trajectory, image, segments, readings,
                                                                                 lines, config, bond))
    state["readings"] = [r.to_json() for r in readings]
    plan, problems = _timed(timing, state, "association", lambda: associate.plan_from_rules(segments, readings, lines))
    for problem in problems:
        stage = "recognition" if problem["kind"] == "unread_structure" else "association"
        state["failures"].append({"stage": stage, **problem})
        trajectory.failure(stage, problem["kind"], problem["message"])
    if "association" in stages:
        plan = _timed(timing, state, "model", lambda: endpoint.request_plan(
            trajectory, config.model_endpoint or "", config.model or "", data, state["readings"],
            [{"text": ln.text, "box": list(ln.box)} for ln in lines], plan, limit_s=config.tool_timeout_s,
            api_key_env=config.api_key_env))
        state["plan_source"] = "model"
    state["plan"] = plan
    trajectory.add("plan", source=state["plan_source"], plan=plan)
    reactions, templates, failures = _timed(timing, state, "assembly", lambda: assemble.assemble(plan, readings))
    for failure in failures:
        state["failures"].append(failure)
        trajectory.failure(failure["stage"], failure["kind"], failure["message"])
    return reactions, templates


#: tesseract reads printed words best at about this height (px, ascender to descender);
#: a figure whose well-read words are shorter than SMALL_TEXT_PX is read again enlarged
TEXT_PX = 24
SMALL_TEXT_PX = 18


def text_scale(lines: list[tesseract.TextLine]) -> int:
    """How many times to enlarge a figure for its text pass: 1 when the median height of
    its well-read words (confidence >= 60, holding a letter or digit) is at least
    :data:`SMALL_TEXT_PX` or nothing was read well, else ``ceil(TEXT_PX / median)``, at
    most 3.  A low-resolution scheme prints ``R = F, 89% (5e)`` 11 px high, where
    tesseract drops the ``R = F,``; twice enlarged it reads the whole line."""
    import math
    import statistics

    heights = [b[3] - b[1] + 1 for ln in lines for (w, b), c in zip(ln.words, ln.word_confidences)
               if c >= 60 and any(ch.isalnum() for ch in w)]
    if not heights:
        return 1
    median = statistics.median(heights)
    return 1 if median >= SMALL_TEXT_PX else min(3, math.ceil(TEXT_PX / median))


def _page_text(trajectory: Trajectory, path: Path, opened: Any,
               config: ExtractConfig) -> tuple[list[tesseract.TextLine], list[tesseract.TextLine] | None]:
    """The whole-figure text pass, as drawn, and again enlarged (:func:`text_scale`,
    boxes in the figure's own pixels) when the print is small, else None.  The layout
    and the structure readers take the first (enlarged, OCR joins an arrow to the
    conditions over it into one line, and the arrow would be taken for print); the
    words of the figure, its binding lines and labels, are read from the second."""
    from PIL import Image

    lines = tesseract.read_text(trajectory, str(path), command=list(config.tesseract_command), limit_s=config.tool_timeout_s)
    scale = text_scale(lines)
    if scale == 1:
        return lines, None
    with tempfile.TemporaryDirectory(prefix="labrecord-ocr-") as scratch:
        large = os.path.join(scratch, "enlarged.png")
        opened.convert("L").resize((opened.width * scale, opened.height * scale), Image.Resampling.LANCZOS).save(large)
        return lines, tesseract.read_text(trajectory, large, command=list(config.tesseract_command),
                                          limit_s=config.tool_timeout_s, region=f"full x{scale}", scale=scale)


def _swap_page_text(lines: list[tesseract.TextLine], page: list[tesseract.TextLine],
                    enlarged: list[tesseract.TextLine]) -> list[tesseract.TextLine]:
    """``lines`` (the page pass plus the crop passes) with the page pass replaced by its
    enlarged reading, top to bottom."""
    ours = {id(line) for line in page}
    return sorted([line for line in lines if id(line) not in ours] + enlarged, key=lambda line: (line.box[1], line.box[0]))


def _crop_file(image: Any, box: tuple[int, int, int, int], folder: str, name: str,
               parts: tuple[tuple[int, int, int, int], ...] = (), scale: float = 1.0,
               foreign: tuple[tuple[int, int, int, int], ...] = ()) -> tuple[str, tuple[int, int]]:
    """Save ``box`` of ``image`` with a white margin; return (path, offset into the figure).

    ``foreign`` boxes (neighbouring items reaching into the box) are blanked, then the
    ``parts`` (the item's own ink components) are pasted back over them, so a neighbour's
    text or bonds are left out while faint ink of the item's own (thin coloured bonds
    below the ink threshold) stays.  ``scale`` resizes the crop (boxes a tool reports in
    the crop are in the scaled crop's pixels)."""
    from PIL import Image, ImageDraw, ImageOps

    x0, y0, x1, y1 = box
    crop = image.crop((x0, y0, x1 + 1, y1 + 1))
    if foreign:
        pen = ImageDraw.Draw(crop)
        for a0, b0, a1, b1 in foreign:
            pen.rectangle((a0 - x0, b0 - y0, a1 - x0, b1 - y0), fill=255)
        for a0, b0, a1, b1 in parts:
            crop.paste(image.crop((a0, b0, a1 + 1, b1 + 1)), (a0 - x0, b0 - y0))
    if abs(scale - 1.0) > 0.05:
        crop = crop.resize((max(1, round(crop.width * scale)), max(1, round(crop.height * scale))), Image.Resampling.LANCZOS)
    crop = ImageOps.expand(crop, CROP_MARGIN, fill=255)
    path = os.path.join(folder, name)
    crop.save(path)
    return path, (x0 - CROP_MARGIN, y0 - CROP_MARGIN)


def foreign_boxes(segments: list[layout.Segment], index: int) -> tuple[tuple[int, int, int, int], ...]:
    """Boxes of the other items that reach into segment ``index``'s box from outside (their
    centre lies outside it): what a crop of that segment must leave out."""
    own = segments[index].box
    return tuple(seg.box for i, seg in enumerate(segments)
                 if i != index and layout.overlaps(seg.box, own) and not layout.contains(own, seg.box, slack=0))


def _read_crops(trajectory: Trajectory, image: Any, segments: list[layout.Segment], lines: list[tesseract.TextLine],
                config: ExtractConfig, bond: float = layout.DEFAULT_BOND) -> tuple[list[layout.Segment], list[tesseract.TextLine]]:
    """Second text pass on crops the whole-figure pass tends to miss: conditions printed
    over or under each arrow (block mode) and small blobs no text line covers, such as
    entry labels under drawn products (line mode).  A blob read as text becomes text."""
    ink = layout.ink_mask(image)
    segments, lines = list(segments), list(lines)
    drawn = [seg.box for seg in segments if seg.kind == "structure"]
    # a line over a drawing's ink (a ring beside "+ NH3" read "LD + vi") does not cover the
    # blobs in it: they are read alone, and the line gives way to what they read
    straddling = {id(line) for line in lines if layout.straddles(line.box, drawn)}
    with tempfile.TemporaryDirectory(prefix="labrecord-ocr-") as scratch:
        branches = [layout.Segment("arrow", b, seg.band) for seg in segments if seg.kind == "fork" for b in seg.parts]
        for index, seg in enumerate(list(segments) + branches):
            if seg.kind == "arrow":
                x0, y0, x1, y1 = seg.box
                for part, (top, bottom) in (("above", (max(0, y0 - 70), y0 - 3)), ("below", (y1 + 3, min(ink.shape[0] - 1, y1 + 70)))):
                    if bottom <= top or not ink[top:bottom + 1, x0:x1 + 1].any():
                        continue
                    path, offset = _crop_file(image, (x0, top, x1, bottom), scratch, f"arrow{index}{part}.png")
                    lines += tesseract.read_text(trajectory, path, command=list(config.tesseract_command),
                                                 limit_s=config.tool_timeout_s, psm=6, offset=offset,
                                                 region=f"{x0},{top},{x1},{bottom}")
            elif seg.box[3] - seg.box[1] <= 40 and seg.box[2] - seg.box[0] <= 200 and seg.kind != "plus" \
                    and not any(layout.overlaps(seg.box, line.box) for line in lines if id(line) not in straddling):
                path, offset = _crop_file(image, seg.box, scratch, f"blob{index}.png")
                found = tesseract.read_text(trajectory, path, command=list(config.tesseract_command),
                                            limit_s=config.tool_timeout_s, psm=7, offset=offset,
                                            region=",".join(map(str, seg.box)))
                found = [line for line in found if line.confidence >= 50]
                # a short drawing beside its label (the vinyl of a flat acrylate before
                # "CO2Bu") reads as the label plus OCR's strokes ("7~co,Bu"): it stays drawn
                kept_drawn = seg.kind == "structure" and not any(layout.wordlike(line.text) for line in found) \
                    and layout.holds_drawing(ink, seg.box, bond)
                if found and not kept_drawn:
                    lines = [line for line in lines if not (id(line) in straddling and layout.overlaps(seg.box, line.box))]
                    lines += found
                    segments[index] = layout.Segment("text", seg.box, seg.band)
        table = _table_region(segments, ink.shape, bond)
        if table is not None:
            path, offset = _crop_file(image, table, scratch, "table.png")
            lines += tesseract.read_text(trajectory, path, command=list(config.tesseract_command),
                                         limit_s=config.tool_timeout_s, psm=6, offset=offset,
                                         region=",".join(map(str, table)))
    return segments, sorted(lines, key=lambda line: (line.box[1], line.box[0]))


def _table_region(segments: list[layout.Segment], shape: tuple[int, int],
                  bond: float = layout.DEFAULT_BOND) -> tuple[int, int, int, int] | None:
    """The full-width area under the last arrow row, when it holds no drawn structure: a
    substrate table, read again as one block (sparse-text reading drops lone cells such as
    entry numbers and ``H``).  A "structure" no taller than 1.5 bonds there is a printed
    glyph group the page pass did not read (a superscript ``¹H``), not a drawing."""
    arrows = layout.arrows_of(segments)
    if not arrows:
        return None
    band = max(s.band for s in arrows)
    top = max(s.box[3] for s in [*segments, *arrows] if s.band == band and s.kind in ("structure", "arrow", "fork")) + 3
    if top >= shape[0] - 20 or any(s.kind == "structure" and s.box[1] > top and s.box[3] - s.box[1] + 1 > 1.5 * bond
                                   for s in segments):
        return None
    return (0, top, shape[1] - 1, shape[0] - 1)


def _candidates(segments: list[layout.Segment]) -> list[int]:
    """Blobs worth an osra crop: structures, and short "text" blobs that sit in an arrow
    row beside (not above or below) every arrow — small molecules such as ethanol are
    no taller than a printed line, while conditions are printed over the arrow."""
    arrows = layout.arrows_of(segments)
    picked = []
    for index, seg in enumerate(segments):
        beside_arrows = seg.kind == "text" and any(a.band == seg.band for a in arrows) and not any(
            a.band == seg.band and a.box[0] <= seg.box[2] and seg.box[0] <= a.box[2] for a in arrows)
        if seg.kind == "structure" or beside_arrows:
            picked.append(index)
    return picked


def crop_scale(bond: float, target: float | None) -> float:
    """The factor that brings a drawing's bond length to ``target`` px (1 when ``target``
    is None, the bond is unknown (0), or it is already within 20 % of the target)."""
    if not target or bond <= 0:
        return 1.0
    factor = target / bond
    return 1.0 if 0.8 <= factor <= 1.25 else max(0.25, min(4.0, factor))


def sound_first(readings: list[tuple[str, float]]) -> int:
    """Index of the reading to keep among one region's readings at several scales: one
    RDKit can sanitize (no valence errors) before one it cannot, then the higher osra
    confidence; the first (the target scale) on ties."""
    def key(item: tuple[int, tuple[str, float]]) -> tuple[bool, float, int]:
        index, (smiles, confidence) = item
        return _sanitizes(smiles), confidence, -index

    return max(enumerate(readings), key=key)[0]


def crop_scales(bond: float, config: ExtractConfig) -> list[float]:
    """The scales a crop is read at: the target scale (:func:`crop_scale`) first; with
    ``config.multiscale`` and a target other than 1, also as drawn (1) and halfway between
    (their geometric mean) — osra's reading of one drawing changes with its size, and
    which size reads best differs per drawing."""
    scale = crop_scale(bond, config.target_bond)
    if not config.multiscale or scale == 1.0:
        return [scale]
    return [scale, 1.0, round(scale ** 0.5, 3)]


def _recognize(trajectory: Trajectory, path: Path, image: Any, segments: list[layout.Segment],
               config: ExtractConfig, bond: float = layout.DEFAULT_BOND,
               lines: list[tesseract.TextLine] | None = None) -> tuple[list[layout.Segment], list[osra.Reading]]:
    """One osra call per candidate blob, each crop rescaled so its bonds are about
    ``config.target_bond`` px, keeping one reading per region (with osra's confidence).
    A reading with attachment points gets its labels from the printed text
    (:func:`_label_template`); straight chains read for printed ``ᵗBu``/``ⁱPr`` are
    rebranched (:func:`.osra.restore_prefixed_alkyls`).  A word-high blob that osra
    cannot read soundly but OCR reads as a linear formula (``H₂N–C≡N``) is read from the
    text (source ``formula``).  With ``config.multiscale``
    each crop is read at several scales and :func:`sound_first` keeps one reading.
    The whole figure is read only when the layout found no candidate at all.  A "text"
    blob that osra reads as a structure becomes a structure segment."""
    command = list(config.osra_command)
    found: list[tuple[str, float, tuple[int, int, int, int], str]] = []
    segments = list(segments)
    scales = crop_scales(bond, config)
    candidates = _candidates(segments)
    with tempfile.TemporaryDirectory(prefix="labrecord-osra-") as scratch:
        options = osra.write_dictionaries(scratch, command) if config.osra_dictionaries else []
        for index in candidates:
            seg = segments[index]
            named = _printed_name(seg.box, lines or []) if seg.box[3] - seg.box[1] + 1 <= 1.2 * (bond or layout.DEFAULT_BOND) else None
            if named:  # a reagent printed by name where a drawing would stand (B2(pin)2): the name decides
                found.append((named, 0.0, seg.box, "formula"))
                segments[index] = layout.Segment("structure", seg.box, seg.band, seg.parts)
                continue
            tries: list[tuple[str, tuple[str, float, tuple[int, int, int, int]]]] = []
            for number, scale in enumerate(scales):
                crop_path, offset = _crop_file(image, seg.box, scratch, f"crop{index}-{number}.png", seg.parts, scale,
                                               foreign_boxes(segments, index))
                read = osra.read_structures(trajectory, crop_path, command=command, limit_s=config.tool_timeout_s,
                                            offset=(0, 0), region=",".join(map(str, seg.box)), options=options)
                best = readers.largest(read)
                if best is not None:
                    tries.append((crop_path, (cleanup.clean(best[0], "osra")[0], best[1], best[2])))
            chosen = tries[sound_first([(smiles, confidence) for _, (smiles, confidence, _) in tries])] if tries else None
            if (chosen is None or not _sanitizes(chosen[1][0])) and seg.box[3] - seg.box[1] + 1 <= 1.2 * (bond or layout.DEFAULT_BOND):
                formula = _printed_formula(seg.box, lines or [])
                if formula:  # a small molecule printed as text (H2N–C≡N) osra cannot read
                    found.append((formula, 0.0, seg.box, "formula"))
                    segments[index] = layout.Segment("structure", seg.box, seg.band, seg.parts)
                    continue
            if chosen is None:
                continue
            crop_path, best = chosen
            best = (osra.restore_prefixed_alkyls(best[0], _words_in(seg.box, lines or [])), best[1], best[2])
            if "*" in best[0] and lines:
                labelled = _label_template(trajectory, crop_path, seg.box, lines, config, options)
                if labelled:  # from osra's molfile, so the clean-up table runs on it too
                    best = (cleanup.clean(labelled, "osra")[0], best[1], best[2])
            # one reading per region: its box is the region's own
            found.append((best[0], best[1], seg.box, "crop"))
            if seg.kind == "text":
                segments[index] = layout.Segment("structure", seg.box, seg.band, seg.parts)
        for box, band, smiles in _printed_species(segments, lines or [], [f[2] for f in found], bond):
            found.append((smiles, 0.0, box, "formula"))
            after = [i for i, seg in enumerate(segments) if seg.band == band and seg.box[0] <= box[0]]
            segments.insert(after[-1] + 1 if after else len(segments), layout.Segment("structure", box, band))
        if not candidates:
            for smiles, confidence, box in osra.read_structures(trajectory, str(path), command=command,
                                                                limit_s=config.tool_timeout_s, options=options):
                found.append((smiles, confidence, box, "full"))
    return segments, [osra.Reading(f"m{i + 1}", s, c, b, src, "tesseract" if src == "formula" else "osra")
                      for i, (s, c, b, src) in enumerate(found)]


def _second_reading(trajectory: Trajectory, image: Any, segments: list[layout.Segment], found: list[osra.Reading],
                    lines: list[tesseract.TextLine], config: ExtractConfig,
                    bond: float = layout.DEFAULT_BOND) -> list[osra.Reading]:
    """DECIMER beside osra, called only where its reading can decide something.

    1. Every structure of a row that holds an arrow (the template row: reactant and
       product templates, reagents drawn over the arrow) is read by DECIMER too; one
       reading per region is kept by :func:`.arbitrate.choose`, judged by how many scope
       entries the R-group engine then relates to the template (soundness next,
       confidence last).
    2. A drawn product the chosen templates do not fit (or that osra could not read) is
       read by DECIMER, and that reading kept when it fits (:func:`.arbitrate.pick_product`).
    3. A drawing printed as a binding's value (:func:`.associate.value_line`) that osra
       does not read as a substituent with one attachment point, and a drawing beside a
       lettered list whose osra reading the list cannot fill (:func:`_fillable`), are read
       by DECIMER, and its reading kept when it can be used.

    Blobs thinner than one bond (``bond`` px), or more than :data:`MAX_LEARNED_BONDS`
    bonds across both ways, are not read.
    At most ``config.learned_reads`` DECIMER reads per figure, the row's templates and
    the structures osra read unsoundly or not at all first, then the smaller drawings
    (reagents), then the products; readings keep their ids
    where osra's is kept, DECIMER's get new ones."""
    reader = readers.DecimerReader()
    readings = list(found)
    assigned = associate.assign_readings(segments, readings)
    arrow_bands = {s.band for s in layout.arrows_of(segments)}
    calls = [0]
    numbered = [len(readings)]
    with tempfile.TemporaryDirectory(prefix="labrecord-decimer-") as scratch:

        def learned(index: int) -> osra.Reading | None:
            if calls[0] >= config.learned_reads:
                return None
            calls[0] += 1
            seg = segments[index]
            crop_path, _ = _crop_file(image, seg.box, scratch, f"learned{index}.png", seg.parts, 1.0,
                                      foreign_boxes(segments, index))
            result = reader.read(trajectory, crop_path, region=",".join(map(str, seg.box)), limit_s=config.tool_timeout_s,
                                 printed=tuple(_words_in(seg.box, lines)))
            if result is None:
                return None
            numbered[0] += 1
            return osra.Reading(f"m{numbered[0]}", result.smiles, result.confidence, seg.box, "crop", result.reader)

        # a blob thinner than one bond is a glyph or a stray mark — unless it runs at
        # least two bonds the other way and is half a bond thick (a flat drawing such as
        # an acrylate beside its CO2Bu) — and one more than MAX_LEARNED_BONDS bonds across
        # both ways holds several drawings (a catalytic cycle): neither is worth a read
        # (DECIMER runs on to its longest output there)
        def readable(seg: layout.Segment) -> bool:
            sides = (seg.box[2] - seg.box[0] + 1, seg.box[3] - seg.box[1] + 1)
            thick = min(sides) >= bond or (min(sides) >= 0.5 * bond and max(sides) >= 2 * bond)
            return thick and min(sides) <= MAX_LEARNED_BONDS * bond

        # a molecule printed by name (B2(pin)2) is read from its name, not by a reader
        row = [i for i, seg in enumerate(segments) if seg.kind == "structure" and seg.band in arrow_bands
               and readable(seg) and not (i in assigned and assigned[i].source == "formula"
                                          and _printed_name(seg.box, lines) is not None)]

        def urgency(index: int) -> tuple[bool, int]:
            """Templates and what osra could not read soundly first, then small drawings
            (reagents) before large ones."""
            first = assigned.get(index)
            settled = first is not None and arbitrate.sound(first.smiles) and not first.is_template
            x0, y0, x1, y1 = segments[index].box
            return settled, (x1 - x0) * (y1 - y0)

        options: dict[int, list[osra.Reading]] = {}
        for index in sorted(row, key=urgency):
            second = learned(index)
            options[index] = [r for r in (assigned.get(index), second) if r is not None]
            # a label repeated on one atom may be a drawn H read as the label again:
            # the reading without the repeat is weighed too (arbitrate.choose decides)
            options[index] += [replace(r, smiles=variant) for r in options[index]
                               if r.is_template and (variant := cleanup.hydrogen_variant(r.smiles))]

        def replaced(choice: dict[int, osra.Reading]) -> list[osra.Reading]:
            dropped = {assigned[i].id for i in choice if i in assigned}
            return [r for r in readings if r.id not in dropped] + list(choice.values())

        def related(choice: dict[int, osra.Reading]) -> int:
            candidate = replaced(choice)
            plan, _ = associate.plan_from_rules(segments, candidate, lines)
            if not plan.get("scopes"):
                return 0
            try:
                built, _, _ = assemble.assemble({"scopes": plan["scopes"]}, candidate, reread_grids=False)
            except assemble.PlanError:
                return 0
            return arbitrate.related_reactants(built)

        def judge(reading: osra.Reading) -> bool:
            return arbitrate.sound(reading.smiles) and arbitrate.labels_printed(reading.smiles,
                                                                                 _words_in(reading.box, lines))

        choice = arbitrate.choose(options, related, judge=judge,
                                  named=lambda r: arbitrate.labels_named(r.smiles, _printed_labels(r.box, lines)))
        readings = replaced(choice)
        trajectory.add("arbitration", row={",".join(map(str, segments[i].box)): {"reader": r.reader, "smiles": r.smiles}
                                           for i, r in choice.items()})
        plan, _ = associate.plan_from_rules(segments, readings, lines)
        by_id = {r.id: r for r in readings}
        index_of = {r.id: i for i, r in associate.assign_readings(segments, readings).items()}
        for scope in plan.get("scopes") or []:
            templates = [by_id[i].smiles for i in scope.get("reactant_templates") or [] if i in by_id]
            product_template = by_id[scope["product_template"]].smiles if scope.get("product_template") in by_id else None
            if not templates or product_template is None:
                continue
            drawn = [by_id[e["product"]] for e in scope.get("entries") or [] if e.get("product") in by_id]
            if not any(arbitrate.fits_template(templates, product_template, r.smiles) for r in drawn):
                continue  # no drawn product fits: the template is in doubt, not the products
            for entry in scope.get("entries") or []:
                first = by_id.get(entry.get("product"))
                if first is None or first.id not in index_of or \
                        arbitrate.fits_template(templates, product_template, first.smiles):
                    continue
                kept = arbitrate.pick_product(first, learned(index_of[first.id]), templates, product_template)
                if kept is not first:
                    readings = [kept if r.id == first.id else r for r in readings]
                    trajectory.add("arbitration", product=",".join(map(str, kept.box)), reader=kept.reader,
                                   smiles=kept.smiles)
        def read_again(index: int, usable: Callable[[str], bool], why: str) -> None:
            """DECIMER's reading of a drawing osra's reading of which ``usable`` refuses,
            kept under osra's id when ``usable`` takes it."""
            nonlocal readings
            first = by_index[index]
            if usable(first.smiles):
                return
            second = learned(index)
            if second is not None and usable(second.smiles):
                by_index[index] = replace(second, id=first.id)
                readings = [by_index[index] if r.id == first.id else r for r in readings]
                trajectory.add("arbitration", **{why: ",".join(map(str, second.box))}, reader=second.reader,
                               smiles=second.smiles)

        # a drawing printed as a binding's value (``10a, R1, R2 =`` and a drawn aryl) that
        # osra does not read as a substituent with one attachment point is read again
        by_index = associate.assign_readings(segments, readings)
        for index in sorted(by_index):
            if associate.value_line(segments[index], lines) is not None:
                read_again(index, lambda smiles: rgroup.drawn_substituent(smiles) is not None, "value")
        # a drawing a lettered list is printed beside (``X: a=OMe``, ``b=H`` …) whose osra
        # reading keeps no label for the list to fill, or no wavy bond, is read again
        for column in associate.lettered_columns(lines):
            beside = associate.column_drawing(column, segments, {i: r for i, r in by_index.items()
                                                                 if segments[i].band not in arrow_bands})
            if beside is not None:
                read_again(beside, partial(_fillable, column), "listed")
    trajectory.add("learned_reads", reader=reader.name, count=calls[0], limit=config.learned_reads)
    return readings


def _fillable(column: associate.LetteredColumn, smiles: str) -> bool:
    """A drawing the lettered ``column`` can fill: it keeps the label the column names
    (:func:`.associate.column_label`) and, that label filled with H, reads as a
    substituent with one attachment point (its wavy bond)."""
    label = associate.column_label(column, smiles)
    if label is None:
        return False
    try:
        return rgroup.drawn_substituent(rgroup.fill_labels(smiles, {label: "H"})) is not None
    except rgroup.RGroupError:
        return False


def _sanitizes(smiles: str) -> bool:
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    return Chem.MolFromSmiles(smiles) is not None


def _printed_formula(box: tuple[int, int, int, int], lines: list[tesseract.TextLine]) -> str | None:
    """The SMILES of a linear formula printed in ``box`` (:func:`.osra.linear_formula` of
    the OCR words whose centre lies inside it, joined), or None."""
    words = _words_in(box, lines)
    return osra.linear_formula("".join(words)) if words else None


def _printed_name(box: tuple[int, int, int, int], lines: list[tesseract.TextLine]) -> str | None:
    """The SMILES of a small molecule printed by name in ``box``: the OCR words whose
    centre lies inside it, joined, name a molecule of
    :data:`~labrecord.chemdata.abbreviations.PRINTED_MOLECULES` (``B,(pin)2`` for
    B₂(pin)₂, :func:`~labrecord.chemdata.abbreviations.printed_molecule`), or None."""
    from labrecord.chemdata.abbreviations import printed_molecule

    words = _words_in(box, lines)
    return printed_molecule("".join(words)) if words else None


def _printed_species(segments: list[layout.Segment], lines: list[tesseract.TextLine],
                     taken: list[tuple[int, int, int, int]], bond: float) -> list[tuple[tuple[int, int, int, int], int, str]]:
    """Small molecules printed by name inside a line of text beside an arrow (``R+ CS2``
    run together with the ``rt, 30 min`` under the arrow; ``+ NH3`` after the product):
    (word box, row, SMILES) of each OCR word of a text segment in an arrow's row that
    lies beside the arrow, not over or under its span, within 1.5 bonds of its height,
    and names a molecule of :data:`~labrecord.chemdata.abbreviations.PRINTED_MOLECULES`
    (:func:`~labrecord.chemdata.abbreviations.printed_molecule`).  Words in a region
    already read are left."""
    from labrecord.chemdata.abbreviations import printed_molecule

    reach = 1.5 * (bond or layout.DEFAULT_BOND)
    arrows = layout.arrows_of(segments)
    out: list[tuple[tuple[int, int, int, int], int, str]] = []
    for seg in segments:
        row = [a for a in arrows if a.band == seg.band]
        if seg.kind != "text" or not row:
            continue
        for line in lines:
            for word, box in line.words:
                smiles = printed_molecule(word)
                if smiles is None or not layout.contains(seg.box, box, slack=2) or \
                        any(layout.overlaps(box, t) for t in taken):
                    continue
                middle = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
                if any(a.box[0] <= middle[0] <= a.box[2] for a in row):
                    continue  # a condition printed over or under the arrow
                centres = [(a.box[1] + a.box[3]) / 2 for a in row]
                nearest = min(centres, key=lambda y: abs(y - middle[1]))
                if abs(middle[1] - nearest) > reach:
                    continue
                axis = int(nearest)
                # OCR's word box may reach past the arrow's tail or head by a pixel or two
                for a in row:
                    if middle[0] < a.box[0] and box[2] >= a.box[0]:
                        box = (box[0], box[1], a.box[0] - 1, box[3])
                    elif middle[0] > a.box[2] and box[0] <= a.box[2]:
                        box = (a.box[2] + 1, box[1], box[2], box[3])
                # the species stands on the row's line: its box reaches the arrow's axis
                box = (box[0], min(box[1], axis), box[2], max(box[3], axis))
                if all(box != o[0] for o in out):
                    out.append((box, seg.band, smiles))
    return out


def _printed_labels(box: tuple[int, int, int, int], lines: list[tesseract.TextLine]) -> set[str]:
    """The variable labels printed inside ``box``, normalized (``Ry`` -> ``R1``, ``R2=`` -> ``R2``)."""
    parts = (part.strip(",.;:()[]") for word in _words_in(box, lines) for part in word.split("="))
    return {associate.normalize_variable(part.rstrip(",=:")) for part in parts if associate.LABEL_WORD.match(part)}


def _words_in(box: tuple[int, int, int, int], lines: list[tesseract.TextLine]) -> list[str]:
    """The OCR words whose centre lies inside ``box`` (grown by 2 px), in reading order."""
    return [w for line in lines for w, b in line.words if layout.contains(box, b, slack=2)]


def _model_readings(trajectory: Trajectory, data: bytes, size: tuple[int, int], segments: list[layout.Segment],
                    lines: list[tesseract.TextLine], config: ExtractConfig) -> list[osra.Reading]:
    """Recognition by the model endpoint: one request with every structure region; each
    answer becomes a reading of that region (source ``model``)."""
    regions = {f"s{i}": seg.box for i, seg in enumerate(segments) if seg.kind == "structure"}
    if not regions:
        return []
    answers = endpoint.request_readings(trajectory, config.model_endpoint or "", config.model or "", data, regions,
                                        [{"text": ln.text, "box": list(ln.box)} for ln in lines],
                                        limit_s=config.tool_timeout_s, api_key_env=config.api_key_env)
    return [osra.Reading(f"m{i + 1}", smiles, confidence, regions[region], "model", config.model or "model")
            for i, (region, smiles, confidence) in enumerate(answers)]


def _label_template(trajectory: Trajectory, crop_path: str, box: tuple[int, int, int, int],
                    lines: list[tesseract.TextLine], config: ExtractConfig, options: list[str] | None = None) -> str | None:
    """Name a template's attachment points after the labels printed at them.

    osra writes every R label as a bare ``*``; its molfile output keeps 2-D atom
    coordinates, so each ``*`` is matched (nearest, one to one) to the label words
    printed inside the drawing (``R1``, ``R²``, ``Ar``, ``X`` …), both sides measured in
    coordinates normalized to the drawing's extent.  Returns the labelled SMILES
    (``[1*]`` for R1, ``[Ar]``…) or None when the labels cannot be placed."""
    from rdkit import Chem

    from labrecord.chemdata.extract.associate import LABEL_WORD, normalize_variable

    x0, y0, x1, y1 = box
    words = [(normalize_variable(w.rstrip(",=:")), ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2))
             for line in lines for w, b in line.words
             if LABEL_WORD.match(w) and x0 - 10 <= (b[0] + b[2]) / 2 <= x1 + 10 and y0 - 10 <= (b[1] + b[3]) / 2 <= y1 + 10]
    if not words:
        return None
    argv = [*config.osra_command, *(options or []), "-f", "sdf", crop_path]
    block = trajectory.run_tool("osra", argv, limit_s=config.tool_timeout_s, note={"region": ",".join(map(str, box))})
    mols = [m for m in (Chem.MolFromMolBlock(part + "M  END\n", sanitize=False)
                        for part in block.split("M  END") if "V2000" in part) if m is not None]
    if not mols:
        return None
    mol = max(mols, key=lambda m: m.GetNumAtoms())
    conf = mol.GetConformer()
    xs = [conf.GetAtomPosition(i).x for i in range(mol.GetNumAtoms())]
    ys = [conf.GetAtomPosition(i).y for i in range(mol.GetNumAtoms())]
    dummies = [a.GetIdx() for a in mol.GetAtoms() if a.GetAtomicNum() == 0]
    if not dummies or len(dummies) > len(words) or max(xs) == min(xs) or max(ys) == min(ys):
        return None

    def atom_at(i: int) -> tuple[float, float]:  # molfile y grows upwards
        return (xs[i] - min(xs)) / (max(xs) - min(xs)), (max(ys) - ys[i]) / (max(ys) - min(ys))

    def word_at(centre: tuple[float, float]) -> tuple[float, float]:
        return (centre[0] - x0) / max(1, x1 - x0), (centre[1] - y0) / max(1, y1 - y0)

    pairs = sorted(((atom_at(i)[0] - word_at(c)[0]) ** 2 + (atom_at(i)[1] - word_at(c)[1]) ** 2, i, k)
                   for i in dummies for k, (_, c) in enumerate(words))
    chosen: dict[int, str] = {}
    used: set[int] = set()
    for _, atom, k in pairs:
        if atom not in chosen and k not in used:
            chosen[atom] = words[k][0]
            used.add(k)
    editable = Chem.RWMol(mol)
    names: dict[int, str] = {}
    for atom, label in chosen.items():
        number = 900 + len(names)
        names[number] = label
        editable.GetAtomWithIdx(atom).SetIsotope(number)
    try:
        Chem.SanitizeMol(editable)
        smiles = Chem.MolToSmiles(Chem.RemoveHs(editable))
    except Exception:  # osra's molfile may not sanitize (it already failed the SMILES route)
        return None
    for number, label in names.items():
        smiles = smiles.replace(f"[{number}*]", f"[{label}]")
    return smiles


def _config_json(config: ExtractConfig) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()}


def _document(figure_id: str, path: Path, config: ExtractConfig, status: str, error: str | None, stage: str | None,
              reactions: list[Any], templates: list[Any], timing: dict[str, float], state: dict[str, Any],
              trajectory: Trajectory) -> dict[str, Any]:
    from labrecord.models.rxn import FigureDocument, Timing

    extra: dict[str, Any] = {"readings": state["readings"], "failures": state["failures"],
                             "plan_source": state["plan_source"], "layout_source": state.get("layout_source", "rules"),
                             "recognition_source": state.get("recognition_source", "osra"), "trajectory": f"{TRAJECTORY_DIR}/{figure_id}{TRAJECTORY_SUFFIX}"}
    if stage and status != "ok":
        extra["failed_stage"] = stage
        extra["failed_reason"] = state.get("reason") or status
    document = FigureDocument(figure_id=figure_id, system=config.system, status=status, error=error,  # type: ignore[arg-type]
                              reactions=reactions if status == "ok" else [], templates=templates if status == "ok" else [],
                              timing=Timing(wall_s=round(trajectory.elapsed(), 6), timeout_s=config.budget_s, steps=timing),
                              source=path.name, extra=extra)
    return document_json(document)


# --------------------------------------------------------------------------- many figures

def _extract(job: tuple[str, ExtractConfig]) -> FigureResult:
    return extract_figure(*job)


def run_extraction(figures_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], config: ExtractConfig,
                   *, workers: int = 1, executor: str = "local", ray_address: str | None = None,
                   on_figure: Callable[[FigureResult], None] | None = None) -> dict[str, Any]:
    """Extract every figure of ``figures_dir`` into ``out_dir``; return the run summary."""
    if workers < 1:
        raise LabrecordError(f"--workers must be at least 1, got {workers}")
    if config.budget_s <= 0:
        raise LabrecordError(f"--budget-s must be positive, got {config.budget_s}")
    if config.max_pixels <= 0:
        raise LabrecordError(f"--max-pixels must be positive, got {config.max_pixels}")
    readers.parse_readers(",".join(config.readers))
    if bool(config.model_endpoint) != bool(config.model):
        raise LabrecordError("--model-endpoint and --model go together (one was given without the other)")
    unknown = [stage for stage in config.model_stages if stage not in endpoint.MODEL_STAGES]
    if unknown or not config.model_stages:
        raise LabrecordError(f"--model-stages: unknown or empty {','.join(unknown) or '(none)'} "
                             f"(known: {','.join(endpoint.MODEL_STAGES)})")
    paths = list_figures(figures_dir)
    out = Path(out_dir)
    (out / TRAJECTORY_DIR).mkdir(parents=True, exist_ok=True)
    results = parallel.map(_extract, [(str(p), config) for p in paths], workers=workers, executor=executor,
                           address=ray_address)
    documents: dict[str, dict[str, Any]] = {}
    for result in results:
        write_document(out / f"{result.figure_id}.json", result.document)
        trajectory = Trajectory(result.figure_id, config.budget_s, events=result.events)
        trajectory.write(out / TRAJECTORY_DIR / f"{result.figure_id}{TRAJECTORY_SUFFIX}")
        documents[result.figure_id] = result.document
        if on_figure:
            on_figure(result)
    summary = summarize(documents, config, executor, workers)
    atomic_write_bytes(out / TRAJECTORY_DIR / SUMMARY_NAME, dumps(summary) + b"\n")
    return summary


def summarize(documents: dict[str, dict[str, Any]], config: ExtractConfig, executor: str, workers: int) -> dict[str, Any]:
    """Statuses, reactions, and failures counted per stage and per stage:kind."""
    statuses: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    reactions = 0
    for document in documents.values():
        statuses[document.get("status", "ok")] += 1
        reactions += len(document.get("reactions", []))
        extra = document.get("extra", {})
        failures = list(extra.get("failures", []))
        if document.get("status", "ok") != "ok":
            failures.append({"stage": extra.get("failed_stage") or "unknown",
                             "kind": extra.get("failed_reason") or document["status"]})
        for failure in failures:
            stages[failure["stage"]] += 1
            kinds[f"{failure['stage']}:{failure['kind']}"] += 1
    return {"figures": len(documents), "status": dict(sorted(statuses.items())), "reactions": reactions,
            "stage_failures": dict(sorted(stages.items())), "failure_kinds": dict(sorted(kinds.items())),
            "executor": executor, "workers": workers, "config": _config_json(config)}
