from django.apps import AppConfig


class DataDirConfig(AppConfig):
    name = "datadir"
    label = "datadir"
    verbose_name = "Data snapshots"
