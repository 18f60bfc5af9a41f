#!/usr/bin/env bash
# Set up askcache in .venv (and Xvfb, xcalc, Chromium, fonts, if missing) and run every check:
# ruff lint and format, mypy strict, the import contracts (lint-imports, with the contract type in tools/), pytest (the desktop tests start their own Xvfb).
set -euo pipefail
cd "$(dirname "$0")/.."
export ASKCACHE_TEST_PACKAGES=1
source scripts/_system.sh
source scripts/_venv.sh
.venv/bin/ruff check src tests scripts examples bench tools
.venv/bin/ruff format --check src tests scripts examples bench tools
.venv/bin/mypy
.venv/bin/lint-imports
.venv/bin/pytest "$@"
