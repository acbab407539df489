from django.urls import path

from timeline.api import history as history_views
from timeline.api import last as last_views
from timeline.api import rows as row_views
from timeline.api import search as search_views
from timeline.api import views
from timeline.live import tickets as live_tickets
from timeline.live import views as live_views

urlpatterns = [
    path("agents/<str:agent_id>/timeline", views.agent_timeline, name="agent-timeline"),
    # A plain async view (timeline/live/views.py), documented from the declaration beside it (openapi.py).
    path("agents/<str:agent_id>/timeline/stream", live_views.timeline_stream, name="timeline-stream"),
    path("agents/<str:agent_id>/timeline/stream-tickets", live_tickets.stream_tickets, name="timeline-stream-tickets"),
    path("agents/<str:agent_id>/timeline/rows/<int:seq>", row_views.timeline_row, name="timeline-row"),
    path(
        "agents/<str:agent_id>/timeline/provisional",
        live_views.provisional,
        name="timeline-provisional",
    ),
    path("search", search_views.fleet_search, name="fleet-search"),
    # Paseo's bulkInsert and backfill (timeline/api/history.py).
    path("agents/<str:agent_id>/timeline/rows", history_views.timeline_rows, name="timeline-rows"),
    path("agents/<str:agent_id>/timeline/backfill", history_views.backfill, name="timeline-backfill"),
    path(
        "agents/<str:agent_id>/timeline/backfill/complete",
        history_views.backfill_complete,
        name="timeline-backfill-complete",
    ),
    path("agents/<str:agent_id>/timeline/last-item", last_views.last_item, name="timeline-last-item"),
    path(
        "agents/<str:agent_id>/timeline/last-assistant-message",
        last_views.last_assistant_message,
        name="timeline-last-assistant-message",
    ),
    path("agents/<str:agent_id>/timeline/user-messages", last_views.user_messages, name="timeline-user-messages"),
]
