#!/usr/bin/env bash
# Set up askcache in .venv (and Xvfb, if missing) and run the end-to-end demo: a real Tk app
# on $DISPLAY or a new Xvfb; Claude when ANTHROPIC_API_KEY is set, else a scripted model.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_system.sh
source scripts/_venv.sh
echo "askcache is installed in .venv/: run .venv/bin/askcache, or 'source .venv/bin/activate' for askcache alone" >&2
exec .venv/bin/askcache demo "$@"
