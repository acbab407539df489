from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "timeline"
    verbose_name = "Timeline"

    def ready(self) -> None:
        # The live hub hears about commits and snapshot changes from any
        # caller (API, admin, commands) and forwards them to other processes.
        from kernel import readiness
        from timeline.live.hub import connect_signals, transport_readiness

        connect_signals()
        # /readyz fails while the transport's service (Redis, the LISTEN connection) is unreachable.
        readiness.register(transport_readiness)
        self.register_with_lower_apps()
        self.give_new_agents_their_heads()

    @staticmethod
    def give_new_agents_their_heads() -> None:
        """Every agent has a timeline head from the transaction that creates it on."""
        from snapshots.signals import agents_created
        from timeline.services import create_timeline_heads

        def created(sender, *, agent_ids, **kwargs) -> None:
            create_timeline_heads(agent_ids=agent_ids)

        agents_created.connect(created, weak=False, dispatch_uid="chartr-timeline-heads")

    @staticmethod
    def register_with_lower_apps() -> None:
        """Registry and snapshots count and show timeline rows without importing the timeline."""
        from registry.cascade import register_deletion_counter
        from snapshots.admin import register_agent_page, register_agent_page_section
        from timeline.admin import AGENT_TIMELINE_TEMPLATE, agent_timeline_section, count_rows_deleted_with
        from timeline.console.request import AGENT_REQUEST_TEMPLATE, agent_request_section
        from timeline.console.timeline_page import agent_timeline_urls

        register_deletion_counter("timeline_rows", count_rows_deleted_with)
        register_agent_page(name="timeline", label="Timeline", urls=agent_timeline_urls)
        register_agent_page_section(template=AGENT_TIMELINE_TEMPLATE, context=agent_timeline_section)
        register_agent_page_section(template=AGENT_REQUEST_TEMPLATE, context=agent_request_section, top=True)
