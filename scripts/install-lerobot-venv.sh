#!/usr/bin/env bash
# Builds (or refreshes) the Python >= 3.12 virtual environment that the LeRobot export and
# its tests use: lerobot with its dataset and training extras (lerobot-train), gym-pusht, and robomimic
# 0.3.0 for the BC training test (robomimic's networks need torchvision, and this
# environment's torch and torchvision load together).  lerobot 0.6 needs Python >= 3.12,
# while the labrecord core runs on 3.11.
#
#   scripts/install-lerobot-venv.sh [VENV_DIR]
#
# VENV_DIR defaults to $LABRECORD_LEROBOT_VENV or ~/.cache/labrecord/lerobot-venv.  An
# existing venv with the right lerobot is kept (the trainers are added if missing, and
# labrecord itself is reinstalled).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${LABRECORD_LEROBOT_VENV:-$HOME/.cache/labrecord/lerobot-venv}}
want=0.6.1

find_python312() {
  for candidate in python3.13 python3.12 /root/.pyenv/versions/3.12.*/bin/python3.12; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}

if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('lerobot') != '$want')" 2>/dev/null; then
  py=$(find_python312) || { echo "error: lerobot needs Python >= 3.12 and none was found" >&2; exit 1; }
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "lerobot[dataset]==$want"
fi
if ! "$venv/bin/python" -c "import accelerate, wandb, robomimic, six" 2>/dev/null; then
  "$venv/bin/pip" install -q "lerobot[dataset,training]==$want" "robomimic==0.3.0" six
fi
# gym-pusht: the PushT environment lerobot-eval runs
if ! "$venv/bin/python" -c "import gym_pusht" 2>/dev/null; then
  "$venv/bin/pip" install -q gym-pusht
fi
"$venv/bin/pip" install -q -e "$here"
echo "$venv/bin/python"
