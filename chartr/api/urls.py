"""/api/v1/: each app contributes its own urls module."""

from django.urls import include, path

urlpatterns = [
    path("", include("registry.urls")),
    path("", include("snapshots.urls")),
    path("", include("timeline.urls")),
]
