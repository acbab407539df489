"""Debian's nginx in front of several chartr instances, for the multi-instance test and benchmark.

The site is ``deploy/nginx/upstream-scale.conf`` and ``deploy/nginx/chartr.conf``,
the files the compose ``scale`` profile serves, with the instances' loopback
ports in place of the upstream's ``server chartr-N:8000`` lines and
``listen 127.0.0.1:<port>`` in place of ``listen 80``. Around it this module writes what a container image would
provide: a main config that keeps every path (pid, logs, temp files) in the
test's directory and runs in the foreground (``daemon off``), so no root and
no system directory is needed. It adds two things for the observer only: an
access log naming the instance that answered each request, and the same in
an ``X-Chartr-Upstream`` response header (how a test tells where a stream
landed).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import time
from pathlib import Path

import httpx

from tests.support.processes import REPO, Process, wait_for

SITE_CONFIG = REPO / "deploy" / "nginx" / "chartr.conf"
UPSTREAM_CONFIG = REPO / "deploy" / "nginx" / "upstream-scale.conf"
UPSTREAM_HEADER = "x-chartr-upstream"
_SERVER_LINE = re.compile(r"^(?P<indent>[ \t]*)server chartr-\d+:8000(?P<params>[^;]*);\n", re.M)


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(path, os.X_OK)), None
    )


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick, released again for the caller to bind)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def render_site(upstream_ports: list[int], port: int) -> str:
    """The upstream and ``deploy/nginx/chartr.conf`` with loopback instances, listening on 127.0.0.1:``port``."""
    upstream = UPSTREAM_CONFIG.read_text()
    lines = list(_SERVER_LINE.finditer(upstream))
    assert lines, f"no `server chartr-N:8000` lines in {UPSTREAM_CONFIG}"
    indent, params = lines[0]["indent"], lines[0]["params"]
    servers = "".join(f"{indent}server 127.0.0.1:{p}{params};\n" for p in upstream_ports)
    upstream = upstream[: lines[0].start()] + servers + upstream[lines[-1].end() :]
    text = SITE_CONFIG.read_text()
    assert "    listen 80;\n" in text, f"no `listen 80;` in {SITE_CONFIG}"
    return upstream + text.replace("    listen 80;\n", f"    listen 127.0.0.1:{port};\n")


def main_config(root: Path, site: Path) -> str:
    temp = root / "temp"
    user = "user root;\n" if os.geteuid() == 0 else ""  # as root, workers would drop to a user that cannot write here
    return f"""{user}daemon off;
worker_processes 1;
pid {root / "nginx.pid"};
error_log {root / "error.log"} warn;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {temp / "body"};
    proxy_temp_path {temp / "proxy"};
    fastcgi_temp_path {temp / "fastcgi"};
    uwsgi_temp_path {temp / "uwsgi"};
    scgi_temp_path {temp / "scgi"};
    log_format upstreams '$msec $request_method $request_uri $status "$upstream_addr" "$upstream_status"';
    access_log {root / "access.log"} upstreams;
    add_header X-Chartr-Upstream $upstream_addr always;
    include {site};
}}
"""


class Nginx:
    """nginx on 127.0.0.1:``port`` in front of ``upstream_ports``, everything under ``root``."""

    def __init__(self, root: Path, upstream_ports: list[int], *, port: int | None = None):
        self.binary = nginx_binary()
        self.root = root
        self.port = port or free_port()
        self.upstream_ports = upstream_ports
        self.config = root / "nginx.conf"
        self.process: Process | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "") -> str:
        return self.base_url + path

    def write_config(self) -> Path:
        (self.root / "temp").mkdir(parents=True, exist_ok=True)
        site = self.root / "chartr-site.conf"
        site.write_text(render_site(self.upstream_ports, self.port))
        self.config.write_text(main_config(self.root, site))
        return self.config

    def start(self, timeout: float = 20) -> Nginx:
        assert self.binary, "nginx is not installed"
        self.write_config()
        command = [self.binary, "-p", str(self.root), "-c", str(self.config), "-e", str(self.root / "error.log")]
        self.process = Process(command, dict(os.environ), self.root / "nginx.log")

        def answering() -> bool:
            if not self.process.running():
                raise AssertionError(f"nginx exited:\n{self.process.output}\n{self.error_log()}")
            try:
                httpx.get(self.url("/healthz"), timeout=2)
                return True
            except httpx.TransportError:
                return False

        wait_for(answering, timeout=timeout, what="nginx to listen")
        return self

    def error_log(self) -> str:
        path = self.root / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def access_log(self) -> list[str]:
        path = self.root / "access.log"
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(timeout=10)

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def upstream_of(response: httpx.Response) -> str:
    """The instance that answered (the last address nginx tried)."""
    return response.headers.get(UPSTREAM_HEADER, "").split(",")[-1].strip()


def wait_until(condition, *, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return False
