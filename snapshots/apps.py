from django.apps import AppConfig


class SnapshotsConfig(AppConfig):
    name = "snapshots"
    verbose_name = "Agents"

    def ready(self) -> None:
        # Agents live under workspaces: the registry archives, restores and
        # counts them through this registration instead of importing snapshots.
        from registry.cascade import register_deletion_counter, register_records_under_workspaces
        from snapshots.cascade import AgentsUnderWorkspaces, count_agents_deleted_with

        register_records_under_workspaces(AgentsUnderWorkspaces())
        register_deletion_counter("agents", count_agents_deleted_with)
