"""The database's constraints are SQL any SQLite or PostgreSQL client evaluates (kernel/constraints.py).

A regex lookup compiles to REGEXP on SQLite, a function only Django's connections
define: Python's ``sqlite3`` or the ``sqlite3`` shell then fail ``PRAGMA
integrity_check`` with "unknown function: REGEXP()" on a chartr database.
"""

from __future__ import annotations

import sqlite3

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.db.models import CheckConstraint, Q, UniqueConstraint

from tests.factories import AgentFactory
from tokens.models import ApiToken

from .test_constraints import REFUSED


def lookups_of(condition) -> list[str]:
    """Every lookup named in a Q tree (``"agent_id__regex"`` and the like)."""
    if isinstance(condition, Q):
        return [name for child in condition.children for name in lookups_of(child)]
    if isinstance(condition, tuple):
        return [condition[0]]
    return []


def test_no_constraint_of_any_model_uses_a_regex():
    conditions = [
        (model._meta.label, constraint.name, constraint.condition)
        for model in apps.get_models()
        for constraint in model._meta.constraints
        if isinstance(constraint, CheckConstraint | UniqueConstraint) and constraint.condition is not None
    ]
    assert any(name == "agent_id_valid" for _, name, _ in conditions)
    regexes = [
        (label, name, lookup)
        for label, name, condition in conditions
        for lookup in lookups_of(condition)
        if lookup.endswith(("__regex", "__iregex"))
    ]
    assert regexes == []


@pytest.mark.django_db
def test_the_token_hash_is_64_lowercase_hex_digits_in_the_database():
    ApiToken.objects.create(name="ok", prefix="p", token_hash="0a" * 32)
    for bad in ["A" * 64, "g" * 64, "a" * 63, "a" * 65, "", "a" * 63 + "\n"]:
        with pytest.raises(REFUSED), transaction.atomic():
            ApiToken.objects.create(name="bad", prefix="p", token_hash=bad)
    assert list(ApiToken.objects.values_list("token_hash", flat=True)) == ["0a" * 32]


@pytest.mark.skipif("connection.vendor != 'sqlite'")
@pytest.mark.django_db(transaction=True)
def test_plain_sqlite3_checks_a_migrated_database_with_rows():
    AgentFactory(agent_id="agent-1")
    ApiToken.objects.create(name="t", prefix="p", token_hash="f" * 64)
    plain = sqlite3.connect(connection.settings_dict["NAME"])
    try:
        assert plain.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # The checks run there too: the plain client refuses what chartr refuses.
        with pytest.raises(sqlite3.IntegrityError, match="agent_id_valid"):
            plain.execute("UPDATE snapshots_agentsnapshot SET agent_id = 'has space'")
        with pytest.raises(sqlite3.IntegrityError, match="api_token_hash_is_sha256"):
            plain.execute("UPDATE chartr_apitoken SET token_hash = upper(token_hash)")
        assert plain.execute("SELECT agent_id FROM snapshots_agentsnapshot").fetchall() == [("agent-1",)]
    finally:
        plain.close()
