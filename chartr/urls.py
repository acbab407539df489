from django.contrib import admin
from django.urls import include, path

from chartr import health
from chartr.datadir.views import data_snapshots_view

urlpatterns = [
    path("admin/data-snapshots/", admin.site.admin_view(data_snapshots_view), name="data-snapshots"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("chartr.api.urls")),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
]

# Under /api/ even Django's own error pages keep the JSON error envelope.
handler400 = "chartr.api.errors.bad_request"
handler403 = "chartr.api.errors.permission_denied"
handler404 = "chartr.api.errors.page_not_found"
handler500 = "chartr.api.errors.server_error"
