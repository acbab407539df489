from django.apps import AppConfig


class DataDirConfig(AppConfig):
    name = "datadir"
    label = "datadir"
    verbose_name = "Data snapshots"

    def ready(self) -> None:
        # Destructive writes elsewhere (purge, trim, import, admin delete) snapshot
        # first through kernel.data_snapshots, without importing datadir.
        from datadir.services import take_snapshot_before_write
        from kernel.data_snapshots import register_data_snapshot_taker

        register_data_snapshot_taker(take_snapshot_before_write)
