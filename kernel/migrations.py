"""Helpers for migrations that move a model between apps without moving its table."""

from __future__ import annotations


def move_content_type(*, model: str, from_app: str, to_app: str):
    """A RunPython pair that relabels a model's content type, so its permissions,
    group grants and admin log entries follow the model instead of being orphaned."""

    def forwards(apps, schema_editor):
        _relabel(apps, model=model, old=from_app, new=to_app)

    def backwards(apps, schema_editor):
        _relabel(apps, model=model, old=to_app, new=from_app)

    return forwards, backwards


def _relabel(apps, *, model: str, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    if content_type.objects.filter(app_label=new, model=model).exists():
        return
    content_type.objects.filter(app_label=old, model=model).update(app_label=new)
