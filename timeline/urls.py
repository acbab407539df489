from django.urls import path

from timeline import live_views, views

urlpatterns = [
    path("agents/<str:agent_id>/timeline", views.AgentTimelineView.as_view(), name="agent-timeline"),
    # A plain async view (see timeline/live_views.py); timeline/schema.py documents it.
    path("agents/<str:agent_id>/timeline/stream", live_views.timeline_stream, name="timeline-stream"),
    path(
        "agents/<str:agent_id>/timeline/provisional",
        live_views.ProvisionalView.as_view(),
        name="timeline-provisional",
    ),
]
