#!/usr/bin/env bash
# Installs everything the test suite uses on a fresh Debian machine (run as root or with sudo):
#   Debian: osra, tesseract-ocr (structure and text reading), EGL + Mesa (offscreen rendering)
#   Python 3.11+: labrecord with its extras (dev brings statsmodels, the reference for the
#   paired tests of labrecord diff), and the reference readers robomimic + CPU torch
#   the [ocsr] extra: DECIMER (tensorflow-cpu) and its model (scripts/install-ocsr.sh; adds about
#   1.6 GB of packages and 332 MB of model, under two minutes on a bare machine)
#   Python 3.12: a separate venv with lerobot (scripts/install-lerobot-venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
$sudo_ apt-get update -qq
$sudo_ apt-get install -y -qq osra tesseract-ocr tesseract-ocr-eng fonts-dejavu-core libegl1 libgl1-mesa-dri libosmesa6 >/dev/null
python3 -m pip install -q -e ".[dev,sim,chem,ray,report,policies,gym,vla-eval]"
python3 -c "import statsmodels" # the exact McNemar reference of tests/scorers/test_paired.py
# openpi-client pins numpy<2; only its pure-Python codec is used, as the reference the
# OpenPI adapter's wire format is checked against
python3 -m pip install -q --no-deps "openpi-client==0.1.2"
python3 -m pip install -q "torch==2.13.0" "robomimic==0.3.0" six
bash scripts/install-ocsr.sh
bash scripts/install-lerobot-venv.sh >/dev/null
echo "test dependencies installed"
