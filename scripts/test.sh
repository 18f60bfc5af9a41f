#!/usr/bin/env bash
# Set up askcache in .venv and run every check: ruff lint and format, mypy strict, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
.venv/bin/ruff check src tests scripts examples
.venv/bin/ruff format --check src tests scripts examples
.venv/bin/mypy
.venv/bin/pytest "$@"
