"""Dependencies are used through their public API only, held by a static check of every module outside tests.

Production modules, their migrations and ``bench/`` are parsed with ``ast`` (nothing is
imported or run), and:

- no module imports a dependency's internal module: one whose dotted path has a part
  starting with ``_``, or one of ``INTERNAL_MODULES`` (internal by their project's own word,
  though named without ``_``), nor a ``_name`` from a dependency, nor anything but
  ``DatabaseWrapper`` from a Django backend's ``base`` module;
- no module touches a library's private name: ``obj._name`` where ``_name`` is no name
  chartr defines itself (a function, a class, an attribute or a variable it assigns), and
  ``super()._name`` always (overriding a library's private method);
- no class overrides a library's private method (``def _name`` where a base class from a
  dependency defines ``_name``), found by importing each module and walking its classes' MRO;
- no module assigns ``settings.X`` (tests use ``override_settings`` or the ``settings`` fixture).

The kernel importing no app is held by ``tests/test_architecture.py``. A failure lists
every offender with its file and line.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

from tests.test_architecture import FIRST_PARTY, PACKAGES, REPO, failure, top

#: Internal modules of dependencies whose names do not say so.
INTERNAL_MODULES = (
    "psycopg.pq",  # libpq's wrapper: psycopg's docs call it the low-level interface, not for applications
    "psycopg.generators",
    "uvicorn.protocols",
    "uvicorn.lifespan",
    "uvicorn.loops",
    "uvicorn.middleware",
)
#: Underscored names that are documented public API of their library.
DOCUMENTED = frozenset(
    {
        "_meta",  # Django's Model._meta API
        "_base_manager",  # Django's Model._base_manager
        "_default_manager",  # Django's Model._default_manager
        "_asdict",  # collections.namedtuple's
        "_replace",
        "_fields",
        "_make",
        "_exit",  # os._exit
    }
)
#: Known private names still touched, each with its reason; the lead removes an entry as its module changes.
KNOWN_PRIVATE = {
    # Django 5.2 has no public way to render a database-held ON DELETE CASCADE (6.0's db_on_delete will be).
    ("kernel/db_backends/__init__.py", "super()._create_fk_sql"),
    # SQLite's transaction hooks: Django's backend contract (the methods its public commit(),
    # rollback(), close() and atomic() call); the writer turns and the fence wrap them.
    ("kernel/db_backends/sqlite3/base.py", "super()._start_transaction_under_autocommit"),
    ("kernel/db_backends/sqlite3/base.py", "super()._commit"),
    ("kernel/db_backends/sqlite3/base.py", "super()._rollback"),
    ("kernel/db_backends/sqlite3/base.py", "super()._close"),
    # drf-spectacular's AutoSchema hook for a serializer field (its documented way to extend the schema).
    ("kernel/api/schema.py", "super()._map_serializer_field"),
    # A migration dropping and rebuilding the indexes introspection finds, as applied databases ran it.
    ("timeline/migrations/0006_row_agent_index_and_search_backlog.py", "schema_editor._constraint_names"),
    ("timeline/migrations/0006_row_agent_index_and_search_backlog.py", "schema_editor._delete_index_sql"),
    ("timeline/migrations/0006_row_agent_index_and_search_backlog.py", "schema_editor._create_index_sql"),
    # ModelForm's validation hook (_post_clean, overridden): the service validates instead.
    ("kernel/admin/forms.py", "self._errors"),
    # The eventsourcing peer's SQLite connections at the bench's synchronous level.
    ("bench/peers.py", "made._sqlite_conn"),
}
#: Known overrides of a library's private method, each with its reason (the ``super()`` calls above).
KNOWN_OVERRIDES = {
    ("kernel/db_backends/sqlite3/base.py", "DatabaseWrapper._start_transaction_under_autocommit"),
    ("kernel/db_backends/sqlite3/base.py", "DatabaseWrapper._commit"),
    ("kernel/db_backends/sqlite3/base.py", "DatabaseWrapper._rollback"),
    ("kernel/db_backends/sqlite3/base.py", "DatabaseWrapper._close"),
    ("kernel/api/schema.py", "AutoSchema._map_serializer_field"),
    ("kernel/admin/forms.py", "ServiceForm._post_clean"),
}
#: Modules the check does not import: the configuration roots build the server at import.
NOT_IMPORTED = frozenset({"chartr.asgi", "chartr.wsgi", "chartr.settings"})
#: Known imports of internal modules: none.
KNOWN_INTERNAL_IMPORTS: set[tuple[str, str]] = set()
#: Known settings changed at run time: none.
KNOWN_SETTING_CHANGES: set[tuple[str, str]] = set()
PRIVATE = re.compile(r"^_[A-Za-z]\w*$")
#: Enum's ``_sunder_`` names are its documented API (``_generate_next_value_``, ...).
SUNDER = re.compile(r"^_[A-Za-z]\w*_$")


def checked_paths() -> list[Path]:
    """Every Python file outside tests: the packages (migrations included) and bench/."""
    return sorted(path for package in (*PACKAGES, "bench") for path in (REPO / package).rglob("*.py"))


@functools.cache
def parsed() -> dict[str, ast.Module]:
    return {
        path.relative_to(REPO).as_posix(): ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for path in checked_paths()
    }


def is_internal(module: str) -> bool:
    if top(module) in FIRST_PARTY or top(module) == "__future__":
        return False
    if any(part.startswith("_") for part in module.split(".")):
        return True
    return any(module == name or module.startswith(name + ".") for name in INTERNAL_MODULES)


def internal_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if is_internal(alias.name))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if top(node.module) in FIRST_PARTY:
                    continue
                if (
                    is_internal(node.module)
                    or is_internal(full)
                    or PRIVATE.match(alias.name)
                    or re.fullmatch(r"django\.db\.backends\.(?!base\.)\w+\.base", node.module)
                    and (alias.name != "DatabaseWrapper")
                ):
                    yield node.lineno, full


def defined_names(trees: list[ast.Module]) -> set[str]:
    """Every name chartr defines: functions, classes, assigned names and attributes, and string keys."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PRIVATE.match(node.value):
                names.add(node.value)  # __slots__, setattr, a __dict__ key
    return names


def methods_by_class(trees: list[ast.Module]) -> dict[str, int]:
    """How many of chartr's classes define each method name."""
    counts: dict[str, int] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        counts[item.name] = counts.get(item.name, 0) + 1
    return counts


def private_names(tree: ast.Module, ours: set[str], methods: dict[str, int]) -> Iterator[tuple[int, str]]:
    """``obj._name`` for a ``_name`` chartr never defines, and ``super()._name`` where no class of
    chartr's but the calling one defines ``_name`` (so the call reaches a library's method)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and PRIVATE.match(node.attr)) or node.attr in DOCUMENTED:
            continue
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            if methods.get(node.attr, 0) < 2:
                yield node.lineno, f"super().{node.attr}"
        elif node.attr not in ours:
            yield node.lineno, f"{ast.unparse(value)}.{node.attr}"


def test_no_module_outside_tests_imports_a_dependencys_internal_module():
    offenders = [
        f"{path}:{line} imports {name}"
        for path, tree in parsed().items()
        for line, name in internal_imports(tree)
        if (path, name) not in KNOWN_INTERNAL_IMPORTS
    ]
    assert not offenders, failure("internal modules of dependencies imported outside tests", offenders)


def test_no_module_outside_tests_touches_a_librarys_private_name():
    trees = parsed()
    ours = defined_names(list(trees.values()))
    methods = methods_by_class(list(trees.values()))
    found = {(path, name): line for path, tree in trees.items() for line, name in private_names(tree, ours, methods)}
    offenders = [
        f"{path}:{line} {name}" for (path, name), line in sorted(found.items()) if (path, name) not in KNOWN_PRIVATE
    ]
    assert not offenders, failure("private names of libraries touched outside tests", offenders)
    gone = sorted(f"{path} {name}" for path, name in KNOWN_PRIVATE - set(found))
    assert not gone, failure("KNOWN_PRIVATE lists names no module touches any more: remove them", gone)


def production_modules() -> Iterator[tuple[str, str]]:
    """(path, dotted name) of every production module outside migrations and ``NOT_IMPORTED``."""
    for path in checked_paths():
        relative = path.relative_to(REPO)
        parts = relative.with_suffix("").parts
        if parts[0] == "bench" or "migrations" in parts:
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in NOT_IMPORTED:
            yield relative.as_posix(), name


def private_overrides(classes) -> Iterator[str]:
    """``Class._name`` for each method a class defines over a dependency's private ``_name``."""
    for cls in classes:
        for attr, value in vars(cls).items():
            if not PRIVATE.match(attr) or SUNDER.match(attr) or attr in DOCUMENTED:
                continue
            function = getattr(value, "__func__", getattr(value, "fget", value))
            if not inspect.isfunction(function):
                continue
            if any(top(base.__module__) not in FIRST_PARTY and attr in vars(base) for base in cls.__mro__[1:]):
                yield f"{cls.__name__}.{attr}"


def classes_of(module) -> list[type]:
    return [value for value in vars(module).values() if inspect.isclass(value) and value.__module__ == module.__name__]


def test_no_class_outside_tests_overrides_a_librarys_private_method():
    found = {
        (path, name)
        for path, dotted in production_modules()
        for name in private_overrides(classes_of(importlib.import_module(dotted)))
    }
    offenders = sorted(f"{path} {name}" for path, name in found - KNOWN_OVERRIDES)
    assert not offenders, failure("private methods of libraries overridden outside tests", offenders)
    gone = sorted(f"{path} {name}" for path, name in KNOWN_OVERRIDES - found)
    assert not gone, failure("KNOWN_OVERRIDES lists overrides no class makes any more: remove them", gone)


def test_the_override_check_sees_a_private_override():
    from django.views.generic import View

    class Probe(View):
        def _allowed_methods(self):  # View's own, private
            return []

        def _ours(self):
            return None

    assert list(private_overrides([Probe])) == ["Probe._allowed_methods"]


def is_settings(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "settings"


def setting_changes(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """``settings.X = ...`` (plain, augmented, annotated) and ``setattr``/``delattr(settings, ...)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            if node.args and is_settings(node.args[0]):
                yield node.lineno, ast.unparse(node)
            continue
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Attribute) and is_settings(target.value):
                yield node.lineno, ast.unparse(target)


def test_no_module_outside_tests_assigns_a_setting():
    offenders = [
        f"{path}:{line} {what}"
        for path, tree in parsed().items()
        for line, what in setting_changes(tree)
        if (path, what) not in KNOWN_SETTING_CHANGES
    ]
    assert not offenders, failure("settings changed at run time outside tests", offenders)


def test_the_checks_see_what_they_forbid():
    probe = ast.parse(
        "from psycopg import pq\n"
        "import psycopg.generators\n"
        "from django.db.backends.sqlite3._functions import register\n"
        "from django.db.backends.postgresql.base import ServerBindingCursor\n"
        "from django.db.backends.postgresql import base\n"
        "from django.db.backends.postgresql.base import DatabaseWrapper\n"
        "class W(base.DatabaseWrapper):\n"
        "    def _set_autocommit(self, on):\n"
        "        super()._set_autocommit(on)\n"
        "        self.connection._pipeline\n"
        "        self.ours = self._chartr_kept\n"
        "        model._meta\n"
        "class A:\n"
        "    def _ours(self): pass\n"
        "class B(A):\n"
        "    def _ours(self): super()._ours()\n"
        "settings.DEBUG = True\n"
        "setattr(settings, 'DEBUG', True)\n"
    )
    assert [name for _, name in sorted(internal_imports(probe))] == [
        "psycopg.pq",
        "psycopg.generators",
        "django.db.backends.sqlite3._functions.register",
        "django.db.backends.postgresql.base.ServerBindingCursor",
    ]
    assert [name for _, name in sorted(private_names(probe, {"_chartr_kept"}, methods_by_class([probe])))] == [
        "super()._set_autocommit",
        "self.connection._pipeline",
    ]
    assert [what for _, what in sorted(setting_changes(probe))] == [
        "settings.DEBUG",
        "setattr(settings, 'DEBUG', True)",
    ]
