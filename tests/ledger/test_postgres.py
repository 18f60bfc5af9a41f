"""The PostgreSQL run ledger against a real server: concurrent first use, a stopped server, a
slow one, the password kept out of every message, the schema version.

What every engine does (append, summaries, streak, retention) is in test_conformance.py.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from askcache.agent.outbox_sync import RunWriter, sync_outbox
from askcache.cli.app import main
from askcache.foundation.errors import LedgerUnavailableError, LedgerUrlError
from askcache.foundation.settings import CachingSettings
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunRecord, open_ledger
from askcache.storage.ledger.postgres import PostgresLedger, PostgresTimeouts
from askcache.storage.ledger.summary import TrajectorySummary, fold_all
from askcache.storage.outbox import Outbox
from askcache.testing.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[2]


def _replay(index: int, trajectory: str = "login.json") -> RunRecord:
    return RunRecord(trajectory=trajectory, status="completed", steps_run=index)


def _count(url: str, table: str) -> int:
    with psycopg.connect(url) as connection:
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
        row = connection.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def test_eight_processes_starting_at_once_create_the_tables_once_and_lose_no_entry(
    postgres_url: str,
) -> None:
    writers, entries = 8, 60
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.ledger.pg_writer", postgres_url, str(i), str(entries)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]
    for process in processes:  # every writer is waiting on its stdin: start them together
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        assert out.strip() == str(entries)

    with PostgresLedger(postgres_url) as ledger:
        kept = ledger.records()
        summaries = ledger.summaries()
    assert len(kept) == writers * entries
    assert sorted((r.pid, r.steps_run) for r in kept) == sorted(
        (i, run) for i in range(writers) for run in range(entries)
    )
    assert [s.trajectory for s in summaries] == ["shared-0.json", "shared-1.json"]
    for summary in summaries:
        mine = [r for r in kept if r.trajectory == summary.trajectory]
        folded = fold_all(TrajectorySummary(trajectory=summary.trajectory), mine)
        counts = ("entries", "runs", "completed", "handed_back", "saved_tokens")
        assert {c: getattr(summary, c) for c in counts} == {c: getattr(folded, c) for c in counts}
    assert sum(s.entries for s in summaries) == writers * entries


def test_entries_written_while_the_server_is_stopped_wait_in_the_outbox_and_none_is_lost(
    postgres_server: PostgresServer,
    postgres_url: str,
    storage: LocalCacheStorage,
    tmp_path: Path,
) -> None:
    outbox = Outbox(tmp_path / "outbox", storage.destination())
    timeouts = PostgresTimeouts(connect=2, retry_after=3600)
    with PostgresLedger(postgres_url, timeouts=timeouts) as ledger:
        writer = RunWriter(storage, outbox, ledger)
        writer.append(_replay(0))
        postgres_server.stop()
        try:
            for index in range(1, 6):
                writer.append(_replay(index))
        finally:
            postgres_server.start()
        assert len(writer.entries) == 1
        assert len(writer.kept) == 5
        assert writer.not_written == []
        # the first failure made the ledger fail at once afterwards, without waiting again
        assert "not tried again" in writer.kept[-1].item.reason
        assert "not tried again" not in writer.kept[0].item.reason
        with pytest.raises(LedgerUnavailableError, match="not tried again"):
            ledger.summary("login.json")  # the server is back, but the ledger waits its time

    # `askcache sync` (or the next run) opens the ledger again and sends what was kept
    with PostgresLedger(postgres_url) as ledger:
        report = sync_outbox(storage, outbox, ledger)
        assert len(report.sent) == 5
        assert report.error is None
        assert outbox.pending() == []
        sync_outbox(storage, outbox, ledger)  # nothing left, nothing sent twice
        assert sorted(r.steps_run for r in ledger.records("login.json")) == list(range(6))
        summary = ledger.summary("login.json")
    assert summary is not None
    assert (summary.entries, summary.completed) == (6, 6)


def test_a_ledger_that_lost_its_server_works_again_once_the_server_is_back(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    timeouts = PostgresTimeouts(connect=2, retry_after=0)
    with PostgresLedger(postgres_url, timeouts=timeouts) as ledger:
        ledger.append(_replay(0))
        postgres_server.stop()
        try:
            with pytest.raises(LedgerUnavailableError, match="could not write"):
                ledger.append(_replay(1))
        finally:
            postgres_server.start()
        ledger.append(_replay(2))  # the pool's broken connections are replaced
        assert [r.steps_run for r in ledger.records()] == [0, 2]


def test_a_server_too_slow_to_answer_fails_the_append_and_the_entry_waits_in_the_outbox(
    postgres_url: str, storage: LocalCacheStorage, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path / "outbox", storage.destination())
    timeouts = PostgresTimeouts(statement=1, retry_after=0)
    with PostgresLedger(postgres_url, timeouts=timeouts) as ledger:
        ledger.append(_replay(0))  # the tables exist
        writer = RunWriter(storage, outbox, ledger)
        with psycopg.connect(postgres_url) as blocker:  # holds every summary until it ends
            blocker.execute("LOCK TABLE askcache_ledger_summaries IN ACCESS EXCLUSIVE MODE")
            writer.append(_replay(1))
            assert len(writer.kept) == 1
            assert "timeout" in writer.kept[0].item.reason
        assert [r.steps_run for r in ledger.records()] == [0]  # nothing half-written
        report = sync_outbox(storage, outbox, ledger)
        assert len(report.sent) == 1
        summary = ledger.summary("login.json")
    assert summary is not None
    assert summary.entries == 2


def test_the_password_is_never_shown_in_errors_or_logs(
    postgres_server: PostgresServer,
    postgres_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    password = postgres_server.password
    caplog.set_level(logging.DEBUG)
    wrong = postgres_url.replace(password, "Wrong-Pa55word")
    errors: list[str] = []
    with PostgresLedger(wrong, timeouts=PostgresTimeouts(connect=2)) as ledger:
        assert "Wrong-Pa55word" not in ledger.url
        with pytest.raises(LedgerUnavailableError) as refused:
            ledger.append(_replay(0))
        errors += [str(refused.value), repr(refused.value), refused.value.url]
    with PostgresLedger(postgres_url, timeouts=PostgresTimeouts(connect=2)) as ledger:
        ledger.append(_replay(0))
        postgres_server.stop()
        try:
            with pytest.raises(LedgerUnavailableError) as down:
                ledger.append(_replay(1))
        finally:
            postgres_server.start()
        errors += [str(down.value), repr(down.value), ledger.url]
    assert "authentication failed" in errors[0]
    for text in [*errors, caplog.text]:
        assert password not in text
        assert "Wrong-Pa55word" not in text
    assert ":***@127.0.0.1" in errors[0]


def test_tables_of_a_newer_askcache_are_refused_with_the_reason(postgres_url: str) -> None:
    with PostgresLedger(postgres_url) as ledger:
        ledger.append(_replay(0))
    with psycopg.connect(postgres_url) as connection:
        connection.execute("UPDATE askcache_ledger_meta SET value = '99'")
    with (
        PostgresLedger(postgres_url) as ledger,
        pytest.raises(LedgerUnavailableError, match=r"version 99.*upgrade askcache"),
    ):
        ledger.summary("login.json")


def test_importing_the_engine_without_psycopg_names_the_extra_to_install() -> None:
    code = "import sys; sys.modules['psycopg'] = None; import askcache.storage.ledger.postgres"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "MissingDependencyError" in done.stderr
    assert "pip install 'askcache[postgres]'" in done.stderr


def test_the_tables_are_indexed_for_the_reads(postgres_url: str) -> None:
    with PostgresLedger(postgres_url) as ledger:
        ledger.append(_replay(0))
    with psycopg.connect(postgres_url) as connection:
        indexes = {
            row[0]
            for row in connection.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename LIKE 'askcache_ledger_%'"
            )
        }
    assert any("(trajectory, started_at)" in index for index in indexes)
    assert any("(started_at)" in index for index in indexes)
    assert _count(postgres_url, "askcache_ledger_summaries") == 1


def test_open_ledger_opens_postgres_for_the_setting_the_env_and_the_cli_without_showing_the_password(
    postgres_server: PostgresServer,
    postgres_url: str,
    storage: LocalCacheStorage,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = CachingSettings(cache_dir=storage.directory, ledger=postgres_url)
    with open_ledger(storage, settings.ledger) as ledger:
        assert isinstance(ledger, PostgresLedger)
        ledger.append(RunRecord(trajectory="login.json", status="handed_back", stopped_at_step=2))
    monkeypatch.setenv("ASKCACHE_LEDGER", postgres_url)
    with open_ledger(storage) as ledger:
        assert isinstance(ledger, PostgresLedger)
        assert ledger.consecutive_failures("login.json") == (1, 2)
    monkeypatch.delenv("ASKCACHE_LEDGER")
    storage.directory.mkdir(parents=True, exist_ok=True)
    assert (
        main(["stats", "--cache-dir", str(storage.directory), "--ledger", postgres_url, "--json"])
        == 0
    )
    printed = capsys.readouterr()
    assert json.loads(printed.out)["total"]["handed_back"] == 1
    postgres_server.stop()
    try:
        code = main(["stats", "--cache-dir", str(storage.directory), "--ledger", postgres_url])
    finally:
        postgres_server.start()
    printed = capsys.readouterr()
    assert code != 0
    assert "could not read" in printed.err
    assert postgres_server.password not in printed.out + printed.err


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://fleet:Sec%zzret@db.internal/agents",  # libpq quotes the bad token
        "postgresql://fleet:Secret-99@[db.internal/agents",  # and here the whole URL
        "postgresql://fleet:Secret-99@db.internal/agents?nosuchoption=1",
        "postgresql://fleet:Secret-99@db.internal:fivefour/agents",
    ],
)
def test_a_malformed_url_is_refused_naming_the_setting_and_never_its_password(url: str) -> None:
    with pytest.raises(LedgerUrlError, match=r"^--ledger ") as refused:
        open_ledger(LocalCacheStorage("unused"), url, source="--ledger")
    for text in (str(refused.value), repr(refused.value), refused.value.url):
        assert "Secret-99" not in text
        assert "zzret" not in text
