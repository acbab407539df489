from django.urls import path

from timeline import views

urlpatterns = [
    path("agents/<str:agent_id>/timeline", views.AgentTimelineView.as_view(), name="agent-timeline"),
]
