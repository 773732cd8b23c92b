#!/usr/bin/env bash
# The static checks of CI (installed by the [dev] extra):
#   ruff         pyflakes and the error classes of pycodestyle, bugbear (pyproject [tool.ruff])
#   mypy         the core package labrecord/ in basic mode (pyproject [tool.mypy])
#   lint-imports the layer rules of DESIGN.md and "no import cycles" (pyproject [tool.importlinter])
# Any failure fails the script.  Usage: bash scripts/lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python3 -m ruff check .
python3 -m mypy
# The wings install under labrecord (setup.py maps scorers/ to labrecord.scorers ...), but the
# import graph is read from folders: lay the installed package out as links in a scratch folder.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/labrecord"
for entry in labrecord/*; do ln -s "$root/$entry" "$tree/labrecord/"; done
for wing in scorers recorders sim exporters chemdata; do ln -s "$root/$wing" "$tree/labrecord/$wing"; done
(cd "$tree" && PYTHONPATH="$tree" lint-imports --no-cache "$root/pyproject.toml")
