"""No CDN: every script, stylesheet, icon and image the admin pages load is served by chartr itself."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.contrib import admin
from django.urls import reverse

from tests.factories import AgentFactory
from timeline.services import NewTimelineItem, append_timeline_items

pytestmark = pytest.mark.django_db

#: (tag, attribute) pairs through which a page makes the browser fetch something.
ASSET_ATTRIBUTES = {
    ("script", "src"),
    ("link", "href"),
    ("img", "src"),
    ("source", "src"),
    ("iframe", "src"),
    ("image", "href"),
    ("use", "href"),
    ("object", "data"),
    ("embed", "src"),
    ("video", "src"),
}


class AssetCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if (tag, name) in ASSET_ATTRIBUTES and value:
                self.urls.append(value)
            elif name == "srcset" and value:
                self.urls += [candidate.split()[0] for candidate in value.split(",") if candidate.strip()]
            elif name == "style" and value:
                self.urls += [found.strip("'\"") for found in re.findall(r"url\(([^)]*)\)", value)]


def is_served_by_chartr(url: str) -> bool:
    """A path on this server (or an in-page fragment), never another origin."""
    return url.startswith(("/", "#")) and not url.startswith("//")


def admin_pages(agent) -> list[str]:
    pages = [reverse("admin:index"), reverse("data-snapshots")]
    for model in admin.site._registry:
        opts = model._meta
        pages.append(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    pages += [
        reverse("admin:snapshots_agentsnapshot_change", args=[agent.pk]),
        reverse("admin:snapshots_agentsnapshot_timeline", args=[agent.pk]),
        reverse("admin:registry_project_add"),
    ]
    return pages


def test_every_asset_of_the_admin_pages_is_served_by_chartr(admin_client, client):
    agent = AgentFactory()
    append_timeline_items(
        agent_id=agent.pk,
        items=[NewTimelineItem(item={"type": "tool_call", "callId": "c", "name": "bash", "status": "running"})],
    )
    responses = {url: admin_client.get(url) for url in admin_pages(agent)}
    responses["/admin/login/"] = client.get("/admin/login/")
    seen = 0
    for url, response in responses.items():
        assert response.status_code == 200, url
        collector = AssetCollector()
        collector.feed(response.content.decode())
        foreign = [asset for asset in collector.urls if not is_served_by_chartr(asset)]
        assert not foreign, f"{url} loads {foreign}"
        seen += len(collector.urls)
    assert seen > 50, "the pages' assets were found"
