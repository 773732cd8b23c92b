#!/usr/bin/env bash
# The static checks of CI (installed by the [dev] extra):
#   ruff         pyflakes and the error classes of pycodestyle, bugbear (pyproject [tool.ruff])
#   mypy         the whole installed package, core and wings, in basic mode (pyproject [tool.mypy])
#   lint-imports the layer rules of docs/design.md and "no import cycles" (pyproject [tool.importlinter])
# Any failure fails the script.  Usage: bash scripts/lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python3 -m ruff check .
# The wings install under labrecord (setup.py maps scorers/ to labrecord.scorers ...), but both
# checkers read module names from folders: they run on the installed layout, built from setup.py.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
python3 scripts/package_tree.py "$tree"
(cd "$tree" && python3 -m mypy --config-file "$root/pyproject.toml" --cache-dir "$root/.mypy_cache" -p labrecord)
(cd "$tree" && PYTHONPATH="$tree" lint-imports --no-cache "$root/pyproject.toml")
