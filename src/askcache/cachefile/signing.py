"""Signed cache files: an HMAC over a file's content, with a key from the environment.

Signing is opt-in and recommended for caches kept in shared storage. Set::

    ASKCACHE_SIGNING_KEY="<key_id>:<secret>"     # e.g. "team-2026q4:3f9c...": signs and verifies
    ASKCACHE_SIGNING_VERIFY_KEYS="<id>:<secret>,..."  # optional: older keys, verify only

With a signing key, recording signs the file it writes, and replay refuses a file whose
signature is missing, made with an unknown key, or does not match its content
(:class:`~askcache.foundation.errors.CacheSignatureError` says which). The signature covers
:func:`~askcache.cachefile.format.signed_content`: everything except the replay bookkeeping, which
every replay updates. The key id is stored in the file; the key never is.

Every reader that acts on a file's content checks it the same way, with
:func:`check_signature`: the replay (before its first action), ``askcache rollback``,
``accept`` and ``diff`` (the version they read), ``tune`` and a heal (the file they change
and sign again). :func:`parse_verified` is loading's parse and check for bytes read
from anywhere (a version, a proposal).

Key rotation: make a new key the signing key and move the old one to
``ASKCACHE_SIGNING_VERIFY_KEYS``; files signed with either verify. Re-sign the old files
(``askcache sign NAME``) and drop the old key when none is left.

Every signature is made by :func:`sign_cache_file`, and it never blesses content whose
present signature fails: the file the content comes from must verify with the keys set, or
be unsigned (a first signature). A change made where no signing key is set is unsigned, and
:meth:`~askcache.storage.versions.TrajectoryVersions.commit` never lets it replace a signed
trajectory (:func:`carries_signature`): a heal or a recording is kept as a proposal instead.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from askcache.cachefile.format import CacheFile, FileSignature, dump_cache_file, signed_content
from askcache.cachefile.parse import parse_cache_file
from askcache.foundation.errors import CacheSignatureError, InvalidSettingsError

__all__ = [
    "SIGNING_KEY_ENV",
    "VERIFY_KEYS_ENV",
    "SigningKeys",
    "carries_signature",
    "check_signature",
    "parse_verified",
    "sign_cache_file",
    "signature_for",
    "verify_cache_file",
]

SIGNING_KEY_ENV = "ASKCACHE_SIGNING_KEY"
"""The environment variable holding ``<key_id>:<secret>``, the key that signs."""
VERIFY_KEYS_ENV = "ASKCACHE_SIGNING_VERIFY_KEYS"
"""The environment variable holding comma-separated ``<key_id>:<secret>`` keys that only
verify (older keys, during a rotation)."""

MIN_SECRET_CHARS = 16
"""Shortest accepted secret."""

_KEY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class SigningKeys:
    """The signing key (if any) and the keys accepted when verifying, by key id."""

    signing_id: str | None = None
    """Id of the key that signs new files."""
    keys: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    """Key id -> secret, every key accepted when verifying (the signing key included)."""

    @property
    def can_sign(self) -> bool:
        """True when a signing key is set."""
        return self.signing_id is not None

    @property
    def configured(self) -> bool:
        """True when any key is set."""
        return bool(self.keys)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SigningKeys:
        """Keys from ``ASKCACHE_SIGNING_KEY`` and ``ASKCACHE_SIGNING_VERIFY_KEYS``.

        Raises:
            InvalidSettingsError: a variable is malformed (never quoting the secret).
        """
        env = os.environ if environ is None else environ
        keys: dict[str, bytes] = {}
        signing_id = None
        signing = env.get(SIGNING_KEY_ENV, "").strip()
        if signing:
            signing_id, secret = _parse(signing, SIGNING_KEY_ENV)
            keys[signing_id] = secret
        for item in env.get(VERIFY_KEYS_ENV, "").split(","):
            if item.strip():
                key_id, secret = _parse(item.strip(), VERIFY_KEYS_ENV)
                keys.setdefault(key_id, secret)
        return cls(signing_id, keys)


def _parse(text: str, variable: str) -> tuple[str, bytes]:
    key_id, colon, secret = text.partition(":")
    if not colon or not _KEY_ID.match(key_id):
        raise InvalidSettingsError(
            variable,
            [(variable, "expected '<key_id>:<secret>', key_id of letters, digits, '_.-'")],
        )
    if len(secret) < MIN_SECRET_CHARS:
        raise InvalidSettingsError(
            variable,
            [(variable, f"the secret of key {key_id!r} is shorter than {MIN_SECRET_CHARS}")],
        )
    return key_id, secret.encode("utf-8")


def signature_for(cache_file: CacheFile, key_id: str, secret: bytes) -> FileSignature:
    """The signature of ``cache_file``'s signed content with one key, as it is written
    (registered secrets redacted: :func:`~askcache.cachefile.format.dump_cache_file`)."""
    content = signed_content(json.loads(dump_cache_file(cache_file)))
    value = hmac.new(secret, content, hashlib.sha256).hexdigest()
    return FileSignature(key_id=key_id, value=value)


def sign_cache_file(
    cache_file: CacheFile,
    keys: SigningKeys | None = None,
    *,
    base: CacheFile | bytes | None = None,
    name: str | None = None,
) -> bool:
    """Sign ``cache_file`` in place with the signing key; False when there is none (then
    nothing is checked or changed).

    Every signature askcache writes is made here, and a signature is never put on content
    whose present signature fails: the file the signed content comes from must verify with
    the keys set, or carry no signature at all. That file is ``base`` when ``cache_file``
    was made from another version (a heal, a learned screen profile, ``tune``: the bytes or
    file they read), otherwise ``cache_file`` itself (``askcache sign``). A file signed for
    the first time (a recording, ``askcache sign`` of an unsigned file) is signed as it is;
    no option signs a file whose signature does not match its content, or was made with a
    key that is neither the signing key nor a verify key (it cannot be verified).

    Args:
        cache_file: The file to sign.
        keys: The keys (default: :meth:`SigningKeys.from_env`).
        base: The version ``cache_file`` was made from, when it was.
        name: The file's name or path, for the error.

    Raises:
        CacheSignatureError: the file the content comes from is signed and does not verify;
            the message (one line) names it and says what to do.
    """
    keys = keys or SigningKeys.from_env()
    if keys.signing_id is None:
        return False
    label = name or "the file"
    source = cache_file if base is None else base
    if isinstance(source, bytes):
        source = parse_cache_file(source, label)
    _refuse_unverified(source, label, keys)
    cache_file.signature = signature_for(cache_file, keys.signing_id, keys.keys[keys.signing_id])
    return True


def _refuse_unverified(source: CacheFile, name: str, keys: SigningKeys) -> None:
    """Refuse to sign content made from ``source`` when ``source`` is signed and does not
    verify (:func:`sign_cache_file`)."""
    signature = source.signature
    if signature is None:
        return
    todo = (
        "re-record it, or roll back to a version that verifies (askcache rollback NAME "
        "[VERSION]); no option signs it"
    )
    secret = keys.keys.get(signature.key_id)
    if secret is None:
        raise CacheSignatureError(
            name,
            f"not signed: it is signed with key {signature.key_id!r}, which is neither "
            f"{SIGNING_KEY_ENV} nor among {VERIFY_KEYS_ENV}, so its content cannot be "
            f"verified; add that key to {VERIFY_KEYS_ENV} if it still verifies, or {todo}",
            field="signature.key_id",
        )
    expected = signature_for(source, signature.key_id, secret)
    if not hmac.compare_digest(expected.value, signature.value):
        raise CacheSignatureError(
            name,
            f"not signed: its signature (key {signature.key_id!r}) does not match its "
            f"content, it was changed after it was signed; {todo}",
            field="signature.value",
        )


def carries_signature(raw: bytes) -> bool:
    """Whether the stored cache file ``raw`` carries a signature (whether or not it
    verifies); False for bytes that are no cache file."""
    try:
        data = json.loads(raw)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("signature") is not None


def verify_cache_file(cache_file: CacheFile, name: str, keys: SigningKeys | None = None) -> None:
    """Check ``cache_file``'s signature.

    Raises:
        CacheSignatureError: no key is configured, the file is unsigned, its key id is not
            a configured key, or the signature does not match the content.
    """
    keys = keys or SigningKeys.from_env()
    if not keys.configured:
        raise CacheSignatureError(
            name,
            f"a signature is required but no key is set ({SIGNING_KEY_ENV} is empty)",
            field="signature",
        )
    signature = cache_file.signature
    if signature is None:
        raise CacheSignatureError(
            name,
            "the file is not signed; sign it with 'askcache sign' where the key is, or "
            "replay with require_signature=False",
            field="signature",
        )
    secret = keys.keys.get(signature.key_id)
    if secret is None:
        raise CacheSignatureError(
            name,
            f"signed with key {signature.key_id!r}, which is not among the configured keys "
            f"({', '.join(sorted(keys.keys))}); see key rotation in docs/cache-format.md",
            field="signature.key_id",
        )
    expected = signature_for(cache_file, signature.key_id, secret)
    if not hmac.compare_digest(expected.value, signature.value):
        raise CacheSignatureError(
            name,
            f"the signature (key {signature.key_id!r}) does not match the content: the file "
            "was changed after it was signed",
            field="signature.value",
        )


def check_signature(
    cache_file: CacheFile,
    name: str,
    *,
    required: bool | None = None,
    keys: SigningKeys | None = None,
    resign: bool = False,
) -> None:
    """The signature check of every reader: when ``required`` (``None``: whenever a key is
    set, as ``CacheExecutionSettings.require_signature`` defaults), the file must verify
    (:func:`verify_cache_file`). ``resign``: the caller signs a changed file derived from
    this one (a heal, ``tune``); then the file must verify whenever a signing key is set,
    whatever ``required`` says, so that a signature is never put on content nobody checked;
    and whenever the file is signed, even where no key is set (its change, unsigned, may
    only be a proposal, which must not be made from content nobody could check either).

    Raises:
        CacheSignatureError: a required signature is missing, unknown or wrong.
        InvalidSettingsError: the keys in the environment are malformed.
    """
    keys = keys or SigningKeys.from_env()
    if resign and (keys.can_sign or cache_file.signature is not None):
        required = True
    elif required is None:
        required = keys.configured
    if required:
        verify_cache_file(cache_file, name, keys)


def parse_verified(
    raw: bytes,
    name: str,
    *,
    required: bool | None = None,
    keys: SigningKeys | None = None,
    resign: bool = False,
) -> CacheFile:
    """``raw`` parsed and checked as loading does
    (:func:`~askcache.cachefile.parse.parse_cache_file`, then :func:`check_signature` with
    ``required``, ``keys`` and ``resign``); ``name`` (the file's path or URL) is in every error.

    Raises:
        CacheFileCorruptError, UnsupportedCacheVersionError, CacheSignatureError
    """
    cache_file = parse_cache_file(raw, name)
    check_signature(cache_file, name, required=required, keys=keys, resign=resign)
    return cache_file
