"""``python -m chartr.healthcheck [PATH]``: exit 0 if the local server answers 200, else 1.

The Docker HEALTHCHECK runs this, since the slim image has no curl. It imports
nothing from Django but chartr.config's exception, so it costs a fraction of a
second, and it asks the address gunicorn listens on (the first one in
``CHARTR_BIND``).
"""

from __future__ import annotations

import http.client
import socket
import sys

from chartr import config

TIMEOUT_SECONDS = 5.0


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str):
        super().__init__("localhost", timeout=TIMEOUT_SECONDS)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def connection_for(address: str) -> http.client.HTTPConnection:
    if address.startswith("unix:"):
        return _UnixHTTPConnection(address[len("unix:") :])
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    # A wildcard bind is reachable on loopback.
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return http.client.HTTPConnection(host, int(port), timeout=TIMEOUT_SECONDS)


def probe(path: str = "/healthz") -> int:
    connection = connection_for(config.value("CHARTR_BIND")[0])
    try:
        connection.request("GET", path)
        status = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        print(f"unhealthy: {path}: {exc}", file=sys.stderr)
        return 1
    finally:
        connection.close()
    if status != 200:
        print(f"unhealthy: {path} answered {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(probe(sys.argv[1] if len(sys.argv) > 1 else "/healthz"))
