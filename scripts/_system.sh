# Sourced by the other scripts: install the Debian packages the desktop side needs, if missing.
#   xvfb: a virtual X display (the demo starts one when $DISPLAY is unset; the tests always do)
#   fonts-dejavu-core: the font the Tk form draws with
#   python3-tk, python3-venv: tkinter (the Tk form) and venv for Debian's own python3, when
#     the Python in use lacks them
# and, for the tests (ASKCACHE_TEST_PACKAGES=1):
#   x11-apps: xcalc, a real application the tests drive
#   x11-utils: xwininfo, which finds xcalc's buttons (the fault-injection tests), and
#     xmessage, a real dialog the accuracy benchmark measures
#   chromium: headless Chromium, which renders pages for parity checks and loads the fleet
#     page (askcache dashboard) with no network
#   postgresql: a real PostgreSQL server the run-ledger tests start in a temporary folder
#     (askcache.testing.postgres_server; as root, it runs as nobody)
#   util-linux: unshare, which runs two lock holders in two PID namespaces sharing a host
#     name (tests/s3/test_lock_namespaces.py; essential on Debian, so normally present)
#   dbus, at-spi2-core: a private D-Bus session bus (dbus-daemon) with the AT-SPI accessibility
#     bus and its registry (/usr/libexec/at-spi-bus-launcher), which the element tests start
#     (askcache.testing.accessibility)
#   mousepad, featherpad: a GTK 3 and a Qt 5 application whose accessibility trees the element
#     tests read (Qt's bridge is in libqt5gui5, which featherpad brings; mousepad carries the
#     German translation a test starts it in)
#   yad: a GTK 3 form dialog whose unnamed fields the element tests tell apart by their labels
#     (tests/integration/test_atspi_forms_menus.py; also the re-render benchmark's)
#   tesseract-ocr-eng: Tesseract's English model, which the label OCR reads with (the
#     tesserocr wheel of the anchors extra carries the library, not the model)
# and, for the accuracy benchmark (ASKCACHE_BENCH_PACKAGES=1), besides the tests' packages:
#   python3-doc, valgrind, nodejs, debian-reference-en: the HTML manuals those pages are
#     (Sphinx, DocBook, Node's own generator, DocBook with its own stylesheet)
#   xterm, vim-tiny: applications no test was built around (the drift benchmark, which also
#     drives mousepad, a test package)
#   python3-pyatspi: Debian's AT-SPI binding, which bench/atspi_query.py measures beside
#     askcache's own client (Debian's python3 only)
#   tesseract-ocr: Debian's tesseract command, which the label OCR benchmark measures through
#     pytesseract against tesserocr (bench/label_ocr.py)
#   tk, libxslt1-dev, libffi-dev, libexpat1-dev, shared-mime-info: wish (a Tk dialog and Tk's
#     themed widgets) and HTML manuals of other generators, more labels for that benchmark
#   yad, speedcrunch: a GTK 3 form dialog and a Qt 5 calculator no test used before, for the
#     re-render benchmark (bench/rerender.py; it also drives featherpad, the AT-SPI bus and
#     libffi-dev's HTML manual, listed above)
set -euo pipefail
missing=()
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
if [ "${ASKCACHE_TEST_PACKAGES:-0}" = 1 ]; then
    command -v xcalc >/dev/null 2>&1 || missing+=(x11-apps)
    command -v xwininfo >/dev/null 2>&1 || missing+=(x11-utils)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
    command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
    command -v dbus-daemon >/dev/null 2>&1 || missing+=(dbus)
    [ -x /usr/libexec/at-spi-bus-launcher ] || missing+=(at-spi2-core)
    command -v mousepad >/dev/null 2>&1 || missing+=(mousepad)
    command -v featherpad >/dev/null 2>&1 || missing+=(featherpad)
    command -v yad >/dev/null 2>&1 || missing+=(yad)
    compgen -G "/usr/share/tesseract-ocr/*/tessdata/eng.traineddata" >/dev/null || missing+=(tesseract-ocr-eng)
fi
if [ "${ASKCACHE_BENCH_PACKAGES:-0}" = 1 ]; then
    [ -e /usr/share/doc/python3/html/library/json.html ] || missing+=(python3-doc)
    [ -e /usr/share/doc/valgrind/html/manual-intro.html ] || missing+=(valgrind)
    [ -e /usr/share/doc/nodejs/api/path.html ] || missing+=(nodejs)
    [ -e /usr/share/debian-reference/index.en.html ] || missing+=(debian-reference-en)
    command -v mousepad >/dev/null 2>&1 || missing+=(mousepad)
    command -v xterm >/dev/null 2>&1 || missing+=(xterm)
    [ -e /usr/lib/python3/dist-packages/pyatspi/__init__.py ] || missing+=(python3-pyatspi)
    command -v vi >/dev/null 2>&1 || missing+=(vim-tiny)
    command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
    command -v wish >/dev/null 2>&1 || missing+=(tk)
    [ -e /usr/share/doc/libxslt1-dev/html/API.html ] || missing+=(libxslt1-dev)
    [ -e /usr/share/doc/libffi-dev/html/Introduction.html ] || missing+=(libffi-dev)
    [ -e /usr/share/doc/libexpat1-dev/expat.html ] || missing+=(libexpat1-dev)
    [ -e /usr/share/doc/shared-mime-info/shared-mime-info-spec.html ] || missing+=(shared-mime-info)
    command -v yad >/dev/null 2>&1 || missing+=(yad)
    command -v speedcrunch >/dev/null 2>&1 || missing+=(speedcrunch)
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
