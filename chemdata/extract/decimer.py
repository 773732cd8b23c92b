"""The learned structure reader: DECIMER (package ``decimer``, extra ``[ocsr]``).

DECIMER is an image-to-SMILES transformer (EfficientNet-V2 encoder, transformer decoder)
from the Steinbeck group (MIT licence).  The project never lets it download anything:
``decimer`` 2.8.1 fetches its model from the internet on first use when its model folder
is missing, so this adapter never goes through DECIMER's own loader.  It loads the
TensorFlow SavedModel and the tokenizer from :func:`model_dir` itself and refuses with
one line when the folder is incomplete.

**Where the model comes from.**  ``scripts/install-ocsr.sh`` takes the printed-structure
model (``DECIMER_model/``, the content of DECIMER's published ``models.zip``) from the
registry packages ``unp-decimer-weights-part0`` … ``part3``, a third-party upload: their
``data.bin`` files, concatenated, are a zip of :data:`MODEL_ZIP_BYTES` bytes with sha256
:data:`MODEL_ZIP_SHA256`.  :func:`assemble_model` checks both and refuses on any
difference before it unpacks.

**Loading.**  The model takes one to three minutes to load on a shared core; it is loaded
once per process (:func:`load`) and kept, so a worker pays for it once.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError

#: the zip that the four registry chunks concatenate into
MODEL_ZIP_BYTES = 300_310_187
MODEL_ZIP_SHA256 = "612f2b0af3c1a4852d93ef1e374680516b1962578c62f6b31f1b57f48ffff180"
#: the registry packages whose ``<module>/data.bin`` files are the chunks, in order
CHUNK_PACKAGES = tuple(f"unp-decimer-weights-part{i}" for i in range(4))
CHUNK_VERSION = "1.0.0"
#: DECIMER's folder name for the printed-structure model (inside the zip and on disk)
MODEL_FOLDER = "DECIMER_model"
#: the files a complete model folder holds (the tokenizer decodes the model's tokens)
MODEL_FILES = ("saved_model.pb", "variables/variables.index", "variables/variables.data-00000-of-00001",
               "assets/tokenizer_SMILES.pkl")
HOME_ENV = "LABRECORD_DECIMER_HOME"
INSTALL_HINT = "bash scripts/install-ocsr.sh"


def model_home() -> Path:
    """The folder holding ``DECIMER_model/``: ``$LABRECORD_DECIMER_HOME``, else
    ``~/.cache/labrecord/decimer``."""
    configured = os.environ.get(HOME_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "labrecord" / "decimer"


def model_dir() -> Path:
    return model_home() / MODEL_FOLDER


def missing_reason() -> str | None:
    """Why DECIMER cannot read here (one line), or None when the package and the model
    folder are both in place.  Looks at files only: nothing is imported or loaded."""
    if importlib.util.find_spec("DECIMER") is None or importlib.util.find_spec("tensorflow") is None:
        return f"the decimer reader needs the [ocsr] extra (decimer, tensorflow-cpu): {INSTALL_HINT}"
    folder = model_dir()
    absent = [name for name in MODEL_FILES if not (folder / name).is_file()]
    if absent:
        return (f"{folder}: DECIMER model folder incomplete (no {absent[0]}); it is never downloaded at run time, "
                f"install it with {INSTALL_HINT}")
    return None


# --------------------------------------------------------------------------- install

def assemble_model(chunks: Sequence[str | os.PathLike[str]], home: str | os.PathLike[str], *,
                   size: int = MODEL_ZIP_BYTES, sha256: str = MODEL_ZIP_SHA256) -> Path:
    """Concatenate the chunks into the model zip, check its size and sha256, and unpack
    ``DECIMER_model/`` into ``home`` (atomically: a folder that is there is either
    complete or the old one).  A chunk is a file, or a registry wheel (``.whl``) whose
    ``<module>/data.bin`` member is read in place.  Raises :class:`LabrecordError`
    naming the difference."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    digest, total = hashlib.sha256(), 0
    with tempfile.TemporaryDirectory(dir=home, prefix=".assemble-") as scratch:
        archive = Path(scratch) / "models.zip"
        with open(archive, "wb") as out:
            for chunk in chunks:
                with _open_chunk(Path(chunk)) as part:
                    for block in iter(lambda: part.read(1 << 20), b""):
                        digest.update(block)
                        total += len(block)
                        out.write(block)
        if total != size:
            raise LabrecordError(f"DECIMER model chunks ({', '.join(map(str, chunks))}): {total} bytes, expected {size}")
        if digest.hexdigest() != sha256:
            raise LabrecordError(f"DECIMER model chunks: sha256 {digest.hexdigest()}, expected {sha256}")
        unpacked = Path(scratch) / "unpacked"
        with zipfile.ZipFile(archive) as bundle:
            names = bundle.namelist()
            if any(not n.startswith(f"{MODEL_FOLDER}/") or ".." in Path(n).parts for n in names):
                raise LabrecordError(f"DECIMER model zip: entries outside {MODEL_FOLDER}/ ({names[0]!r})")
            bundle.extractall(unpacked)
        absent = [name for name in MODEL_FILES if not (unpacked / MODEL_FOLDER / name).is_file()]
        if absent:
            raise LabrecordError(f"DECIMER model zip: no {MODEL_FOLDER}/{absent[0]}")
        target = home / MODEL_FOLDER
        old = Path(scratch) / "old"
        if target.exists():
            target.rename(old)
        (unpacked / MODEL_FOLDER).rename(target)
    return target


def _open_chunk(path: Path) -> Any:
    if path.suffix != ".whl":
        return open(path, "rb")
    bundle = zipfile.ZipFile(path)
    members = [n for n in bundle.namelist() if n.endswith("/data.bin")]
    if len(members) != 1:
        raise LabrecordError(f"{path}: a model chunk wheel holds one <module>/data.bin, found {len(members)}")
    return bundle.open(members[0])


def chunk_wheels(folder: str | os.PathLike[str]) -> list[Path]:
    """The downloaded chunk wheels in ``folder``, in chunk order; a missing one is refused."""
    found = []
    for name in CHUNK_PACKAGES:
        matches = sorted(Path(folder).glob(f"{name.replace('-', '_')}-{CHUNK_VERSION}-*.whl"))
        if not matches:
            raise LabrecordError(f"{folder}: no wheel of {name}=={CHUNK_VERSION}")
        found.append(matches[0])
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m labrecord.chemdata.extract.decimer WHEEL_DIR``: assemble the model from
    the chunk wheels downloaded into WHEEL_DIR into :func:`model_home` (used by
    ``scripts/install-ocsr.sh``)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m labrecord.chemdata.extract.decimer WHEEL_DIR", file=sys.stderr)
        return 2
    try:
        target = assemble_model(chunk_wheels(args[0]), model_home())
    except LabrecordError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"DECIMER model ({MODEL_ZIP_BYTES} bytes, sha256 {MODEL_ZIP_SHA256[:12]}…) in {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# --------------------------------------------------------------------------- reading

@dataclass
class Model:
    """A loaded reader: ``preprocess(image path) -> model input``, ``run(input) ->
    (token ids [1, n], token confidences [n])``, and the tokenizer's ``index_word``."""

    preprocess: Callable[[str], Any]
    run: Callable[[Any], tuple[Any, Any]]
    index_word: dict[int, str]
    decode: Callable[[str], str]
    load_s: float = 0.0

    def read(self, image_path: str) -> tuple[str, float]:
        """(SMILES, confidence): the decoded tokens and the geometric mean of the
        per-token confidences over the tokens between ``<start>`` and ``<end>``."""
        import math

        import numpy as np

        tokens, confidences = self.run(self.preprocess(image_path))
        ids = [int(i) for i in np.asarray(tokens).reshape(-1)]
        words = [self.index_word.get(i, "") for i in ids]
        text = "".join(w for w in words if w not in ("<start>", "<end>", "<pad>"))
        values = [float(c) for c in np.asarray(confidences).reshape(-1)]
        inner = [v for w, v in zip(words, values) if w not in ("<start>", "<end>", "<pad>")]
        inner = [min(1.0, max(1e-9, v)) for v in inner]
        confidence = math.exp(sum(math.log(v) for v in inner) / len(inner)) if inner else 0.0
        return self.decode(text), round(confidence, 4)


_loaded: dict[str, Model] = {}
_lock = threading.Lock()


def load() -> Model:
    """The DECIMER model of :func:`model_dir`, loaded once per process.  Raises
    :class:`LabrecordError` (never downloads) when the extra or the folder is missing."""
    reason = missing_reason()
    if reason:
        raise LabrecordError(reason)
    key = str(model_dir())
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load_saved_model(Path(key))
        return _loaded[key]


def loaded_seconds() -> float:
    """Seconds this process spent loading models so far (0 when none was loaded)."""
    return sum(model.load_s for model in _loaded.values())


def _load_saved_model(folder: Path) -> Model:
    import time

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    began = time.monotonic()
    import tensorflow as tf
    from DECIMER import pre_process, utils  # importing DECIMER loads and downloads nothing
    from DECIMER.decimer import load_tokenizer

    tokenizer = load_tokenizer(str(folder / "assets" / "tokenizer_SMILES.pkl"))
    saved = tf.saved_model.load(str(folder))
    return Model(preprocess=pre_process.decode_image, run=lambda image: saved(tf.constant(image)),
                 index_word=dict(tokenizer.index_word), decode=utils.decoder, load_s=round(time.monotonic() - began, 3))


def read_images(paths: Iterable[str], model: Model | None = None) -> list[tuple[str, float]]:
    """(SMILES, confidence) per image, with the process's model unless one is given."""
    model = model or load()
    return [model.read(path) for path in paths]
