#!/usr/bin/env bash
# Set up askcache in .venv with the benchmark extras (and Xvfb, the X programs the accuracy
# benchmark drives, fonts, if missing) and run one benchmark; it rewrites its section of
# docs/benchmarks.md.
#   bash scripts/bench.sh accuracy [--reuse] | speed | savings | storage | fuzz [PARSE REPLAY SIGNED] | faults | heal | replay_latency [RUNS] | drift [--runs N] | handback [--only APP] [--runs N] [--late N] [--json PATH] | ledger_postgres [SIZE ...] | dashboard [ENTRIES] [--keep FOLDER] | screens | moved [--reuse] | ledger [--sizes N,N] [--engines sqlite,json] [--before SRC] | ledger_s3 [--entries-per-trajectory N] [--big N] | atspi_query [REPEATS] (prints, writes no section) | label_ocr build|measure [--write] | rerender [--runs N] [--detail-hash off] [--pixels-only] [--minutes M]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
    accuracy | speed | savings | storage | fuzz | faults | heal | replay_latency | drift | handback | ledger_postgres | dashboard | screens | moved | ledger | ledger_s3 | atspi_query | label_ocr | rerender) ;;
    *)
        echo "usage: bash scripts/bench.sh accuracy [--reuse] | speed | savings | storage | fuzz [PARSE REPLAY SIGNED] | faults | heal | replay_latency [RUNS] | drift [--runs N] | handback [--only APP] [--runs N] [--late N] [--json PATH] | ledger_postgres [SIZE ...] | dashboard [ENTRIES] [--keep FOLDER] | screens | moved [--reuse] | ledger [--sizes N,N] [--engines sqlite,json] [--before SRC] | ledger_s3 [--entries-per-trajectory N] [--big N] | atspi_query [REPEATS] | label_ocr build|measure [--write] | rerender [--runs N] [--detail-hash off] [--pixels-only] [--minutes M]" >&2
        exit 2
        ;;
esac
export ASKCACHE_TEST_PACKAGES=1 ASKCACHE_BENCH_PACKAGES=1
source scripts/_system.sh
source scripts/_venv.sh
.venv/bin/python -m pip install --quiet -e ".[dev,bench]"
if [ "$1" = label_ocr ]; then
    # the engines it measures against the chosen one (RapidOCR's models ship in its package)
    .venv/bin/python -m pip install --quiet pytesseract rapidocr-onnxruntime
fi
name=$1
shift
exec .venv/bin/python "bench/$name.py" "$@"
