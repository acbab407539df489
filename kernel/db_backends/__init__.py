"""Django's SQLite and PostgreSQL backends, with foreign-key cascades held by the database.

Django 5.2 emulates ``on_delete=CASCADE`` in Python and creates plain foreign
keys. chartr wants the database to hold the cascade itself, so a delete made
outside the ORM (an operator's SQL, a restore script) cannot orphan rows.
These backends add ``ON DELETE CASCADE`` to every foreign key whose field
says ``on_delete=models.CASCADE``; everything else is Django's own.
"""

from __future__ import annotations

from django.db import models

_REFERENCES = "(%(to_column)s)"


def _with_cascade(template: str | None, field) -> str | None:
    if not template or field is None or getattr(field, "remote_field", None) is None:
        return template
    if field.remote_field.on_delete is not models.CASCADE:
        return template
    return template.replace(_REFERENCES, _REFERENCES + " ON DELETE CASCADE", 1)


class CascadingForeignKeysMixin:
    """Remembers which field the schema editor is rendering and adapts the FK templates to it.

    ``table_sql`` and ``add_field`` call ``column_sql(model, field)`` just before
    they read the inline FK template for that same field; PostgreSQL's separate
    constraint goes through ``_create_fk_sql(model, field, ...)``.
    """

    _rendering_field = None

    def column_sql(self, model, field, include_default=False):
        self._rendering_field = field
        return super().column_sql(model, field, include_default)

    def _create_fk_sql(self, model, field, suffix):
        self._rendering_field = field
        return super()._create_fk_sql(model, field, suffix)

    @property
    def sql_create_inline_fk(self):
        return _with_cascade(super().sql_create_inline_fk, self._rendering_field)

    @property
    def sql_create_column_inline_fk(self):
        return _with_cascade(super().sql_create_column_inline_fk, self._rendering_field)

    @property
    def sql_create_fk(self):
        return _with_cascade(super().sql_create_fk, self._rendering_field)
