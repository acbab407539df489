"""One time zone on every admin page, the operator's, named in the header; the API keeps TIME_ZONE."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db
MOMENT = dt.datetime(2026, 12, 1, 9, 30, 15, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def utc_server(settings):
    settings.TIME_ZONE = "UTC"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture
def agent():
    agent = AgentFactory(agent_id="zoned-agent")
    AgentSnapshot.objects.filter(pk=agent.pk).update(created_at=MOMENT)
    return agent


def test_admin_pages_render_and_name_the_cookies_zone(admin_client, agent):
    admin_client.cookies["chartr_tz"] = "Europe%2FParis"
    for url in (reverse("admin:index"), reverse("admin:snapshots_agentsnapshot_change", args=[agent.pk])):
        html = admin_client.get(url).content.decode()
        assert 'id="chartr-zone" data-zone="Europe/Paris"' in html and "Times in <strong>Europe/Paris</strong>" in html
    page = admin_client.get(reverse("admin:snapshots_agentsnapshot_change", args=[agent.pk])).content.decode()
    assert "2026-12-01 10:30:15 CET" in page and "09:30:15" not in page


def test_tz_parameter_wins_and_a_bad_cookie_falls_back_to_time_zone(admin_client, agent):
    url = reverse("admin:snapshots_agentsnapshot_change", args=[agent.pk])
    admin_client.cookies["chartr_tz"] = "Not/AZone"
    html = admin_client.get(url).content.decode()
    assert "Times in <strong>UTC</strong>" in html and "2026-12-01 09:30:15 UTC" in html
    html = admin_client.get(url + "?tz=America/New_York").content.decode()
    assert "Times in <strong>America/New_York</strong>" in html and "2026-12-01 04:30:15 EST" in html


def test_the_api_answers_in_time_zone_whatever_the_cookie(api, agent):
    api.cookies["chartr_tz"] = "Europe%2FParis"
    body = api.get(f"/api/v1/agents/{agent.pk}").json()
    assert body["created_at"].startswith("2026-12-01T09:30:15")
    assert body["created_at"].endswith(("Z", "+00:00"))


def test_the_login_page_names_the_zone_too(client):
    assert "Times in <strong>UTC</strong>" in client.get(reverse("admin:login")).content.decode()
