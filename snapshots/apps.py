from django.apps import AppConfig


class SnapshotsConfig(AppConfig):
    name = "snapshots"
    verbose_name = "Agent snapshots"
