"""A real S3 API server on 127.0.0.1 for the tests, and a proxy that dies mid-request.

The server is moto's threaded server (werkzeug serving moto's S3 over HTTP): the code under
test talks to it through s3fs, aiobotocore and aiohttp exactly as it would talk to AWS.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator

import boto3
from moto.server import ThreadedMotoServer

BUCKET = "fleet-caches"


class S3Server:
    """moto's S3 on a free port of 127.0.0.1, with one bucket.

    :meth:`stop` and :meth:`start` stop and start the HTTP server on the same port; the
    objects stay (moto keeps them in this process), as a restarted S3 keeps its objects.
    """

    def __init__(self, bucket: str = BUCKET) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.port = port
        self.bucket = bucket
        self.running = True
        self.client().create_bucket(Bucket=bucket)

    def start(self) -> None:
        """Start the server again after :meth:`stop`, on the same port."""
        if not self.running:
            self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
            self._server.start()
            self.running = True

    def client(self) -> object:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def put_objects(self, keys: list[str], data: bytes) -> None:
        """Store objects straight into the server's in-process store (fast set-up for tests
        about listing; the code under test still lists over HTTP)."""
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
        for key in keys:
            backend.put_object(BUCKET, key, data)

    def stop(self) -> None:
        """Stop serving and close the listening socket: new connections are refused."""
        if self.running:
            self._server.stop()
            listener = getattr(self._server, "_server", None)
            if listener is not None:
                listener.server_close()
            self.running = False


class CuttingProxy:
    """Forwards one TCP connection to ``port`` and, after ``cut_after`` bytes of the request,
    closes both sides and stops listening: to the client, the server went away mid-write."""

    def __init__(self, port: int, cut_after: int) -> None:
        self._target = port
        self._cut_after = cut_after
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.forwarded = 0
        self.cut = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            client, _ = self._listener.accept()
            upstream = socket.create_connection(("127.0.0.1", self._target))
            threading.Thread(target=self._pipe_back, args=(upstream, client), daemon=True).start()
            while self.forwarded < self._cut_after:
                chunk = client.recv(min(65536, self._cut_after - self.forwarded))
                if not chunk:
                    break
                upstream.sendall(chunk)
                self.forwarded += len(chunk)
            self.close()
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self.cut.set()

    @staticmethod
    def _pipe_back(upstream: socket.socket, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := upstream.recv(65536):
                client.sendall(chunk)

    def close(self) -> None:
        self._listener.close()


class OutageProxy:
    """A TCP proxy in front of the S3 server, the endpoint the code under test talks to.

    :meth:`down` closes every open connection and refuses new ones (pooled keep-alive
    connections would otherwise outlive a stopped server); :meth:`up` listens again on the
    same port. :meth:`cut_put` makes the proxy forward only part of the next ``PUT`` whose
    request line contains a marker, then go down: the server went away in the middle of
    that write.
    """

    def __init__(self, port: int) -> None:
        self._target = port
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._marker: bytes | None = None
        self.cut = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._serve(self._listener)

    def cut_put(self, marker: bytes) -> None:
        """Cut the next ``PUT`` whose request line holds ``marker`` half-way, then go down."""
        self.cut.clear()
        self._marker = marker

    def down(self) -> None:
        with self._lock:
            self._listener.close()
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def up(self) -> None:
        """Listen again (nothing happens when the proxy is up)."""
        self._marker = None
        if self._listener.fileno() == -1:
            self._listener = socket.create_server(("127.0.0.1", self.port))
            self._serve(self._listener)

    def _serve(self, listener: socket.socket) -> None:
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, upstream}
            threading.Thread(target=self._forward, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._back, args=(upstream, client), daemon=True).start()

    def _forward(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            self._relay(client, upstream)
        finally:
            with self._lock:
                self._open -= {client, upstream}
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        cutting = False
        with contextlib.suppress(OSError):
            while chunk := client.recv(65536):
                marker = self._marker
                line = chunk.split(b"\r\n", 1)[0]
                if marker is not None and chunk.startswith(b"PUT ") and marker in line:
                    self._marker = None
                    cutting = True
                    head, sep, body = chunk.partition(b"\r\n\r\n")
                    upstream.sendall(head + sep)  # the headers, then half of the body
                    chunk = body
                    if not chunk:
                        continue
                if cutting:
                    upstream.sendall(chunk[: len(chunk) // 2])
                    self.down()
                    self.cut.set()
                    return
                upstream.sendall(chunk)

    @staticmethod
    def _back(upstream: socket.socket, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := upstream.recv(65536):
                client.sendall(chunk)


def s3_environment(endpoint: str) -> Iterator[tuple[str, str]]:
    """The environment a machine of the fleet would have: credentials and an endpoint."""
    yield "AWS_ACCESS_KEY_ID", "testing"
    yield "AWS_SECRET_ACCESS_KEY", "testing"
    yield "AWS_DEFAULT_REGION", "us-east-1"
    yield "AWS_ENDPOINT_URL", endpoint
    yield "AWS_CONFIG_FILE", "/nonexistent/askcache-tests/config"
    yield "AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/askcache-tests/credentials"
