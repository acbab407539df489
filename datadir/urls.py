"""The data snapshots page, an admin page outside any model's admin."""

from django.contrib import admin
from django.urls import path

from datadir.views import data_snapshots_view

urlpatterns = [
    path("data-snapshots/", admin.site.admin_view(data_snapshots_view), name="data-snapshots"),
]
