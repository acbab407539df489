from django.urls import path

from snapshots.views import AgentViewSet

urlpatterns = [
    path("agents", AgentViewSet.as_view({"get": "list", "post": "create"}), name="agent-list"),
    path(
        "agents/<str:agent_id>",
        AgentViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="agent-detail",
    ),
    path("agents/<str:agent_id>/registration", AgentViewSet.as_view({"put": "register"}), name="agent-registration"),
    path("agents/<str:agent_id>/heartbeat", AgentViewSet.as_view({"post": "heartbeat"}), name="agent-heartbeat"),
    path("agents/<str:agent_id>/archive", AgentViewSet.as_view({"post": "archive"}), name="agent-archive"),
    path("agents/<str:agent_id>/unarchive", AgentViewSet.as_view({"post": "unarchive"}), name="agent-unarchive"),
]
