#!/usr/bin/env bash
# Set up askcache in .venv (and Xvfb, if missing) and run the end-to-end demo: a real Tk app
# on $DISPLAY or a new Xvfb; Claude when ANTHROPIC_API_KEY is set, else a scripted model.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_system.sh
source scripts/_venv.sh
exec .venv/bin/askcache demo "$@"
