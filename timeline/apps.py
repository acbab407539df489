from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "timeline"
    verbose_name = "Timeline"

    def ready(self) -> None:
        # The live hub hears about commits and snapshot changes from any
        # caller (API, admin, commands) and forwards them to other processes.
        from timeline.live.hub import connect_signals

        connect_signals()
