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

Where the connection prepares statements (``prepare_threshold`` set in the
database's OPTIONS; Django's default, None, prepares nothing, for connection
poolers in transaction mode), each statement is prepared on the server the
first time it is sent and executed by name from then on: libpq then sends
neither its text nor a Parse, which costs less CPU on both sides (about 33 ->
20 us of the client's per statement, docs/benchmarks.md). It is recorded in
psycopg's own prepared-statement cache, so that psycopg forgets it whenever it
deallocates its own (``DEALLOCATE ALL`` after a rollback, a ``DROP`` or an
``ALTER``), and ``run`` prepares it again.
"""

from __future__ import annotations

import itertools
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


#: Numbers the statements prepared here (``_chartr_<n>``; psycopg's own are ``_pg3_<n>``).
_numbers = itertools.count(1)


def _prepared_name(raw: Any, query: bytes, types: Sequence[int]) -> bytes | None:
    """The name of ``query`` (with these parameter types) prepared on ``raw``'s session,
    preparing it first; None where the connection prepares nothing."""
    manager = getattr(raw, "_prepared", None)
    names = getattr(manager, "_names", None)
    if names is None or manager.prepare_threshold is None:
        return None
    # psycopg's cache key is (query, types); the prefix keeps ours apart from the same text sent by a cursor.
    key = (b"chartr:" + query, tuple(types))
    name = names.get(key)
    if name is None:
        name = f"_chartr_{next(_numbers)}".encode()
        raw.pgconn.send_prepare(name, query, param_types=types)
        _check(raw, raw.wait(generators.execute(raw.pgconn))[-1])
        names[key] = name
    return name


def _check(raw: Any, result: Any) -> None:
    if result.status == _FATAL:
        raise psycopg.errors.error_from_result(result, encoding=raw.info.encoding)


def run(raw: Any, query: bytes, params: Sequence[Any], fetch: str | None) -> Any:
    """Send ``query`` with ``params`` on ``raw`` and return ``fetch``'s answer (``fetchone``/``fetchall``) or None."""
    transformer = _transformer(raw)
    with raw.lock:
        dumped = transformer.dump_sequence(params, [PyFormat.AUTO] * len(params))
        name = _prepared_name(raw, query, transformer.types)
        if name is None:
            raw.pgconn.send_query_params(
                query, dumped, param_formats=transformer.formats, param_types=transformer.types
            )
        else:
            raw.pgconn.send_query_prepared(name, dumped, param_formats=transformer.formats)
        results = raw.wait(generators.execute(raw.pgconn))
    result = results[-1]
    _check(raw, result)
    if fetch is None:
        return None
    if result.status != _TUPLES_OK:
        raise psycopg.ProgrammingError("the statement returned no rows to fetch")
    transformer.set_pgresult(result)
    if fetch == "fetchone":
        return transformer.load_row(0, tuple) if result.ntuples else None
    return transformer.load_rows(0, result.ntuples, tuple)
