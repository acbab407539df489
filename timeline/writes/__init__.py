"""How rows enter and leave a committed timeline, behind ``timeline/services.py``.

The append's head and SQL (``head``, ``append_sql``, ``group_commit``, ``idempotency``), Paseo's store
writes (``history``: rows at their own seqs, a whole history replaced, backfill), row updates
(``revisions``), a timeline carried over whole (``carried``), trimming and purging (``pruning``) and the
growth counters (``counters``).
"""
