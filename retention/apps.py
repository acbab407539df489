from django.apps import AppConfig


class RetentionConfig(AppConfig):
    """Purging archived records and trimming timelines: destructive, previewed, snapshotted first."""

    name = "retention"
    verbose_name = "Retention"
