"""A real PostgreSQL server in a temporary folder, for the tests and the benchmarks.

:class:`PostgresServer` runs Debian's ``postgresql`` binaries (``initdb``, ``pg_ctl``; found on
``$PATH`` or under ``/usr/lib/postgresql/<version>/bin``): a fresh cluster in a new temporary
folder, listening on a free port of 127.0.0.1 and on a unix socket in that folder, with one
superuser whose password is checked on TCP (``scram-sha-256``). :meth:`stop` and
:meth:`start` stop and start the same cluster on the same port (the data stays), as a server
restarted by its operator does.

PostgreSQL refuses to run as root. When this process is root (a CI container), the folder is
given to an unprivileged user (``nobody`` by default) and every PostgreSQL program runs as
that user.
"""

from __future__ import annotations

import getpass
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from askcache.foundation.errors import AskCacheError

__all__ = ["PostgresServer", "postgres_binaries"]

_INSTALL_HINT = "install Debian's postgresql package (apt-get install postgresql)"


def postgres_binaries() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: where ``$PATH`` finds them, else the newest
    ``/usr/lib/postgresql/<version>/bin``.

    Raises:
        AskCacheError: PostgreSQL is not installed.
    """
    found = shutil.which("pg_ctl")
    if found is not None and shutil.which("initdb") is not None:
        return Path(found).resolve().parent
    versions = sorted(
        (path for path in Path("/usr/lib/postgresql").glob("*/bin") if (path / "pg_ctl").exists()),
        key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0,
    )
    if not versions:
        raise AskCacheError(f"PostgreSQL is not installed: {_INSTALL_HINT}")
    return versions[-1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """A PostgreSQL cluster of its own (see the module docstring); a context manager.

    Args:
        user: The superuser's name.
        run_as: Who runs the server when this process is root (ignored otherwise).
        settings: Extra server settings (``{"fsync": "off"}``), given to ``postgres -c``.
        keep: A folder to keep the cluster in (a benchmark's data, reused by its next run):
            made by the first run, reused when it holds a cluster; :meth:`close` stops the
            server and leaves the folder. The password is kept in it (``password``).
    """

    def __init__(
        self,
        *,
        user: str = "askcache",
        run_as: str = "nobody",
        settings: dict[str, str] | None = None,
        keep: Path | None = None,
    ) -> None:
        self.user = user
        self.password = secrets.token_urlsafe(16)
        """The superuser's password (checked on TCP connections)."""
        self.port = _free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="askcache-postgres-")) if keep is None else keep
        """The cluster's folder: ``data/``, the unix socket, ``server.log``."""
        self.settings = dict(settings or {})
        self.kept = keep is not None
        """Whether the folder outlives :meth:`close` (``keep``)."""
        self.reused = keep is not None and (keep / "data" / "PG_VERSION").exists()
        """Whether the cluster was there already (made by an earlier run, ``keep``)."""
        self._bin = postgres_binaries()
        self._owner: pwd.struct_passwd | None = pwd.getpwnam(run_as) if os.geteuid() == 0 else None
        self.running = False
        if self.reused:
            self.password = (self.folder / "password").read_text().strip()
        else:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._initdb()

    @property
    def url(self) -> str:
        """A ``postgresql://`` URL of the ``postgres`` database over TCP, password included."""
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/postgres"

    @property
    def socket_url(self) -> str:
        """The same database over the unix socket (no password asked)."""
        return f"postgresql:///postgres?host={self.folder}&port={self.port}&user={self.user}"

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.folder / "server.log"

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the server and wait until it accepts connections (``pg_ctl start -w``)."""
        if self.running:
            return
        options = [f"-p {self.port}", f"-k {self.folder}", "-c listen_addresses=127.0.0.1"]
        options += [f"-c {name}={value}" for name, value in self.settings.items()]
        self._run("pg_ctl", "start", "-w", "-t", "120", "-D", str(self.folder / "data"),
                  "-l", str(self.log), "-o", " ".join(options))  # fmt: skip
        self.running = True

    def stop(self) -> None:
        """Stop the server (fast shutdown: open connections are closed); the data stays."""
        if self.running:
            self._run("pg_ctl", "stop", "-w", "-m", "fast", "-D", str(self.folder / "data"))
            self.running = False

    def close(self) -> None:
        """Stop the server and delete its folder (unless it is kept: ``keep``)."""
        try:
            self.stop()
        finally:
            if not self.kept:
                shutil.rmtree(self.folder, ignore_errors=True)

    def _initdb(self) -> None:
        password_file = self.folder / "password"
        password_file.write_text(self.password + "\n")
        if self._owner is not None:
            for path in (self.folder, password_file):
                os.chown(path, self._owner.pw_uid, self._owner.pw_gid)
        self._run("initdb", "-D", str(self.folder / "data"), "-U", self.user,
                  f"--pwfile={password_file}", "--auth-local=trust",
                  "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8")  # fmt: skip
        if self.kept:
            password_file.chmod(0o600)
        else:
            password_file.unlink()

    def _run(self, program: str, *arguments: str) -> None:
        extra: dict[str, Any] = {}
        if self._owner is not None:  # PostgreSQL refuses to run as root
            extra = {"user": self._owner.pw_uid, "group": self._owner.pw_gid, "extra_groups": []}
        done = subprocess.run(
            [str(self._bin / program), *arguments],
            capture_output=True,
            text=True,
            check=False,
            cwd=self.folder,
            env={**os.environ, "LC_ALL": "C.UTF-8"},
            **extra,
        )
        if done.returncode != 0:
            who = self._owner.pw_name if self._owner is not None else getpass.getuser()
            detail = (done.stderr or done.stdout).strip()
            if self.log.exists():
                detail += "\n" + self.log.read_text(errors="replace")[-2000:]
            raise AskCacheError(f"{program} {arguments[0]} failed (as {who}): {detail}")
