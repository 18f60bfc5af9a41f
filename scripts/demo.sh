#!/usr/bin/env bash
# Set up askcache in .venv and run the end-to-end demo (offline unless --online is given).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
exec .venv/bin/askcache demo "$@"
