# Sourced by the other scripts: make .venv with askcache and its dev tools installed.
# Needs Python 3.11+ and pip (python3 -m venv); installs only from the package registry.
set -euo pipefail
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "askcache needs Python 3.11 or newer; $PYTHON is $("$PYTHON" --version 2>&1)" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
# s3fs first: its aiobotocore pins botocore, and resolved in one go with moto's unpinned boto3
# pip backtracks through dozens of aiobotocore releases for many minutes.
.venv/bin/python -m pip install --quiet -e ".[s3]"
.venv/bin/python -m pip install --quiet -e ".[dev]"
