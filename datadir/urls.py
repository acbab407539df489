"""The data snapshots pages, admin pages outside any model's admin."""

from django.contrib import admin
from django.urls import path

from datadir.views import data_snapshots_view, restore_view

urlpatterns = [
    path("data-snapshots/", admin.site.admin_view(data_snapshots_view), name="data-snapshots"),
    path(
        "data-snapshots/<str:name>/restore/",
        admin.site.admin_view(restore_view),
        name="data-restore",
    ),
]
