from django.contrib import admin
from django.urls import include, path

from chartr import health

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("chartr.api.urls")),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
]
