from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("chartr.api.urls")),
]

# Under /api/ even Django's own error pages keep the JSON error envelope.
handler400 = "chartr.api.errors.bad_request"
handler403 = "chartr.api.errors.permission_denied"
handler404 = "chartr.api.errors.page_not_found"
handler500 = "chartr.api.errors.server_error"
