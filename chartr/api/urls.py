"""/api/v1/: each app contributes its own urls module."""

from django.urls import include, path

urlpatterns = [
    path("", include("registry.urls")),
    path("", include("snapshots.urls")),
    path("", include("timeline.urls")),
]

# The OpenAPI document and its Swagger UI (assets from drf-spectacular-sidecar).
from chartr.api.views import DocsView, SchemaView  # noqa: E402

urlpatterns += [
    path("schema", SchemaView.as_view(), name="api-schema"),
    path("docs", DocsView.as_view(), name="api-docs"),
]
