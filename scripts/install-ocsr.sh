#!/usr/bin/env bash
# Installs the learned structure reader of the [ocsr] extra into the Python of $PYTHON
# (default python3) and assembles its model; nothing is fetched at run time afterwards.
#   1. labrecord (editable, this checkout) with the extra's dependencies: tensorflow-cpu 2.20.0,
#      headless OpenCV and DECIMER's small dependencies (pyproject: optional-dependencies ocsr);
#   2. decimer 2.8.1 with --no-deps (it declares tensorflow and the GUI opencv-python);
#   3. the model: the registry packages unp-decimer-weights-part0..3 (a third-party upload
#      of DECIMER's published models.zip) are downloaded as wheels, their data.bin chunks
#      concatenated, checked against the size and sha256 in
#      labrecord/chemdata/extract/decimer.py, and DECIMER_model/ unpacked into
#      $LABRECORD_DECIMER_HOME (default ~/.cache/labrecord/decimer).  A difference refuses.
# Usage: bash scripts/install-ocsr.sh   (PYTHON=.venv/bin/python bash scripts/install-ocsr.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
"$py" -m pip install -q -e ".[ocsr]"
"$py" -m pip install -q --no-deps "decimer==2.8.1"
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
"$py" -m pip download -q --no-deps -d "$wheels" unp-decimer-weights-part{0,1,2,3}==1.0.0
"$py" -m labrecord.chemdata.extract.decimer "$wheels"
