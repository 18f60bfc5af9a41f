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
# s3fs first: its aiobotocore pins botocore narrowly. Resolved in one go with the unpinned
# boto3 of moto (the test S3 server), pip backtracks through dozens of aiobotocore releases
# for many minutes; holding botocore where aiobotocore put it, and boto3 at or below it
# (the two are released with the same version numbers), resolves at once.
.venv/bin/python -m pip install --quiet -e ".[s3]"
botocore=$(.venv/bin/python -c 'import botocore; print(botocore.__version__)')
.venv/bin/python -m pip install --quiet -e ".[dev]" "botocore==$botocore" "boto3<=$botocore"
