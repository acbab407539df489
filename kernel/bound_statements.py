"""Fixed statements sent straight to libpq, for the append's hot path.

A psycopg cursor's ``execute`` converts the query text, looks the statement up
in the prepared-statement cache, builds a result set and a row maker on every
call: for a statement whose text never changes that is about a third of its
CPU (20 of 60 us per statement, five statements per append). ``run`` does what
is left: psycopg's own transformer dumps the parameters (so values are adapted
exactly as a cursor adapts them), libpq sends them bound apart from the text,
psycopg's wait loop collects the result, and an error result becomes the very
exception psycopg would raise.

It uses two psycopg internals, as the write fence does (``chartr/db_backends/postgresql/fence.py``):
``Connection.wait`` and ``psycopg.generators.execute``. ``available(raw)``
says whether they are there and the connection is in a state they serve (not
in pipeline mode); otherwise callers use a cursor as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import generators, pq
from psycopg.adapt import PyFormat, Transformer

_HAS_INTERNALS = hasattr(psycopg.Connection, "wait") and hasattr(generators, "execute")
_FATAL = pq.ExecStatus.FATAL_ERROR
_TUPLES_OK = pq.ExecStatus.TUPLES_OK


def available(raw: Any) -> bool:
    """Whether ``run`` may serve the psycopg connection ``raw``."""
    return _HAS_INTERNALS and not getattr(raw, "_pipeline", None)


def numbered(sql: str) -> bytes:
    """``sql`` with its ``%s`` placeholders as libpq's ``$1, $2, ...`` (no literal ``%`` in these texts)."""
    parts = sql.split("%s")
    text = parts[0] + "".join(f"${number}{part}" for number, part in enumerate(parts[1:], 1))
    return text.encode()


def _transformer(raw: Any) -> Transformer:
    """One transformer per connection, kept: its dumpers and loaders are looked up once per type."""
    kept = raw.__dict__.get("_chartr_transformer")
    if kept is None:
        kept = raw.__dict__["_chartr_transformer"] = Transformer(raw)
    return kept


def run(raw: Any, query: bytes, params: Sequence[Any], fetch: str | None) -> Any:
    """Send ``query`` with ``params`` on ``raw`` and return ``fetch``'s answer (``fetchone``/``fetchall``) or None."""
    transformer = _transformer(raw)
    with raw.lock:
        dumped = transformer.dump_sequence(params, [PyFormat.AUTO] * len(params))
        raw.pgconn.send_query_params(query, dumped, param_formats=transformer.formats, param_types=transformer.types)
        results = raw.wait(generators.execute(raw.pgconn))
    result = results[-1]
    if result.status == _FATAL:
        raise psycopg.errors.error_from_result(result, encoding=raw.info.encoding)
    if fetch is None:
        return None
    if result.status != _TUPLES_OK:
        raise psycopg.ProgrammingError("the statement returned no rows to fetch")
    transformer.set_pgresult(result)
    if fetch == "fetchone":
        return transformer.load_row(0, tuple) if result.ntuples else None
    return transformer.load_rows(0, result.ntuples, tuple)
