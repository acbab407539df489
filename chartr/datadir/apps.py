from django.apps import AppConfig


class DataDirConfig(AppConfig):
    name = "chartr.datadir"
    label = "datadir"
    verbose_name = "Data snapshots"
