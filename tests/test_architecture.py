"""The architecture, held by a static check of every production module (no database, no imports run).

Each module is parsed with ``ast`` and every import it makes is collected,
function-level and ``TYPE_CHECKING`` ones included. Then:

- ``kernel`` is shared by everything, so it imports no other first-party package;
- the packages form a layered graph: no cycle between them. The configuration
  roots (``chartr/settings.py``, ``urls.py``, ``asgi.py``, ``wsgi.py``) wire every
  app together and are left out of that graph; every other ``chartr`` module
  may lean on ``kernel`` only;
- inside a package, no two modules import each other, directly or around a loop;
- modules stay under 500 lines and functions under 60;
- the agent table is written only by ``snapshots/services.py``, the project and
  workspace tables only by ``registry/services.py``, the timeline's head
  table only by timeline modules (queryset writes, ``save``/``bulk_*``, raw SQL).

Imports by string (``import_module``, settings, ``apps.get_model``) are not
seen here. A failure lists every offender, with the file and line of each
import that closes a cycle.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The kernel and every app (chartr/ included), found by their ``apps.py`` so a new app is never left out.
PACKAGES = ("kernel", *sorted(path.parent.name for path in REPO.glob("*/apps.py")))
#: First-party but not production: production code must not lean on them either.
OTHER_FIRST_PARTY = ("tests", "bench")
FIRST_PARTY = frozenset(PACKAGES + OTHER_FIRST_PARTY)
#: Configuration roots: they may import every app, and are left out of the package graph.
CONFIGURATION_ROOTS = frozenset({"chartr.settings", "chartr.urls", "chartr.asgi", "chartr.wsgi"})
#: What a non-root chartr module may import besides chartr itself.
CHARTR_MAY_IMPORT = frozenset({"chartr", "kernel"})

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


@dataclass(frozen=True)
class Import:
    """One imported module, as written at ``path:line`` in ``source``."""

    source: str
    target: str
    path: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def __str__(self) -> str:
        return f"{self.where} {self.source} imports {self.target}"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: int

    @property
    def relative(self) -> str:
        return self.path.relative_to(REPO).as_posix()

    @property
    def package(self) -> str:
        return self.name.split(".")[0]

    @property
    def is_package_init(self) -> bool:
        return self.path.name == "__init__.py"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def production_modules() -> dict[str, Module]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "migrations" in path.relative_to(REPO).parts:
                continue
            source = path.read_text(encoding="utf-8")
            name = module_name(path)
            modules[name] = Module(name, path, ast.parse(source, filename=str(path)), len(source.splitlines()))
    return modules


def _resolve_relative(module: Module, node: ast.ImportFrom) -> str:
    """The absolute module ``from ... import`` names, for relative imports too."""
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package_init:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(module: Module, known: Iterable[str] = ()) -> list[Import]:
    """Every import in ``module``, wherever it is written; ``from a import b`` counts as a.b when that is a module."""
    known = set(known)
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(module, node)
            targets = []
            for alias in node.names:
                candidate = f"{base}.{alias.name}" if base else alias.name
                targets.append(candidate if candidate in known else base)
        else:
            continue
        relative = module.path.relative_to(REPO).as_posix()
        found.extend(Import(module.name, target, relative, node.lineno) for target in dict.fromkeys(targets) if target)
    return found


@functools.cache
def all_imports() -> list[Import]:
    modules = production_modules()
    found = [imp for module in modules.values() for imp in imported_modules(module, modules)]
    return sorted(found, key=lambda imp: (imp.path, imp.line, imp.target))


def top(name: str) -> str:
    return name.split(".")[0]


def first_party_imports() -> list[Import]:
    return [imp for imp in all_imports() if top(imp.target) in FIRST_PARTY]


# --- graphs -----------------------------------------------------------------


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one node, or a node that reaches itself, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    nodes = sorted(set(graph) | {n for targets in graph.values() for n in targets})

    def visit(root: str) -> None:
        # Iterative, so a deep import chain cannot hit the recursion limit.
        nonlocal counter
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    components.append(sorted(component))

    for node in nodes:
        if node not in index:
            visit(node)
    return sorted(components)


def cycle_through(graph: dict[str, set[str]], start: str, within: set[str]) -> list[str]:
    """A shortest path start -> ... -> start inside one component (breadth first)."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child not in within:
                    continue
                if child == start:
                    path = [start]
                    while node != start:
                        path.append(node)
                        node = parents[node]
                    return [start, *reversed(path[1:]), start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a component but on no cycle")  # pragma: no cover


def describe_cycles(graph: dict[str, set[str]], evidence: dict[tuple[str, str], list[Import]]) -> list[str]:
    """One paragraph per tangle (strongly connected component): a shortest cycle through each of
    its members, then every import behind a step of those cycles, once."""
    paragraphs = []
    for component in strongly_connected(graph):
        members = set(component)
        cycles: dict[tuple[str, ...], list[str]] = {}
        for member in component:
            path = cycle_through(graph, member, members)
            smallest = path.index(min(path[:-1]))
            cycles.setdefault(tuple(sorted(path[:-1])), path[smallest:-1] + path[:smallest] + [path[smallest]])
        lines = [f"tangle of {len(component)}: {', '.join(component)}"]
        lines.extend(f"  cycle: {' -> '.join(path)}" for path in cycles.values())
        steps = dict.fromkeys((a, b) for path in cycles.values() for a, b in zip(path, path[1:]))
        for source, target in steps:
            lines.extend(f"    {source} -> {target}: {imp}" for imp in evidence[(source, target)])
        paragraphs.append("\n".join(lines))
    return paragraphs


def package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[Import]]]:
    graph: dict[str, set[str]] = defaultdict(set)
    evidence: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in first_party_imports():
        if imp.source in CONFIGURATION_ROOTS:
            continue
        source, target = top(imp.source), top(imp.target)
        if source != target:
            graph[source].add(target)
            evidence[(source, target)].append(imp)
    return graph, evidence


def module_graph(package: str) -> tuple[dict[str, set[str]], dict[tuple[str, str], list[Import]]]:
    graph: dict[str, set[str]] = defaultdict(set)
    evidence: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in first_party_imports():
        if top(imp.source) == package and top(imp.target) == package and imp.source != imp.target:
            graph[imp.source].add(imp.target)
            evidence[(imp.source, imp.target)].append(imp)
    return graph, evidence


def failure(title: str, offenders: list[str]) -> str:
    return f"{title} ({len(offenders)}):\n" + "\n".join(f"  {line}" for line in offenders)


# --- the checks ---------------------------------------------------------------


def test_every_package_is_parsed_and_function_level_imports_are_seen():
    modules = production_modules()
    assert {m.package for m in modules.values()} == set(PACKAGES)
    assert not any("migrations" in m.relative.split("/") for m in modules.values())
    probe = Module(
        "registry.probe",
        REPO / "registry" / "probe.py",
        ast.parse(
            "from __future__ import annotations\n"
            "import kernel.errors as e\n"
            "from . import models\n"
            "from .models import Project\n"
            "def f():\n"
            "    from snapshots.services import create_agent\n"
            "    class C:\n"
            "        def m(self):\n"
            "            import timeline\n"
        ),
        9,
    )
    targets = {imp.target for imp in imported_modules(probe, {"registry.models", "kernel.errors"})}
    assert targets == {"__future__", "kernel.errors", "registry.models", "snapshots.services", "timeline"}


def test_kernel_imports_no_other_first_party_package():
    offenders = [
        str(imp) for imp in first_party_imports() if top(imp.source) == "kernel" and top(imp.target) != "kernel"
    ]
    assert not offenders, failure("kernel is shared and imports no other first-party package", offenders)


def test_packages_form_no_cycle():
    graph, evidence = package_graph()
    cycles = describe_cycles(graph, evidence)
    assert not cycles, failure(
        "package import cycles (configuration roots left out: " + ", ".join(sorted(CONFIGURATION_ROOTS)) + ")", cycles
    )


def test_chartr_modules_other_than_the_configuration_roots_import_only_kernel():
    offenders = [
        str(imp)
        for imp in first_party_imports()
        if top(imp.source) == "chartr"
        and imp.source not in CONFIGURATION_ROOTS
        and top(imp.target) not in CHARTR_MAY_IMPORT
    ]
    assert not offenders, failure("chartr is configuration; outside its roots it may import kernel only", offenders)


def test_apps_do_not_import_the_configuration_package():
    # chartr/ wires the apps together; an app leaning on it would make the wiring a dependency.
    offenders = [
        str(imp)
        for imp in first_party_imports()
        if top(imp.source) not in ("chartr", "kernel") and top(imp.target) == "chartr"
    ]
    assert not offenders, failure("apps lean on kernel and on each other, never on chartr", offenders)


def test_no_import_cycle_between_modules_of_a_package():
    cycles = []
    for package in PACKAGES:
        cycles.extend(describe_cycles(*module_graph(package)))
    assert not cycles, failure("module import cycles inside a package", cycles)


def test_no_module_over_the_line_limit():
    offenders = [
        f"{m.relative}: {m.lines} lines"
        for m in sorted(production_modules().values(), key=lambda m: -m.lines)
        if m.lines > MAX_MODULE_LINES
    ]
    assert not offenders, failure(f"modules over {MAX_MODULE_LINES} lines", offenders)


def functions(tree: ast.AST, prefix: str = "") -> Iterable[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (``Class.method``, ``outer.<locals>.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from functions(node, f"{prefix}{node.name}.<locals>.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def test_no_function_over_the_line_limit():
    offenders = []
    for module in production_modules().values():
        for name, node in functions(module.tree):
            # From the def line (decorators excluded) to the last line of the body.
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                offenders.append((length, f"{module.relative}:{node.lineno} {name}: {length} lines"))
    offenders.sort(key=lambda item: (-item[0], item[1]))
    assert not offenders, failure(f"functions over {MAX_FUNCTION_LINES} lines", [text for _, text in offenders])


def _reads_vendor(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "vendor"


def engine_choices(tree: ast.AST) -> Iterable[ast.AST]:
    """Where ``tree`` picks something by engine itself: ``x.vendor == ...``, ``mapping[x.vendor]``,
    ``mapping.get(x.vendor, default)``. A cache kept per engine (``cache[x.vendor] = ...``,
    ``cache.get(x.vendor)``) picks nothing."""
    for node in ast.walk(tree):
        compared = isinstance(node, ast.Compare) and any(_reads_vendor(n) for n in [node.left, *node.comparators])
        looked_up = isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _reads_vendor(node.slice)
        got = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and len(node.args) == 2
            and _reads_vendor(node.args[0])
        )
        if compared or looked_up or got:
            yield node


def test_every_choice_by_engine_goes_through_for_engine():
    offenders = [
        f"{module.relative}:{node.lineno}"
        for module in production_modules().values()
        if module.name != "kernel.engines"
        for node in engine_choices(module.tree)
    ]
    assert not offenders, failure("pick per-engine code with kernel.engines.for_engine", offenders)


def test_the_engine_check_sees_each_way_of_choosing():
    tree = ast.parse(
        "a = c.vendor == 'sqlite'\nb = M[c.vendor]\nd = M.get(c.vendor, X)\ne = cache.get(c.vendor)\ncache[c.vendor] = 1\n"
    )
    assert [node.lineno for node in engine_choices(tree)] == [1, 2, 3]


# --- who writes which table ---------------------------------------------------------

#: Model -> the modules that may write its table (by queryset write, ``save``/``bulk_*`` or raw SQL).
TABLE_WRITERS = {
    "AgentSnapshot": lambda module: module == "snapshots.services",
    "Project": lambda module: module == "registry.services",
    "Workspace": lambda module: module == "registry.services",
    "TimelineHead": lambda module: top(module) == "timeline",
}
#: Raw SQL naming a table in an UPDATE, INSERT or DELETE.
RAW_TABLES = {
    "AgentSnapshot": "snapshots_agentsnapshot",
    "Project": "registry_project",
    "Workspace": "registry_workspace",
    "TimelineHead": "timeline_head",
}
_WRITE_METHODS = frozenset({"update", "bulk_update", "bulk_create", "create", "get_or_create", "update_or_create"})


def _names_in(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def table_writes(module: Module) -> list[tuple[str, int]]:
    """(model, line) of every write to a watched model's table: a write method called on an
    expression naming the model (``Model.objects.filter(...).update(...)``, ``Model._meta``
    in an UPDATE/INSERT text, ``Model(...).save()``), or SQL text naming its table."""
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _WRITE_METHODS or node.func.attr == "save":
                found.extend((model, node.lineno) for model in TABLE_WRITERS if model in _names_in(node.func.value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.upper()
            if any(verb in text for verb in ("UPDATE ", "INSERT INTO ", "DELETE FROM ")):
                found.extend((model, node.lineno) for model, table in RAW_TABLES.items() if table.upper() in text)
        elif isinstance(node, ast.JoinedStr):
            text = "".join(part.value for part in node.values if isinstance(part, ast.Constant)).upper()
            if text.lstrip().startswith(("UPDATE ", "INSERT INTO ", "DELETE FROM ")):
                found.extend((model, node.lineno) for model in TABLE_WRITERS if model in _names_in(node))
    return found


def test_only_the_owning_modules_write_the_agent_registry_and_timeline_head_tables():
    offenders = [
        f"{module.relative}:{line} writes {model}"
        for module in production_modules().values()
        for model, line in table_writes(module)
        if not TABLE_WRITERS[model](module.name)
    ]
    assert not offenders, failure(
        "AgentSnapshot is written only by snapshots/services.py, Project and Workspace only by "
        "registry/services.py, TimelineHead only by timeline modules",
        offenders,
    )


def test_the_table_write_check_sees_each_kind_of_write():
    probe = Module(
        "legacy.probe",
        REPO / "legacy" / "probe.py",
        ast.parse(
            "AgentSnapshot.objects.filter(pk=1).update(title='x')\n"
            "TimelineHead.objects.bulk_create([])\n"
            "AgentSnapshot(agent_id='a').save()\n"
            "cursor.execute('UPDATE timeline_head SET head_seq = 1')\n"
            "sql = f'UPDATE {quote(TimelineHead._meta.db_table)} SET epoch = 1'\n"
            "AgentSnapshot.objects.filter(pk=1).count()\n"
        ),
        6,
    )
    assert sorted(table_writes(probe), key=lambda write: write[1]) == [
        ("AgentSnapshot", 1),
        ("TimelineHead", 2),
        ("AgentSnapshot", 3),
        ("TimelineHead", 4),
        ("TimelineHead", 5),
    ]
