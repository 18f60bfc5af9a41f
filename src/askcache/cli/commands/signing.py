"""``askcache sign NAME``, ``askcache check-signature NAME``, ``askcache upgrade NAME``:
signed files and explicit format upgrades (docs/cache-format.md)."""

from __future__ import annotations

import argparse

from askcache.cachefile.format import upgrade_cache_file
from askcache.cachefile.signing import (
    SIGNING_KEY_ENV,
    SigningKeys,
    sign_cache_file,
    verify_cache_file,
)
from askcache.cli.commands.common import EXIT_OK, emit_json, open_storage, resolve_name
from askcache.errors import AskCacheError
from askcache.storage.base import load_cache_file
from askcache.storage.index import save_indexed

__all__ = ["add_signing_commands"]


def add_signing_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """Register ``sign``, ``check-signature`` and ``upgrade``."""
    for command, run, text in (
        ("sign", _sign, f"sign a cache file with ${SIGNING_KEY_ENV}"),
        ("check-signature", _check, "check a cache file's signature against the keys set"),
        ("upgrade", _upgrade, "upgrade a cache file to the current format version"),
    ):
        parser = commands.add_parser(command, parents=parents, help=text, description=text)
        parser.add_argument("name", help="cache file name, with or without .json")
        parser.set_defaults(run=run)


def _sign(args: argparse.Namespace) -> int:
    keys = SigningKeys.from_env()  # a malformed key is the first thing to hear of
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    cache_file = load_cache_file(storage, name)
    if not sign_cache_file(cache_file, keys):
        raise AskCacheError(f"set {SIGNING_KEY_ENV}='<key_id>:<secret>' to sign")
    save_indexed(storage, name, cache_file)
    assert cache_file.signature is not None
    key = cache_file.signature.key_id
    if args.json:
        emit_json({"name": name, "signed": True, "key_id": key})
    else:
        print(f"signed {name} with key {key!r}")
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    keys = SigningKeys.from_env()
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    cache_file = load_cache_file(storage, name)
    verify_cache_file(cache_file, name, keys)
    assert cache_file.signature is not None
    key = cache_file.signature.key_id
    if args.json:
        emit_json({"name": name, "signature_valid": True, "key_id": key})
    else:
        print(f"{name}: signature valid (key {key!r})")
    return EXIT_OK


def _upgrade(args: argparse.Namespace) -> int:
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    cache_file = load_cache_file(storage, name)
    old = cache_file.version
    upgraded = upgrade_cache_file(cache_file)
    if upgraded:
        save_indexed(storage, name, cache_file)
    if args.json:
        emit_json({"name": name, "from": old, "to": cache_file.version, "upgraded": upgraded})
    elif upgraded:
        print(
            f"upgraded {name} from format version {old} to {cache_file.version} "
            "(a signature is removed by upgrading: sign it again)"
        )
    else:
        print(f"{name} is already format version {old}")
    return EXIT_OK
