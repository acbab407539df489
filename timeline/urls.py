urlpatterns: list = []

# --- Live side: the SSE stream and provisional updates (timeline/live_views.py) ---
from django.urls import path as _live_path  # noqa: E402

from timeline import live_views  # noqa: E402

urlpatterns += [
    _live_path("agents/<str:agent_id>/timeline/stream", live_views.timeline_stream, name="timeline-stream"),
    _live_path(
        "agents/<str:agent_id>/timeline/provisional",
        live_views.ProvisionalView.as_view(),
        name="timeline-provisional",
    ),
]
