"""``askcache sign NAME``, ``askcache check-signature NAME``, ``askcache upgrade NAME``:
signed files and explicit format upgrades (docs/cache-format.md)."""

from __future__ import annotations

import argparse

from askcache.cachefile.format import FORMAT_VERSION, dump_cache_file, upgrade_cache_file
from askcache.cachefile.parse import parse_cache_file
from askcache.cachefile.signing import (
    SIGNING_KEY_ENV,
    SigningKeys,
    check_signature,
    sign_cache_file,
    verify_cache_file,
)
from askcache.cli.commands.common import EXIT_OK, emit_json, open_storage, resolve_name
from askcache.foundation.errors import AskCacheError
from askcache.storage.cache_storage import CacheStorage, load_cache_file
from askcache.storage.index import save_indexed
from askcache.storage.versions import TrajectoryVersions

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
        if command == "sign":
            parser.add_argument(
                "--proposal",
                nargs="?",
                const="proposed",
                metavar="FILE",
                help="sign a proposal of NAME instead (default: the newest), e.g. a heal made "
                "where no signing key is set; then askcache accept NAME",
            )


def _sign(args: argparse.Namespace) -> int:
    keys = SigningKeys.from_env()  # a malformed key is the first thing to hear of
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    if not keys.can_sign:
        raise AskCacheError(f"set {SIGNING_KEY_ENV}='<key_id>:<secret>' to sign")
    if args.proposal is not None:
        return _sign_proposal(args, storage, name, keys)
    cache_file = load_cache_file(storage, name)
    # refuses a file whose present signature does not verify (it would launder an edit)
    sign_cache_file(cache_file, keys, name=storage.describe(name))
    save_indexed(storage, name, cache_file)
    assert cache_file.signature is not None
    key = cache_file.signature.key_id
    if args.json:
        emit_json({"name": name, "signed": True, "key_id": key})
    else:
        print(f"signed {name} with key {key!r}")
    return EXIT_OK


def _sign_proposal(
    args: argparse.Namespace, storage: CacheStorage, name: str, keys: SigningKeys
) -> int:
    """Sign a proposal of ``name`` in place (under the name its heal reported), by the same
    rule as a trajectory: one whose present signature does not verify is refused."""
    versions = TrajectoryVersions(storage, name)
    label, data = versions.resolve(args.proposal)
    where = f"{versions.folder}/{label}"
    if where not in versions.proposals():
        raise AskCacheError(f"{name}: {args.proposal!r} is not a proposal (askcache diff {name})")
    cache_file = parse_cache_file(data, storage.describe(where))
    sign_cache_file(cache_file, keys, name=storage.describe(where))
    storage.write(where, dump_cache_file(cache_file))
    assert cache_file.signature is not None
    key = cache_file.signature.key_id
    if args.json:
        emit_json({"name": name, "proposal": label, "signed": True, "key_id": key})
    else:
        print(f"signed proposal {label} of {name} with key {key!r} (askcache accept {name})")
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
    keys = SigningKeys.from_env()
    storage = open_storage(args.cache_dir)
    name = resolve_name(storage, args.name)
    cache_file = load_cache_file(storage, name)
    old = cache_file.version
    signed = cache_file.signature is not None
    if signed and old < FORMAT_VERSION:
        # upgrading removes the signature: it must verify first (a key must be set to check
        # it), or the next 'askcache sign' would bless an edit made after it was signed
        check_signature(cache_file, storage.describe(name), keys=keys, resign=True)
    upgraded = upgrade_cache_file(cache_file)
    if upgraded:
        if signed:  # it verified: signed again where a key signs
            sign_cache_file(cache_file, keys, name=storage.describe(name))
        save_indexed(storage, name, cache_file)
    if args.json:
        emit_json({"name": name, "from": old, "to": cache_file.version, "upgraded": upgraded})
    elif upgraded:
        print(
            f"upgraded {name} from format version {old} to {cache_file.version} "
            + (
                f"(signed again with key {cache_file.signature.key_id!r})"
                if cache_file.signature is not None
                else "(a signature is removed by upgrading: sign it again)"
            )
        )
    else:
        print(f"{name} is already format version {old}")
    return EXIT_OK
