"""The benches' two HTTP clients, behind one small interface.

``httpx`` is what a client author would reach for; ``raw`` is a bare keep-alive
socket that writes each request as prebuilt bytes and reads the answer by its
``Content-Length``. On two cores httpx's own CPU per request (1.3-1.5 ms for a
1-item append) is as large as the server's, so a wall-time figure measured
through it is half the bench's client; the raw client costs about a tenth of
that and shows what the server itself answers. Both send the same requests,
and both check every status.
"""

from __future__ import annotations

import socket
from urllib.parse import urlencode, urlsplit

CLIENT_KINDS = ("httpx", "raw")


class RawHttpClient:
    """One keep-alive HTTP/1.1 connection with as little client work per request as Python allows."""

    def __init__(self, base_url: str, token: str):
        parts = urlsplit(base_url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
        self.head = f"Host: {parts.netloc}\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\n".encode()

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        self.sock.sendall(
            b"POST %s HTTP/1.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (path.encode(), self.head, len(body), body)
        )
        return self._answer()

    def get(self, path: str, params: dict | None = None) -> tuple[int, bytes]:
        target = f"{path}?{urlencode(params)}" if params else path
        self.sock.sendall(b"GET %s HTTP/1.1\r\n%s\r\n" % (target.encode(), self.head))
        return self._answer()

    def _answer(self) -> tuple[int, bytes]:
        status = int(self.reader.readline().split(None, 2)[1])
        length = None
        while (line := self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                raise RuntimeError("the server closed the keep-alive connection")
        if length is None:
            raise RuntimeError(f"an answer without Content-Length (status {status})")
        return status, self.reader.read(length)

    def __enter__(self) -> RawHttpClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.reader.close()
        self.sock.close()


class HttpxClient:
    """The same interface over one keep-alive ``httpx.Client``."""

    def __init__(self, base_url: str, token: str):
        import httpx

        self.client = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        response = self.client.post(path, content=body, headers={"Content-Type": "application/json"})
        return response.status_code, response.content

    def get(self, path: str, params: dict | None = None) -> tuple[int, bytes]:
        response = self.client.get(path, params=params)
        return response.status_code, response.content

    def __enter__(self) -> HttpxClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.client.close()


def http_client(kind: str, base_url: str, token: str) -> RawHttpClient | HttpxClient:
    """A client of ``kind`` (one of CLIENT_KINDS) on one keep-alive connection to ``base_url``."""
    return RawHttpClient(base_url, token) if kind == "raw" else HttpxClient(base_url, token)
