"""Bad input over HTTP against a real server: never a 5xx, always the error envelope on a 4xx.

The endpoints come from the server's own OpenAPI document (every API endpoint
is in it, and a new one is swept as soon as it is), so nothing here lists
them. Each operation gets a well-formed request built from its schema, then
one bad part at a time:

- NUL and control characters in every path parameter and query parameter;
- huge (``1e400``, ``2**70``, thousands of digits) and negative numbers in
  path, query, header parameters and every field of the body;
- NUL, control characters and lone surrogates in every string of the body;
- bodies nested 100,000 levels deep, invalid UTF-8, duplicate keys, unknown
  keys, and the wrong content type (text/plain, form, multipart, none);
- broken percent-encoding in path and query, odd ``Authorization`` and
  ``Accept`` headers, methods the schema does not list.

Not swept: requests the HTTP parser itself refuses before chartr sees them
(a request line over its size limit, raw control characters on the wire);
uvicorn answers those with its own plain-text 400.

Runs on this run's database (SQLite, or PostgreSQL when DATABASE_URL points
at it), where the two used to answer the same input differently.
"""

from __future__ import annotations

import itertools
import json
import logging
from dataclasses import dataclass, field
from urllib.parse import quote

import httpx
import pytest

from tests.process.live_support import ServerProcess

pytestmark = [pytest.mark.process, pytest.mark.timeout(300)]

AGENT = "sweep-agent"

#: Raw JSON tokens put in place of one value of a well-formed body.
BAD_JSON_VALUES = [
    "1e400",
    "-1e400",
    str(2**70),
    str(-(2**70)),
    "9" * 5000,
    "-1",
    "0",
    "1.5",
    "true",
    "null",
    '"3"',
    json.dumps("a\x00b"),
    json.dumps("\x01\x1f\x7f"),
    '"\\ud800"',
    json.dumps("x" * 20000),
    "[]",
    "{}",
]

#: Values for path segments and query parameters (percent-encoded when sent).
BAD_TEXT_VALUES = [
    "a\x00b",
    "\x00",
    "a\x01b",
    "\n",
    "\x1f",
    "\x7f",
    "1e400",
    str(2**70),
    "-1",
    str(-(2**70)),
    "9" * 5000,
    "1_0",
    " 1",
    "0x10",
    "\u0661",
    "\ud800",
    "%",
    "",
]

#: Header parameters take no control characters on the wire; numbers are what a careless client sends.
BAD_HEADER_VALUES = ["1e400", str(2**70), "-1", "9" * 5000, "1_0", '"1"', 'W/"1"', ""]

DEEP = 100_000
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


@dataclass
class Sweep:
    client: httpx.Client
    problems: list[str] = field(default_factory=list)
    sent: int = 0
    #: operation -> how many of its requests succeeded: proof its well-formed request is well formed
    succeeded: dict[str, int] = field(default_factory=dict)
    operation: str = ""
    #: the statuses the schema lists for the operation being swept (None outside the schema's operations)
    documented: set[str] | None = None

    def send(self, what: str, method: str, url: str, **kwargs) -> None:
        self.sent += 1
        try:
            with self.client.stream(method, url, **kwargs) as response:
                is_stream = response.headers.get("content-type", "").startswith("text/event-stream")
                body = b"" if is_stream else response.read()
        except httpx.TransportError as exc:
            self.problems.append(f"{what}: {method} {url[:200]} -> {type(exc).__name__}: {exc}")
            return
        status = response.status_code
        if status < 300:
            self.succeeded[self.operation] = self.succeeded.get(self.operation, 0) + 1
        if self.documented is not None and str(status) not in self.documented:
            self.problems.append(f"{what}: {method} {url[:200]} -> {status}, a status the schema does not list")
        if status >= 500:
            self.problems.append(f"{what}: {method} {url[:200]} -> {status} {body[:300]!r}")
        elif status >= 400:
            problem = envelope_problem(response, body)
            if problem:
                self.problems.append(f"{what}: {method} {url[:200]} -> {status} {problem}")


def envelope_problem(response: httpx.Response, body: bytes) -> str | None:
    if not response.headers.get("content-type", "").startswith("application/json"):
        return f"not JSON ({response.headers.get('content-type')}): {body[:200]!r}"
    try:
        error = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return f"no error envelope: {body[:200]!r}"
    if not (isinstance(error.get("code"), str) and error["code"] and isinstance(error.get("message"), str)):
        return f"envelope without code and message: {body[:200]!r}"
    if not error["message"]:
        return f"empty message: {body[:200]!r}"
    return None


# --- well-formed requests, from the schema -----------------------------------


class Examples:
    """Well-formed values for the schema's parameters and bodies; fresh where they must be unique."""

    def __init__(self, schema: dict, *, project_id: int, workspace_id: int, workspace_directory: str):
        self.components = schema["components"]["schemas"]
        self.project_id = project_id
        self.workspace_id = workspace_id
        self.workspace_directory = workspace_directory
        self.counter = itertools.count()
        #: A seq the agent holds (``revive`` appends it before each operation).
        self.row_seq = 1

    def resolve(self, node: dict) -> dict:
        while "$ref" in node:
            node = self.components[node["$ref"].rsplit("/", 1)[-1]]
        if "allOf" in node and len(node["allOf"]) == 1:
            return self.resolve(node["allOf"][0])
        return node

    def by_name(self, name: str) -> dict:
        """Values a schema's type alone cannot give: ids that exist, paths that are absolute and new."""
        n = next(self.counter)
        return {
            "agent_id": f"sweep-new-{n}",
            "directory": f"/srv/sweep/new-{n}",
            # An agent's cwd is its workspace's directory or below it.
            "cwd": f"{self.workspace_directory.rstrip('/')}/sweep-{n}",
            "worktree_root": f"/srv/sweep/new-{n}",
            "project_id": self.project_id,
            "workspace_id": self.workspace_id,
            "item": {"type": "user_message", "text": f"sweep {n}"},
            "item_id": f"sweep-item-{n}",
            "labels": {"team": "sweep"},
            # A guard that holds whatever the head is by then.
            "expected_head_seq": None,
            # A row written at its own seq (POST .../timeline/rows, PUT .../timeline): above any head
            # an earlier request left, and a time its format asks for.
            "seq": 10**9 + n,
            "committed_at": "2026-01-01T00:00:00+00:00",
            # A Claude Code hook names its session's transcript (the project key is its directory's name).
            "transcript_path": "/home/sweep/.claude/projects/sweep/sweep.jsonl",
        }

    def value(self, node: dict, name: str = ""):
        special = self.by_name(name)
        if name in special:
            return special[name]
        node = self.resolve(node)
        if "enum" in node:
            return next(value for value in node["enum"] if value is not None)
        for union in ("oneOf", "anyOf"):
            # OpenAPI 3.1 writes nullable as a union with {"type": "null"}: take the first real choice.
            choices = [choice for choice in node.get(union, []) if self.resolve(choice).get("type") != "null"]
            if choices:
                return self.value(choices[0], name)
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        if kind == "object" or "properties" in node:
            return {
                key: self.value(sub, key) for key, sub in node.get("properties", {}).items() if not sub.get("readOnly")
            }
        if kind == "array":
            return [self.value(node.get("items", {}), name)]
        if kind == "integer":
            return max(node.get("minimum", 1), 1)
        if kind == "number":
            return 1
        if kind == "boolean":
            return False
        if kind == "string":
            return "sweep"
        return {}

    def body(self, operation: dict) -> dict | None:
        content = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if content is None:
            return None
        return self.value(content["schema"])

    def path_value(self, name: str, path: str) -> str:
        if name == "agent_id":
            return AGENT
        if name == "seq":
            return str(self.row_seq)
        return str(self.workspace_id if path.startswith("/api/v1/workspaces") else self.project_id)


RAW = "\x07raw\x07"


def with_raw(body, path: tuple, token: str) -> bytes:
    """``body`` as JSON text with the value at ``path`` replaced by the raw JSON ``token``."""
    copy = json.loads(json.dumps(body))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = RAW
    return json.dumps(copy).replace(json.dumps(RAW), token).encode("utf-8", "surrogatepass")


def leaf_paths(value, prefix: tuple = ()) -> list[tuple]:
    """The path of every value inside ``value`` (objects and arrays included), outermost first."""
    paths = []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return paths
    for key, item in items:
        paths.append((*prefix, key))
        paths += leaf_paths(item, (*prefix, key))
    return paths


def operations(schema: dict):
    """(method, path template, operation) for every operation; those without a body last, because
    an archive they may perform would cut short the checks of the others."""
    found = [
        (method.upper(), path, operation)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if method.upper() in METHODS
    ]
    return sorted(found, key=lambda op: "requestBody" not in op[2] and op[0] != "GET")


def encoded(value: str) -> str:
    """Percent-encoded UTF-8; a lone surrogate goes out as the invalid UTF-8 it encodes to."""
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def with_query(url: str, pairs: list[tuple[str, str]]) -> str:
    return url + ("&" if "?" in url else "?") + "&".join(f"{encoded(name)}={encoded(value)}" for name, value in pairs)


def fill_path(template: str, operation: dict, examples: Examples, bad: dict | None = None, *, skip: str = "") -> str:
    """The path with its parameters filled in, and the required query parameters but ``skip``
    (the Claude Code sessions' keys: ``sweep`` for each, the session ``revive`` keeps)."""
    url = template
    required = []
    for parameter in operation.get("parameters", []):
        name = parameter["name"]
        if parameter["in"] == "path":
            value = (bad or {}).get(name, examples.path_value(name, template))
            url = url.replace("{" + name + "}", encoded(value))
        elif parameter["in"] == "query" and parameter.get("required") and name != skip:
            required.append((name, str(examples.value(parameter["schema"], name))))
    return with_query(url, required) if required else url


# --- the sweep ---------------------------------------------------------------


@pytest.fixture
def server(tmp_path, scratch_db):
    database = scratch_db(migrated=True, purpose="sweep")
    server = ServerProcess(tmp_path, database=database, name="sweep")
    setup = server.setup([AGENT])
    server.start()
    server.token = setup["token"]
    try:
        yield server
    finally:
        server.stop()


def test_no_bad_input_gets_a_5xx_and_every_4xx_has_the_envelope(server, caplog):
    caplog.set_level(logging.WARNING, logger="httpx")
    headers = {"Authorization": f"Bearer {server.token}"}
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=20, limits=limits) as client:
        schema = client.get("/api/v1/schema", params={"format": "json"}).raise_for_status().json()
        agent = client.get(f"/api/v1/agents/{AGENT}").raise_for_status().json()
        workspace = client.get(f"/api/v1/workspaces/{agent['workspace_id']}").raise_for_status().json()
        examples = Examples(
            schema,
            project_id=agent["project_id"],
            workspace_id=agent["workspace_id"],
            workspace_directory=workspace["directory"],
        )
        sweep = Sweep(client)
        ops = operations(schema)
        assert len(ops) >= 20, [f"{m} {p}" for m, p, _ in ops]
        for method, template, operation in ops:
            revive(client, agent, examples)
            sweep.operation = f"{method} {template}"
            sweep.documented = set(operation["responses"])
            sweep.succeeded.setdefault(sweep.operation, 0)
            sweep_well_formed(sweep, method, template, operation, examples)
            sweep_path_parameters(sweep, method, template, operation, examples)
            sweep_query_and_headers(sweep, method, template, operation, examples)
            sweep_bodies(sweep, method, template, operation, examples)
            sweep_raw_and_headers(sweep, method, template, operation, examples)
        sweep.operation, sweep.documented = "outside the schema's operations", None
        for template in sorted({path for _, path, _ in ops}):
            documented = {method for method, path, _ in ops if path == template}
            operation = next(op for _, path, op in ops if path == template)
            for method in sorted({"PUT", "DELETE", "PATCH", "POST"} - documented):
                sweep.send("undocumented method", method, fill_path(template, operation, examples), content=b"{}")
        # The API's own documents are outside the schema they serve.
        for path in ("/api/v1/schema", "/api/v1/docs", "/api/v1/nowhere"):
            for value in BAD_TEXT_VALUES:
                sweep.send("extra", "GET", with_query(path, [("format", value)]))
                sweep.send("extra path", "GET", f"{path}/{encoded(value)}")
    assert sweep.sent > 1000
    # Each operation's well-formed request succeeded, so one bad part at a time reached as deep as it could.
    never = [name for name, count in sweep.succeeded.items() if name.startswith(tuple(METHODS)) and not count]
    assert never == [], f"no well-formed request succeeded for: {never}"
    assert not sweep.problems, f"{len(sweep.problems)} of {sweep.sent} requests:\n" + "\n".join(sweep.problems[:40])


def json_headers(content_type: str = "application/json") -> dict:
    return {"Content-Type": content_type}


def send_body(sweep: Sweep, what: str, method: str, url: str, content: bytes, content_type: str = "application/json"):
    sweep.send(what, method, url, content=content, headers=json_headers(content_type))


def base_content(examples: Examples, operation: dict) -> bytes:
    body = examples.body(operation)
    return json.dumps(body if body is not None else {}).encode()


def revive(client: httpx.Client, agent: dict, examples: Examples) -> None:
    """Undo what earlier operations' well-formed archives did, so each operation starts on live records,
    and give the agent a row of its own (an earlier replace or delete of its timeline took them): the
    seq of a well-formed row path."""
    client.post(f"/api/v1/projects/{agent['project_id']}/unarchive")
    client.post(f"/api/v1/workspaces/{agent['workspace_id']}/unarchive")
    client.post(f"/api/v1/agents/{AGENT}/unarchive")
    appended = client.post(
        f"/api/v1/agents/{AGENT}/timeline", json={"items": [{"item": {"type": "user_message", "text": "revived"}}]}
    ).raise_for_status()
    examples.row_seq = appended.json()["rows"][0]["seq"]
    # The Claude Code session every well-formed request names (project_key and session_id "sweep"):
    # written anew, with its summary at version 1 (what a well-formed summary write expects).
    key = {"project_key": "sweep", "session_id": "sweep"}
    client.delete("/api/v1/claude-code/session", params=key).raise_for_status()
    client.post(
        "/api/v1/claude-code/session/entries", params=key, json={"entries": [{"type": "user"}]}
    ).raise_for_status()
    client.put(
        "/api/v1/claude-code/session/summary", params=key, json={"data": {}, "expected_version": 0}
    ).raise_for_status()


def sweep_well_formed(sweep, method, template, operation, examples) -> None:
    url = fill_path(template, operation, examples)
    if method == "GET":
        sweep.send("well formed", method, url)
    else:
        send_body(sweep, "well formed", method, url, base_content(examples, operation))


#: Query strings sent as they are: broken percent-encoding, invalid UTF-8, odd separators.
RAW_QUERIES = ["limit=%ff", "%ff=1", "limit=%zz", "limit=%", "a=1&&&=", "limit", "=1", "limit=1;2", "cursor=%c3%28"]
#: Path segments sent as they are, in place of each path parameter.
RAW_SEGMENTS = ["%ff", "%zz", "%c3%28", "%2F", "%2e%2e", "..%2f..", "%E2%80%AE"]
BAD_AUTHORIZATION = ["Bearer", "Bearer  x", "Basic YTpi", "Bearer " + "x" * 5000, "Bearer chartr_\u00e9"]
ODD_ACCEPT = ["text/html", "application/xml", "*/*;q=x", "", "text/event-stream", "application/json; version=2"]


def sweep_raw_and_headers(sweep, method, template, operation, examples) -> None:
    url = fill_path(template, operation, examples)
    content = None if method == "GET" else base_content(examples, operation)
    kwargs = {} if content is None else {"content": content}
    plain = {"Content-Type": "application/json"} if content is not None else {}
    for query in RAW_QUERIES:
        sweep.send(f"raw query {query}", method, url + ("&" if "?" in url else "?") + query, headers=plain, **kwargs)
    for name in [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]:
        for segment in RAW_SEGMENTS:
            raw_url = template
            for parameter in operation["parameters"]:
                if parameter["in"] == "path":
                    value = segment if parameter["name"] == name else examples.path_value(parameter["name"], template)
                    raw_url = raw_url.replace("{" + parameter["name"] + "}", value)
            sweep.send(f"raw path {name}={segment}", method, raw_url, headers=plain, **kwargs)
    for authorization in BAD_AUTHORIZATION:
        headers = {**plain, "Authorization": authorization.encode("latin-1", "replace")}
        sweep.send(f"authorization {authorization[:20]!r}", method, url, headers=headers, **kwargs)
    for accept in ODD_ACCEPT:
        sweep.send(f"accept {accept!r}", method, url, headers={**plain, "Accept": accept}, **kwargs)


def sweep_path_parameters(sweep, method, template, operation, examples) -> None:
    names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
    for name, value in itertools.product(names, BAD_TEXT_VALUES):
        url = fill_path(template, operation, examples, {name: value})
        if method == "GET":
            sweep.send(f"path {name}={value[:20]!r}", method, url)
        else:
            send_body(sweep, f"path {name}={value[:20]!r}", method, url, base_content(examples, operation))


def sweep_query_and_headers(sweep, method, template, operation, examples) -> None:
    url = fill_path(template, operation, examples)
    content = None if method == "GET" else base_content(examples, operation)
    kwargs = {} if content is None else {"content": content, "headers": json_headers()}
    for parameter in operation.get("parameters", []):
        name = parameter["name"]
        if parameter["in"] == "query":
            others = fill_path(template, operation, examples, skip=name)
            for value in BAD_TEXT_VALUES:
                sweep.send(f"query {name}={value[:20]!r}", method, with_query(others, [(name, value)]), **kwargs)
            sweep.send(f"query {name} twice", method, with_query(others, [(name, "1"), (name, "2")]), **kwargs)
        elif parameter["in"] == "header":
            for value in BAD_HEADER_VALUES:
                headers = {**kwargs.get("headers", {}), name: value}
                sweep.send(f"header {name}={value[:20]!r}", method, url, **{**kwargs, "headers": headers})
    for name, value in (("unknown_parameter", "1"), ("\x00", "1"), ("limit", "\x00")):
        sweep.send(f"query {name!r}={value!r}", method, with_query(url, [(name, value)]), **kwargs)


def sweep_bodies(sweep, method, template, operation, examples) -> None:
    if method == "GET":
        return
    url = fill_path(template, operation, examples)
    body = examples.body(operation)
    if body is not None:
        for path in leaf_paths(body):
            for token in BAD_JSON_VALUES:
                send_body(
                    sweep, f"body {path}={token[:20]}", method, url, with_raw(examples.body(operation), path, token)
                )
        first = next(iter(body), "key")
        duplicated = json.dumps(body)[:-1] + f', "{first}": {json.dumps(body.get(first))}' + "}"
        send_body(sweep, "duplicate key", method, url, duplicated.encode())
        send_body(sweep, "duplicate nested key", method, url, _with_nested_duplicate(body))
    fresh = base_content(examples, operation)
    bodies = {
        "unknown key": json.dumps({**json.loads(fresh), "unknown_key": 1}).encode(),
        "deep arrays": b"[" * DEEP + b"]" * DEEP,
        "deep objects": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
        "invalid utf-8": b'{"directory": "/srv/\xff\xfe", "kind": "git"}',
        "truncated": fresh[:-1],
        "not an object": b"[1, 2]",
        "a bare number": b"1e400",
        "empty": b"",
        "NaN": b'{"n": NaN}',
        "a NUL in a key": json.dumps({"a\x00b": 1}).encode(),
        "a lone surrogate in a key": b'{"\\ud800": 1}',
        "utf-16": fresh.decode().encode("utf-16"),
        "over the size limit": b'{"a": "' + b"x" * (1024 * 1024 + 1) + b'"}',
    }
    for what, content in bodies.items():
        send_body(sweep, what, method, url, content)
    send_body(sweep, "text/plain", method, url, fresh, "text/plain")
    send_body(sweep, "form", method, url, b"directory=%2Fsrv%2Fform&kind=git", "application/x-www-form-urlencoded")
    sweep.send("multipart", method, url, files={"file": ("a.json", fresh, "application/json")}, data={"kind": "git"})
    sweep.send("no content type", method, url, content=fresh)
    send_body(sweep, "json with a charset", method, url, fresh, "application/json; charset=latin-1")
    send_body(sweep, "json-ish type", method, url, fresh, "application/json-patch+json")


def _with_nested_duplicate(body: dict) -> bytes:
    """The body with one key given twice in the first nested object, if it has one."""
    for path in leaf_paths(body):
        target = body
        for key in path:
            target = target[key]
        if isinstance(target, dict) and target:
            key = next(iter(target))
            raw = json.dumps(target)[:-1] + f", {json.dumps(key)}: {json.dumps(target[key])}" + "}"
            return with_raw(body, path, raw)
    return json.dumps(body).encode()
