"""A TCP proxy in front of a live server that breaks connections on purpose, for the client's retry tests.

Rules act on the request line of a request (every request of a kept-alive
connection is seen): ``cut`` forwards the request, waits for the server's
answer to begin and closes both sides without relaying it (the server did
the work, the client never hears of it); ``answer`` sends a canned response
instead of forwarding. ``drop_all`` closes every open connection (open
streams included). Every thread is a daemon and every socket is closed by
``close``.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass


@dataclass
class Rule:
    match: bytes
    action: str
    times: int
    response: bytes = b""


class Proxy:
    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.rules: list[Rule] = []
        #: The request line of every request seen, in order.
        self.requests: list[bytes] = []
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut(self, match: bytes, times: int = 1) -> None:
        with self._lock:
            self.rules.append(Rule(match, "cut", times))

    def answer(self, match: bytes, status: int, code: str, *, retry_after: int | None, times: int = 1) -> None:
        body = b'{"error": {"code": "%s", "message": "canned by the test proxy"}}' % code.encode()
        head = (
            b"HTTP/1.1 %d Refused\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n"
            % (
                status,
                len(body),
            )
        )
        if retry_after is not None:
            head += b"Retry-After: %d\r\n" % retry_after
        with self._lock:
            self.rules.append(Rule(match, "answer", times, head + b"\r\n" + body))

    def seen(self, match: bytes) -> int:
        with self._lock:
            return sum(1 for line in self.requests if match in line)

    def drop_all(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def close(self) -> None:
        self._closed = True
        _shut(self.listener)
        self.listener.close()
        self.drop_all()

    # ---------------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _rule_for(self, chunk: bytes) -> Rule | None:
        line = chunk.split(b"\r\n", 1)[0]
        if b" HTTP/1." not in line:
            return None  # a request body's later chunk
        with self._lock:
            self.requests.append(line)
            for rule in self.rules:
                if rule.times > 0 and rule.match in line:
                    rule.times -= 1
                    return rule
        return None

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
        except OSError:
            client.close()  # the server is down: the client sees its connection closed
            return
        upstream.settimeout(None)
        with self._lock:
            self._sockets.update((client, upstream))
        cut = threading.Event()
        threading.Thread(target=self._downstream, args=(upstream, client, cut), daemon=True).start()
        try:
            while chunk := client.recv(65536):
                rule = self._rule_for(chunk)
                if rule is not None and rule.action == "answer":
                    client.sendall(rule.response)
                    break
                if rule is not None:
                    cut.set()
                upstream.sendall(chunk)
        except OSError:
            pass
        finally:
            if not cut.is_set():
                self._forget(client, upstream)

    def _downstream(self, upstream: socket.socket, client: socket.socket, cut: threading.Event) -> None:
        try:
            while chunk := upstream.recv(65536):
                if cut.is_set():
                    break  # the server answered: the client never hears it
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            self._forget(client, upstream)

    def _forget(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._sockets.difference_update(sockets)
        for sock in sockets:
            _shut(sock)
            sock.close()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
