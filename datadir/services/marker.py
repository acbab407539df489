"""A cheap answer to "has anything changed since the newest snapshot?" (``snapshot --if-changed``).

Hashing a dump would answer it exactly, at the price of a dump. The marker
reads what writes leave behind instead:

- per model: the row count, the largest integer primary key, the newest
  ``updated_at`` and the sum of ``version``, where the model has them. An
  insert moves the count or the largest key, a delete the count, an update
  ``updated_at`` or ``version``;
- the data dir's own files: size and modification time, as the snapshot's
  manifest records them.

Heartbeats (``last_seen_at``) and token last-use times move none of these on
purpose: liveness is not data worth a snapshot of its own.

The marker is computed before the dump and stored in the manifest, so a write
racing the snapshot makes the next ``--if-changed`` take another rather than
miss it.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db import models
from django.db.models import Count, Max, Sum

from datadir import store
from datadir.backends.base import DatabaseBackend
from datadir.services.files import scan_data_files

MARKER_KEY = "change_marker"


def _model_marker(model: type[models.Model]) -> list[Any]:
    fields = {field.name: field for field in model._meta.concrete_fields}
    aggregates: dict[str, Any] = {"rows": Count("pk")}
    if isinstance(model._meta.pk, models.AutoField | models.BigAutoField | models.IntegerField):
        aggregates["max_pk"] = Max("pk")
    if isinstance(fields.get("updated_at"), models.DateTimeField):
        aggregates["updated"] = Max("updated_at")
    if isinstance(fields.get("version"), models.IntegerField):
        aggregates["versions"] = Sum("version")
    values = model._base_manager.aggregate(**aggregates)
    return [str(values[name]) if values[name] is not None else None for name in sorted(values)]


def change_marker(backend: DatabaseBackend) -> dict[str, Any]:
    """The marker of the live database and data files, JSON-ready."""
    database = {
        model._meta.label_lower: _model_marker(model)
        for model in sorted(apps.get_models(), key=lambda m: m._meta.label_lower)
        if model._meta.managed and not model._meta.proxy
    }
    files = {rel: [st.st_size, st.st_mtime_ns] for rel, st in scan_data_files(store.data_dir(), backend).items()}
    return {"database": database, "files": files}


def unchanged_since(manifest: dict[str, Any], marker: dict[str, Any]) -> bool:
    """True when ``manifest`` was taken with exactly this marker (snapshots older than markers never match)."""
    return manifest.get(MARKER_KEY) == marker
