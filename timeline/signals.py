"""``timeline_committed`` is sent after an append commits, with ``agent_id``,
``head_seq`` and ``epoch``. It only says "rows up to head_seq exist": live
subscribers always read the rows themselves from the database, so a lost
notification can delay a row but never lose it.
"""

from django.dispatch import Signal

timeline_committed = Signal()
