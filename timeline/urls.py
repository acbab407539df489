from django.urls import path

from timeline import views

urlpatterns = [
    path("agents/<str:agent_id>/timeline", views.AgentTimelineView.as_view(), name="agent-timeline"),
]

# --- Live side: the SSE stream and provisional updates (timeline/live_views.py) ---
from timeline import live_views  # noqa: E402

urlpatterns += [
    path("agents/<str:agent_id>/timeline/stream", live_views.timeline_stream, name="timeline-stream"),
    path(
        "agents/<str:agent_id>/timeline/provisional",
        live_views.ProvisionalView.as_view(),
        name="timeline-provisional",
    ),
]
