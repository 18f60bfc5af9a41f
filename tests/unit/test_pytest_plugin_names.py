"""A test's trajectory name (askcache.pytest_plugin.naming): safe, distinct, free of secrets."""

from __future__ import annotations

import re

from askcache.foundation.settings import check_cache_name
from askcache.pytest_plugin.naming import MAX_STEM_BYTES, trajectory_stem


def test_a_plain_name_and_a_safe_id_are_kept_as_they_are() -> None:
    assert trajectory_stem(["test_fill"], None) == "test_fill"
    assert trajectory_stem(["TestForm", "test_fill"], "ada-1") == "TestForm.test_fill-ada-1"


def test_ids_that_sanitise_alike_stay_apart_and_hold_no_separator() -> None:
    names = {trajectory_stem(["test_x"], params) for params in ("a/b", "a-b", "a b", "a\\b")}
    assert len(names) == 4
    for name in names:
        assert "/" not in name
        assert "\\" not in name
        assert " " not in name
        assert check_cache_name(name) == f"{name}.json"
    assert re.fullmatch(r"test_x-a-b-[0-9a-f]{8}", trajectory_stem(["test_x"], "a/b"))


def test_a_declared_secret_never_reaches_the_name() -> None:
    secret = "s3cr3t/Pa55!"
    name = trajectory_stem(["test_login"], f"ada-{secret}", {"password": secret})
    assert secret not in name
    assert "s3cr3t" not in name
    assert "Pa55" not in name
    assert name.startswith("test_login-ada-secret-password-")
    # the same id, the same name (a record and its replay agree)
    assert name == trajectory_stem(["test_login"], f"ada-{secret}", {"password": secret})


def test_a_long_id_is_cut_to_a_file_systems_limit_and_stays_distinct() -> None:
    first = trajectory_stem(["test_x"], "a" * 400)
    second = trajectory_stem(["test_x"], "a" * 399 + "b")
    assert len(first.encode()) <= MAX_STEM_BYTES
    assert first != second
    assert check_cache_name(f"folder/{first}") == f"folder/{first}.json"
