"""A PostgreSQL ledger URL's password never shown, whatever libpq's message looks like: through
the real ``askcache`` command (stderr, ``--json``, ``--ledger`` and ``$ASKCACHE_LEDGER``) and
:class:`LedgerUrlError`, with a real server where a connection is made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from askcache.foundation.errors import LedgerUrlError
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import open_ledger
from askcache.testing.postgres_server import PostgresServer

PASSWORD = "correct horse battery"
PIECES = ("correct", "horse", "battery")
"""Every piece of the password: none may be shown, as written or percent-encoded."""


def _shown(text: str) -> list[str]:
    return [piece for piece in PIECES if piece in text]


def _askcache(folder: Path, *args: str, ledger: str | None = None) -> tuple[int, str, str]:
    """The real ``askcache`` command in a process of its own; ``ledger`` given by
    ``$ASKCACHE_LEDGER``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("ASKCACHE_LEDGER", None)
    if ledger is not None:
        env["ASKCACHE_LEDGER"] = ledger
    done = subprocess.run(
        [sys.executable, "-m", "askcache.cli", *args, "--cache-dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    return done.returncode, done.stdout, done.stderr


def _every_way(folder: Path, url: str) -> list[tuple[int, str]]:
    """``askcache stats`` given ``url`` by ``--ledger`` and by ``$ASKCACHE_LEDGER``, in text
    and ``--json``: each exit code and all it printed."""
    runs = [
        _askcache(folder, "stats", "--ledger", url),
        _askcache(folder, "stats", "--ledger", url, "--json"),
        _askcache(folder, "stats", ledger=url),
        _askcache(folder, "stats", "--json", ledger=url),
    ]
    return [(code, out + err) for code, out, err in runs]


def test_a_url_with_a_space_in_its_password_is_refused_without_showing_it(tmp_path: Path) -> None:
    url = f"postgresql://bob:{PASSWORD}@db.internal/askcache"
    with pytest.raises(LedgerUrlError) as refused:
        open_ledger(LocalCacheStorage(tmp_path), url, source="--ledger")
    error = refused.value
    for text in (str(error), repr(error), error.url, error.reason):
        assert _shown(text) == []
    assert error.url == "postgresql://bob:***@db.internal/askcache"
    assert "unexpected spaces" in error.reason  # libpq's reason, the password masked in it

    for code, printed in _every_way(tmp_path, url):
        assert code == 3
        assert "not a PostgreSQL URL" in printed
        assert _shown(printed) == []
    _, out, _ = _askcache(tmp_path, "stats", "--ledger", url, "--json")
    assert "***" in json.loads(out)["error"]["message"]


@pytest.fixture
def bob(postgres_server: PostgresServer, postgres_url: str) -> str:
    """The URL of a database of its own owned by ``bob``, whose password is
    :data:`PASSWORD`, with ``{password}`` in place of the password."""
    name = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute("DROP ROLE IF EXISTS bob")  # one server for the session
        connection.execute(
            sql.SQL("CREATE ROLE bob LOGIN PASSWORD {}").format(sql.Literal(PASSWORD))
        )
        connection.execute(sql.SQL("ALTER DATABASE {} OWNER TO bob").format(sql.Identifier(name)))
    return f"postgresql://bob:{{password}}@127.0.0.1:{postgres_server.port}/{name}"


def test_a_password_is_never_shown_whatever_the_server_or_libpq_says(
    tmp_path: Path, bob: str
) -> None:
    tmp_path.mkdir(exist_ok=True)
    # the password percent-encoded: the ledger works
    right = bob.format(password="correct%20horse%20battery")
    code, out, err = _askcache(tmp_path, "stats", "--ledger", right, "--json")
    assert code == 0, err
    assert json.loads(out)["total"]["runs"] == 0
    assert _shown(out + err) == []

    # a wrong password: the server refuses it, and says so
    wrong = bob.format(password="correct%20horse%20battery%20staple")
    for code, printed in _every_way(tmp_path, wrong):
        assert code != 0
        assert "password authentication failed" in printed
        assert "bob:***@127.0.0.1" in printed
        assert _shown(printed) == []

    # an @ left in the password: libpq cuts it there and quotes the rest as the host name
    cut = bob.format(password="correct-horse@battery-staple")
    for code, printed in _every_way(tmp_path, cut):
        assert code != 0
        assert "could not read" in printed
        assert _shown(printed) == []


@pytest.mark.parametrize("mark", ["#", "?"])
def test_a_password_holding_a_hash_or_question_mark_is_never_shown(
    tmp_path: Path, mark: str
) -> None:
    # libpq reads the password up to the @ (the # or ? is part of it), where a URL parser
    # ends the host part at the # or ?: neither reading may show it
    url = f"postgresql://bob:correct{mark}horse battery@127.0.0.1:1/askcache"
    with pytest.raises(LedgerUrlError) as refused:
        open_ledger(LocalCacheStorage(tmp_path), url, source="--ledger")
    error = refused.value
    for text in (str(error), repr(error), error.url, error.reason):
        assert _shown(text) == []
    for code, printed in _every_way(tmp_path, url):
        assert code != 0
        assert _shown(printed) == [], printed
