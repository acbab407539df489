"""``timeline_committed`` is sent after an append commits, with ``agent_id``,
``head_seq`` and ``epoch``. It only says "rows up to head_seq exist": live
subscribers always read the rows themselves from the database, so a lost
notification can delay a row but never lose it.
"""

from django.dispatch import Signal

# Both are sent on every append, always by TimelineRow: the receivers are
# looked up once per sender (the cache is dropped on every connect/disconnect).
timeline_committed = Signal(use_caching=True)

#: Sent inside the append's transaction, once its rows and head are written,
#: with the same arguments. A receiver may only do what the transaction's own
#: rollback undoes (the live hub's PostgreSQL transport sends its NOTIFY here:
#: PostgreSQL delivers it at the commit, and never after a rollback).
timeline_committing = Signal(use_caching=True)
