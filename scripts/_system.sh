# Sourced by the other scripts: install the Debian packages the desktop side needs, if missing.
#   xvfb: a virtual X display (the demo starts one when $DISPLAY is unset; the tests always do)
#   fonts-dejavu-core: the font the Tk form draws with
#   python3-tk, python3-venv: tkinter (the Tk form) and venv for Debian's own python3, when
#     the Python in use lacks them
# and, for the tests (ASKCACHE_TEST_PACKAGES=1):
#   x11-apps: xcalc, a real application the tests drive
#   x11-utils: xwininfo, which finds xcalc's buttons (the fault-injection tests), and
#     xmessage, a real dialog the accuracy benchmark measures
#   chromium: headless Chromium, which renders pages for parity checks
#   postgresql: a real PostgreSQL server the run-ledger tests start in a temporary folder
#     (askcache.testing.postgres_server; as root, it runs as nobody)
#   util-linux: unshare, which runs two lock holders in two PID namespaces sharing a host
#     name (tests/s3/test_lock_namespaces.py; essential on Debian, so normally present)
# and, for the accuracy benchmark (ASKCACHE_BENCH_PACKAGES=1), besides the tests' packages:
#   python3-doc, valgrind, nodejs, debian-reference-en: the HTML manuals those pages are
#     (Sphinx, DocBook, Node's own generator, DocBook with its own stylesheet)
#   mousepad, xterm, vim-tiny: applications no test was built around (the drift benchmark)
#   featherpad, yad, speedcrunch, libffi-dev, at-spi2-core, dbus: the re-render benchmark
#     (bench/rerender.py): a Qt 5 editor, a GTK 3 form dialog and a Qt 5 calculator no test
#     used before, libffi's HTML manual (a page no test used before), the AT-SPI bus and
#     registry and dbus-daemon for the session bus it asks them on
set -euo pipefail
missing=()
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
if [ "${ASKCACHE_TEST_PACKAGES:-0}" = 1 ]; then
    command -v xcalc >/dev/null 2>&1 || missing+=(x11-apps)
    command -v xwininfo >/dev/null 2>&1 || missing+=(x11-utils)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
    command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
fi
if [ "${ASKCACHE_BENCH_PACKAGES:-0}" = 1 ]; then
    [ -e /usr/share/doc/python3/html/library/json.html ] || missing+=(python3-doc)
    [ -e /usr/share/doc/valgrind/html/manual-intro.html ] || missing+=(valgrind)
    [ -e /usr/share/doc/nodejs/api/path.html ] || missing+=(nodejs)
    [ -e /usr/share/debian-reference/index.en.html ] || missing+=(debian-reference-en)
    command -v mousepad >/dev/null 2>&1 || missing+=(mousepad)
    command -v xterm >/dev/null 2>&1 || missing+=(xterm)
    command -v vi >/dev/null 2>&1 || missing+=(vim-tiny)
    command -v featherpad >/dev/null 2>&1 || missing+=(featherpad)
    command -v yad >/dev/null 2>&1 || missing+=(yad)
    command -v speedcrunch >/dev/null 2>&1 || missing+=(speedcrunch)
    [ -e /usr/share/doc/libffi8/html/Using-libffi.html ] || missing+=(libffi-dev)
    [ -x /usr/libexec/at-spi-bus-launcher ] || missing+=(at-spi2-core)
    command -v dbus-daemon >/dev/null 2>&1 || missing+=(dbus)
fi
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
"${PYTHON:-python3}" -c 'import tkinter' >/dev/null 2>&1 || missing+=(python3-tk)
"${PYTHON:-python3}" -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}" >&2
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    elif command -v sudo >/dev/null 2>&1; then
        sudo apt-get update -qq
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "askcache: please install these Debian packages: ${missing[*]}" >&2
        exit 1
    fi
fi
