"""The fleet search's admin page (timeline/console/fleet_page.py), mounted under /admin/ in chartr/urls.py."""

from django.contrib import admin
from django.urls import path

from timeline.console.fleet_page import fleet_search_view

urlpatterns = [
    path("search/", admin.site.admin_view(fleet_search_view), name="fleet-search-page"),
]
