"""A URL configuration where the timeline's address is the live stream's view (tests/chartr/test_asgi.py)."""

from django.urls import path

from timeline.live.views import timeline_stream

urlpatterns = [path("api/v1/agents/<str:agent_id>/timeline", timeline_stream)]
