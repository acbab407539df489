"""The timeline row's indexes: each one a query needs, and no more (every append writes each one)."""

from __future__ import annotations

import pytest
from django.db import connection

from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db


def row_constraints() -> dict[str, dict]:
    with connection.cursor() as cursor:
        return connection.introspection.get_constraints(cursor, TimelineRow._meta.db_table)


def test_no_index_on_the_agent_alone_beside_the_agent_seq_unique_index():
    constraints = row_constraints()
    # The (agent, seq) unique index starts with the agent: it serves every lookup by agent.
    assert any(c["unique"] and c["columns"] == ["agent_id", "seq"] for c in constraints.values()), constraints
    assert not [name for name, c in constraints.items() if c["index"] and c["columns"] == ["agent_id"]], constraints
