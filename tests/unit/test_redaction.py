"""The one redaction function and its writers: placeholders kept whole, secrets redacted in
the forms writers produce (as is, repr, JSON, HTML, URL-encoded, shell-quoted), errors, loggers, the command's output."""

from __future__ import annotations

import ast
import html
import json
import logging
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askcache.cachefile.format import dump_cache_file
from askcache.cli.commands.common import emit_json, redacted_output
from askcache.foundation.errors import AskCacheError
from askcache.foundation.parameters import parameterize, replace_values, secret_fragment
from askcache.foundation.redaction import (
    _anchors,
    mask_values,
    redact,
    register_secrets,
    register_typed_text,
    rendered_forms,
)
from askcache.storage.cache_storage import LocalCacheStorage
from askcache.storage.ledger import RunRecord, open_ledger
from tests.helpers import record_form


def test_replace_values_keeps_placeholders_and_marks_whole_and_takes_the_longest_first() -> None:
    assert replace_values("use {{user}} and [secret:pw]", {"use": "X", "e": "Y"}) == (
        "X {{user}} and [secret:pw]"
    )
    # the longer secret is replaced whole even where a shorter value starts earlier
    assert parameterize("xhunter2", {"x": "xh"}, {"pw": "hunter2"}) == "x{{secret:pw}}"
    assert replace_values("", {"a": "b"}) == ""


def test_secret_fragment_finds_a_secret_typed_in_pieces() -> None:
    secrets = {"pw": "hunter2-Secret!"}
    assert secret_fragment("hunter2-", secrets) == "pw"
    assert secret_fragment("Secret!", secrets) == "pw"
    assert secret_fragment("hun", secrets) is None  # shorter than a fragment
    assert secret_fragment("Ada Lovelace", secrets) is None


def test_redact_covers_the_forms_writers_produce() -> None:
    value = "p<a>ss'w\"rd&1-redaction"
    register_secrets({"quoted": value})
    assert value not in redact(f"typed {value}")
    assert html.escape(value) not in redact(html.escape(f"typed {value}"))
    assert json.dumps(value) not in redact(json.dumps({"text": value}))
    assert redact(f"typed {value}") == "typed [secret:quoted]"


def test_an_error_message_never_shows_a_registered_secret() -> None:
    register_secrets({"errpw": "error-Secret-42"})
    error = AskCacheError("the field rejected 'error-Secret-42'")
    assert str(error) == "the field rejected '[secret:errpw]'"
    assert "error-Secret-42" not in repr(error)


def test_typed_text_is_registered_by_mode_or_as_a_piece_of_a_secret() -> None:
    register_secrets({"piecepw": "Piece-Secret-77"})
    assert register_typed_text("plain words 1", "all")
    assert "plain words 1" not in redact("typed plain words 1")
    assert not register_typed_text("plain words 2", "off")
    assert not register_typed_text("plain words 3", "password_like")
    assert register_typed_text("Piece-Sec", "off")  # part of a known secret
    assert redact("Piece-Sec") == "[secret:typed]"
    assert not register_typed_text(None, "all")


def test_sdk_and_askcache_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    register_secrets({"logpw": "log-Secret-99"})
    for name in ("anthropic._base_client", "askcache.heal"):
        logging.getLogger(name).debug("Request options: %s", {"text": "log-Secret-99"})
    assert "log-Secret-99" not in caplog.text
    assert caplog.text.count("[secret:logpw]") == 2


def test_ledger_entries_and_command_output_are_redacted(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    register_secrets({"outpw": "out-Secret-55"})
    storage = LocalCacheStorage(tmp_path)  # type: ignore[arg-type]
    ledger = open_ledger(storage)
    record = RunRecord(trajectory="t.json", status="handed_back", reason="typed 'out-Secret-55'")
    assert "out-Secret-55" not in record.model_dump_json()  # however the entry is written
    ledger.append(record)
    stored = b"".join(p.read_bytes() for p in Path(str(tmp_path), ".ledger").iterdir())
    assert b"[secret:outpw]" in stored  # the database's files hold the entry...
    assert b"out-Secret-55" not in stored  # ...never the secret
    assert ledger.records("t.json")[0].reason == "typed '[secret:outpw]'"
    with redacted_output():
        print("text out-Secret-55")
        print("err out-Secret-55", file=sys.stderr)
        emit_json({"reason": "out-Secret-55"})
    out, err = capsys.readouterr()
    assert "out-Secret-55" not in out + err
    assert out.count("[secret:outpw]") == 2


def test_a_file_is_written_with_typed_secrets_left_as_the_file_says(
    storage: LocalCacheStorage,
) -> None:
    # typed text made secret for the logs is never replaced by a mark in a cache file: a
    # replay would type the mark (recording and healing store it as a placeholder instead)
    cache_file = record_form(storage)
    register_typed_text("Ada Lovelace-kept", "all")
    register_secrets({"filepw": "file-Secret-31"})
    step = cache_file.trajectory[2]
    text = "Ada Lovelace-kept file-Secret-31"
    cache_file.trajectory[2] = step.model_copy(update={"input": {**step.input, "text": text}})
    written = dump_cache_file(cache_file).decode()
    assert "Ada Lovelace-kept [secret:filepw]" in written
    assert redact(text) == "[secret:typed] [secret:filepw]"


def test_inline_images_of_a_page_are_kept_whole() -> None:
    register_secrets({"pin": "Qk9"})  # a short secret whose characters base64 can hold
    page = '<p>pin Qk9</p><img src="data:image/png;base64,iVBORQk9xyz=">'
    assert redact(page) == '<p>pin [secret:pin]</p><img src="data:image/png;base64,iVBORQk9xyz=">'


_WRITERS: dict[str, tuple[Callable[[str], str], Callable[[str], str]]] = {
    # a writer's rendering of a text, and how to read the text back from it
    "as is": (lambda text: text, lambda out: out),
    "repr": (repr, ast.literal_eval),
    "repr in a dict": (
        lambda text: repr({"text": text}),
        lambda out: ast.literal_eval(out)["text"],
    ),
    "ascii": (ascii, ast.literal_eval),
    "repr of UTF-8": (
        lambda text: repr(text.encode()),
        lambda out: ast.literal_eval(out).decode(),
    ),
    "JSON": (json.dumps, json.loads),
    "JSON, not ASCII": (lambda text: json.dumps(text, ensure_ascii=False), json.loads),
    "HTML": (html.escape, html.unescape),
    "HTML, text only": (lambda text: html.escape(text, quote=False), html.unescape),
    "URL-encoded": (lambda text: quote(text, safe=""), unquote),
    "URL form": (lambda text: urlencode({"text": text}), lambda out: parse_qs(out)["text"][0]),
    "shell-quoted": (lambda text: shlex.join(["askcache", text]), lambda out: shlex.split(out)[1]),
    "repr in JSON": (
        lambda text: json.dumps({"reason": repr(text)}),
        lambda out: ast.literal_eval(json.loads(out)["reason"]),
    ),
    "repr on a page": (
        lambda text: html.escape(repr(text)),
        lambda out: ast.literal_eval(html.unescape(out)),
    ),
}

_HARD = st.sampled_from([*"'\"\\%&<>;$` +=/ab", "é", "ß", "密", "😀", "\n", "\t", "\x00", "\u200b"])
"""Characters writers escape (quotes, backslashes, %, &, <), and non-ASCII ones."""


@settings(max_examples=300, deadline=None)
@given(secret=st.text(_HARD, min_size=3, max_size=12), writer=st.sampled_from(sorted(_WRITERS)))
def test_every_rendered_form_of_a_secret_is_masked(secret: str, writer: str) -> None:
    render, read = _WRITERS[writer]
    # the other quote around it too, so that repr escapes the one the secret holds
    other = next((q for q in ("'", '"') if q not in secret), "")
    text = f"QQ{secret}ZZ{other}"
    masked = mask_values(render(text), [secret], "[secret:pw]")
    assert read(masked) == f"QQ[secret:pw]ZZ{other}"


def test_a_secret_with_both_quotes_is_masked_as_repr_writes_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    value = "Tr0ub4dor&'3\"horse-unit"
    register_secrets({"both": value})
    logging.getLogger("anthropic._base_client").debug("Request options: %s", {"text": value})
    logging.getLogger("askcache.replay").warning("could not type %r", value)
    error = AskCacheError(f"the field rejected {value!r}")
    for text in (caplog.text, str(error), repr(error)):
        assert "Tr0ub4dor" not in text
        assert "[secret:both]" in text


@settings(max_examples=300, deadline=None)
@given(secret=st.text(st.one_of(_HARD, st.sampled_from("xyzXYZ059")), min_size=1, max_size=12))
def test_every_rendered_form_holds_the_runs_redact_looks_for_first(secret: str) -> None:
    # redact skips the forms of a secret whose runs of letters and digits are not all in the
    # text: that is exact only if every form holds every run as it is
    runs = _anchors(secret)
    assert all(run in form for form in rendered_forms(secret) for run in runs)
