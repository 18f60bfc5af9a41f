"""``askcache sync``: send the recordings, heals and run-ledger entries kept in the outbox.

A run whose storage could not be written (the server down, the disk full, a read-only
folder) keeps its recording, heal and ledger entries in the local outbox
(:mod:`askcache.storage.outbox`); the next run of the same storage sends them, and so does
this command. ``--list`` shows them without sending. Exit code 0 when nothing is left to
send, 3 when some writes are still kept (the storage still cannot be written: the error says
why).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from askcache.agent.outbox_sync import sync_outbox
from askcache.cli.commands.common import (
    EXIT_ERROR,
    EXIT_OK,
    emit_json,
    open_run_ledger,
    open_storage,
)
from askcache.storage.ledger import SegmentLedger
from askcache.storage.outbox import KeptWrite, Outbox
from askcache.storage.remote import is_url

__all__ = ["add_sync_command", "run_sync"]


def _item(kept: KeptWrite) -> dict[str, str]:
    item = kept.item
    return {
        "summary": item.summary,
        "kind": item.kind,
        "kept_at": str(kept.path),
        "since": item.created_at.isoformat(),
        "reason": item.reason,
    }


def run_sync(args: argparse.Namespace) -> int:
    """Send (or with ``--list`` show) what the outbox keeps for ``--cache-dir``."""
    storage = open_storage(args.cache_dir)
    outbox = Outbox(args.outbox_dir, storage.destination())
    if args.list:
        pending = outbox.pending()
        if args.json:
            emit_json({"destination": outbox.destination, "kept": [_item(k) for k in pending]})
        else:
            print(f"{len(pending)} writes kept locally for {outbox.destination} ({outbox.folder})")
            for kept in pending:
                print(f"  {kept.item.created_at:%Y-%m-%d %H:%M:%S} {kept.summary}")
        return EXIT_OK
    with open_run_ledger(args, storage) as ledger:
        report = sync_outbox(storage, outbox, ledger)
        if isinstance(ledger, SegmentLedger) and not report.left:
            compacted = ledger.compact_all()
            if compacted and not args.json:
                print(f"compacted {compacted} run-ledger entries into summaries")
    if args.json:
        emit_json(
            {
                "destination": outbox.destination,
                "sent": [_item(k) for k in report.sent],
                "heals": [{"event": heal.event, "version": heal.version} for heal in report.heals],
                "recordings": [
                    {"name": stored.name, "stored_as": stored.how, "where": stored.where}
                    for stored in report.recordings
                ],
                "left": [_item(k) for k in report.left],
                "error": report.error,
            }
        )
    else:
        for kept in report.sent:
            print(f"sent: {kept.summary}")
        for heal in report.heals:
            print(f"  {heal.event}: {heal.version}")
        for stored in report.recordings:
            print(f"  recorded ({stored.how}): {stored.where}")
        print(f"{len(report.sent)} sent to {outbox.destination}, {len(report.left)} still kept")
    if report.left:
        why = f": {report.error}" if report.error else ""
        print(
            f"askcache: error: {len(report.left)} writes still kept in {outbox.folder}{why}",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return EXIT_OK


def _folder(text: str) -> Path:
    if is_url(text) or not text.strip():
        raise argparse.ArgumentTypeError(f"must be a local folder, got {text!r}")
    return Path(text)


def add_sync_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``sync``."""
    parser = commands.add_parser(
        "sync",
        parents=parents,
        help="send the recordings, heals and ledger entries kept locally while storage was "
        "unreachable",
        description="Send what runs kept in the local outbox because the cache storage could "
        "not be written (server down, disk full, read-only folder): recordings, heals and "
        "run-ledger entries, oldest first. Sending again is harmless. The next run of the same "
        "storage sends them too.",
    )
    parser.add_argument(
        "--outbox-dir",
        type=_folder,
        default=None,
        metavar="DIR",
        help="the outbox folder (default: $ASKCACHE_OUTBOX_DIR, else "
        "$XDG_STATE_HOME/askcache/outbox, else ~/.local/state/askcache/outbox)",
    )
    parser.add_argument("--list", action="store_true", help="show what is kept, send nothing")
    parser.set_defaults(run=run_sync)
