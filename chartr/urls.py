from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from chartr import health
from kernel.api.views import DocsView, SchemaView

# /api/v1/: each app contributes its own urls module. Django tries the patterns in order, and
# the timeline's two endpoints take most of the API's traffic: first, no other pattern is tried
# for them (26 of 38 µs of resolving one went to the patterns before them). No two of these patterns
# match the same path, so the order decides nothing else; the OpenAPI document sorts by path.
api_v1 = [
    path("", include("timeline.urls")),
    path("", include("registry.urls")),
    path("", include("snapshots.urls")),
    path("", include("claude_code.urls")),
    # The OpenAPI document and its Swagger UI (assets from drf-spectacular-sidecar).
    path("schema", SchemaView.as_view(), name="api-schema"),
    path("docs", DocsView.as_view(), name="api-docs"),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),  # first, as above: the API is most of the traffic
    # Operators arrive at the root; the admin is what they came for.
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False), name="root"),
    path("admin/", include("datadir.urls")),
    path("admin/", include("timeline.console.urls")),
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
]

# Under /api/ even Django's own error pages keep the JSON error envelope.
handler400 = "kernel.api.errors.bad_request"
handler403 = "kernel.api.errors.permission_denied"
handler404 = "kernel.api.errors.page_not_found"
handler500 = "kernel.api.errors.server_error"
