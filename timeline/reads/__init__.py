"""Reads of a committed timeline that need more than ``timeline/selectors.py``: the page statements per
engine (``page_sql``), the newest item and assistant message (``last``), Paseo's projected timeline
(``projection``) and the planner's statistics after a bulk load (``planner_statistics``)."""
