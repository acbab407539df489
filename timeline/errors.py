"""The timeline's own refusals (the shared ones are in ``kernel.errors``)."""

from __future__ import annotations

from kernel.errors import ChartrError, Conflict, NotFound


class SeqConflict(Conflict):
    """An append's expected_head_seq no longer matches; ``extra`` carries the current head."""

    code = "seq_conflict"


class ItemConflict(Conflict):
    """An ``item_id`` already committed with other content; ``extra`` carries its ``item_id`` and ``seq``."""

    code = "item_conflict"


class StreamCapacity(ChartrError):
    """The worker holds as many open streams as it may (`CHARTR_MAX_STREAMS`); retry after `Retry-After`."""

    code = "stream_capacity"
    status = 503
    retry_after = 2


class TooManyStreams(ChartrError):
    """The token holds as many open streams as it may on this worker (`CHARTR_MAX_STREAMS_PER_TOKEN`)."""

    code = "too_many_streams"
    status = 429
    retry_after = 5


class TooManyRows(ChartrError):
    """A read of every row (``limit=0``) whose window holds more than ``CHARTR_TIMELINE_READ_ALL_MAX_ROWS``."""

    code = "too_many_rows"
    status = 400

    @classmethod
    def for_window(cls, max_rows: int) -> TooManyRows:
        return cls(
            f"The window holds more than {max_rows} rows (CHARTR_TIMELINE_READ_ALL_MAX_ROWS): "
            "read it in pages with a limit between 1 and 1000.",
            extra={"setting": "CHARTR_TIMELINE_READ_ALL_MAX_ROWS", "max_rows": max_rows},
        )


class RowNotFound(NotFound):
    """The agent exists but holds no row at that seq (never had one, or it was pruned);
    ``extra`` carries the ``seq`` asked for and the agent's ``min_seq`` and ``head_seq``."""

    code = "row_not_found"
