"""Fixtures: one S3 server for the session, its environment set for each test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.s3.server import BUCKET, S3Server, s3_environment

_prefixes = itertools.count()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def s3_url(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A fresh ``s3://`` prefix, with the AWS environment pointing at the test server and the
    read-through copy in a temporary folder."""
    for key, value in s3_environment(s3_server.endpoint):
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ASKCACHE_LOCAL_COPY_DIR", str(tmp_path / "local-copy"))
    return f"s3://{BUCKET}/test-{next(_prefixes)}-{tmp_path.name}"
