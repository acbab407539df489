from django.apps import AppConfig


class DataDirConfig(AppConfig):
    name = "datadir"
    label = "datadir"
    verbose_name = "Data snapshots"

    def ready(self) -> None:
        # Destructive writes elsewhere (purge, trim, import, admin delete) snapshot
        # first through kernel.checkpoints, without importing datadir.
        from datadir.services import take_checkpoint_snapshot
        from kernel.checkpoints import register_checkpoint_taker

        register_checkpoint_taker(take_checkpoint_snapshot)
