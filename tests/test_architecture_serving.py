"""The HTTP front is nginx's and the server's own settings' (docs/deploy.md#limits): no production
class overrides the undocumented methods of Django's ASGI handler or uvicorn's server, and
``chartr/`` parses no HTTP."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tests.test_architecture import REPO, Module, failure, production_modules

#: Undocumented methods chartr once overrode: Django's ``ASGIHandler`` (the first three) and
#: uvicorn's ``Server`` (the last two). Documented mechanisms replace them (chartr/serving.py,
#: chartr/workers.py).
NOT_OVERRIDDEN = frozenset({"create_request", "send_response", "listen_for_disconnect", "handle_exit", "on_tick"})
#: Modules of HTTP parsers; chartr/ imports none.
PARSERS = frozenset({"h11", "httptools", "llhttp", "h2", "http.server", "email.parser"})
#: What reading HTTP off a connection takes: a protocol's byte callbacks, or uvicorn's protocol to wrap.
PARSING_NAMES = frozenset({"data_received", "eof_received", "http_protocol_class", "buffer_updated"})


def overrides(module: Module) -> Iterable[str]:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ClassDef) and node.bases:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name in NOT_OVERRIDDEN:
                    yield f"{module.relative}:{item.lineno} {node.name}.{item.name}"


def http_parsing(module: Module) -> Iterable[str]:
    for node in ast.walk(module.tree):
        where = f"{module.relative}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            yield from (f"{where} imports {name}" for name in names if name.split(".")[0] in PARSERS or name in PARSERS)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in PARSING_NAMES:
            yield f"{where} defines {node.name}"
        elif isinstance(node, ast.Attribute) and node.attr in PARSING_NAMES:
            yield f"{where} uses .{node.attr}"
        elif isinstance(node, ast.ClassDef) and any(_names_protocol(base) for base in node.bases):
            yield f"{where} {node.name} is an asyncio protocol"
        elif isinstance(node, ast.Constant) and isinstance(node.value, bytes) and b"\r\n" in node.value:
            yield f"{where} frames bytes with CRLF"


def _names_protocol(base: ast.expr) -> bool:
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    return name in {"Protocol", "BufferedProtocol"} and not (isinstance(base, ast.Name) and base.id == "Protocol")


def test_no_production_class_overrides_the_undocumented_handler_and_server_methods():
    offenders = [line for module in production_modules().values() for line in overrides(module)]
    assert not offenders, failure(
        "Django's ASGIHandler.create_request/send_response/listen_for_disconnect and uvicorn's "
        "Server.handle_exit/on_tick are not documented to be overridden; use a plain ASGI "
        "application, gunicorn's hooks or uvicorn's Config",
        offenders,
    )


def test_chartr_holds_no_http_parsing():
    chartr = [module for module in production_modules().values() if module.package == "chartr"]
    assert chartr, "no chartr module was parsed"
    offenders = [line for module in chartr for line in http_parsing(module)]
    assert not offenders, failure(
        "chartr/ parses no HTTP: request heads, their limits and time are nginx's (deploy/nginx/chartr.conf)",
        offenders,
    )


def probe(source: str) -> Module:
    return Module("chartr.probe", REPO / "chartr" / "probe.py", ast.parse(source), source.count("\n"))


def test_the_checks_see_an_override_and_each_kind_of_parsing():
    overriding = probe(
        "class Handler(ASGIHandler):\n"
        "    def create_request(self, scope, body): ...\n"
        "    async def send_response(self, response, send): ...\n"
        "class Quiet(uvicorn.server.Server):\n"
        "    def handle_exit(self, sig, frame): ...\n"
        "    async def on_tick(self, counter): ...\n"
        "def handle_exit(sig, frame): ...\n"  # a function of one's own is no override
    )
    assert [line.split(" ", 1)[1] for line in overrides(overriding)] == [
        "Handler.create_request",
        "Handler.send_response",
        "Quiet.handle_exit",
        "Quiet.on_tick",
    ]
    parsing = probe(
        "import h11\n"
        "from httptools import HttpRequestParser\n"
        "class Limited(asyncio.Protocol):\n"
        "    def data_received(self, data): ...\n"
        "config.http_protocol_class = wrap(config.http_protocol_class)\n"
        "END = b'\\r\\n\\r\\n'\n"
        "from typing import Protocol\n"
        "class Shape(Protocol): ...\n"
    )
    found = sorted(line.split(" ", 1)[1] for line in http_parsing(parsing))
    assert found == [
        "Limited is an asyncio protocol",
        "defines data_received",
        "frames bytes with CRLF",
        "imports h11",
        "imports httptools",
        "uses .http_protocol_class",
        "uses .http_protocol_class",
    ], found
