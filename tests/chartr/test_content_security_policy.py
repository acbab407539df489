"""Every response carries chartr's Content-Security-Policy, and no HTML page needs an exception to it.

The browser test (tests/process/test_admin_browser.py) shows the admin and
Swagger UI work under the policy; this one walks every kind of HTML page
quickly: each has the header and nothing inline (no script without ``src``,
no ``<style>``, no ``style=`` or ``on...=`` attribute) that the policy would block.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from django.conf import settings
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from chartr.middleware import ContentSecurityPolicyMiddleware, content_security_policy
from tests.factories import AgentFactory, ProjectFactory
from timeline.models import TimelineHead, TimelineRow

pytestmark = pytest.mark.django_db

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_STYLE = re.compile(r"<style\b|\sstyle=", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"\son[a-z]+=", re.IGNORECASE)


def assert_strict_html_page(response, status: int = 200) -> str:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    assert response["Content-Security-Policy"] == content_security_policy(settings.SECURE_CSP)
    html = response.content.decode()
    for pattern in (INLINE_SCRIPT, INLINE_STYLE, INLINE_HANDLER):
        assert not pattern.search(html), f"{pattern.pattern!r} matches {pattern.search(html).group(0)!r}"
    return html


def test_the_policy_is_strict():
    policy = content_security_policy(settings.SECURE_CSP)
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ):
        assert directive in policy
    assert "unsafe" not in policy and "*" not in policy


def test_admin_pages_are_strict(client, admin_client):
    assert_strict_html_page(client.get(reverse("admin:login")))
    assert "chartr/admin.css" in assert_strict_html_page(admin_client.get(reverse("admin:index")))
    project = ProjectFactory()
    assert_strict_html_page(admin_client.get(reverse("admin:registry_project_changelist")))
    assert_strict_html_page(admin_client.get(reverse("admin:registry_project_change", args=[project.pk])))
    confirmation = admin_client.post(
        reverse("admin:registry_project_changelist"), {"action": "archive_selected", "_selected_action": [project.pk]}
    )
    assert "confirm" in assert_strict_html_page(confirmation)
    assert_strict_html_page(admin_client.get(reverse("data-snapshots")))


def test_an_agent_page_with_its_timeline_is_strict(admin_client):
    agent = AgentFactory()
    TimelineRow.objects.create(
        agent=agent, seq=1, committed_at=timezone.now(), item_type="user_message", item={"type": "user_message"}
    )
    TimelineHead.objects.filter(pk=agent.pk).update(head_seq=1)
    html = assert_strict_html_page(admin_client.get(reverse("admin:snapshots_agentsnapshot_change", args=[agent.pk])))
    assert 'id="timeline"' in html


def test_the_new_token_page_is_strict(admin_client):
    response = admin_client.post(reverse("admin:tokens_apitoken_add"), {"name": "ci", "_save": "Save"})
    html = assert_strict_html_page(response)
    assert 'id="raw-token"' in html and "chartr/select-token.js" in html


def test_the_api_docs_are_strict(api):
    assert_strict_html_page(api.get("/api/v1/docs"))
    script = api.get("/api/v1/docs?script=")
    assert script["Content-Type"].startswith("application/javascript")


def test_html_error_pages_are_strict(client):
    assert_strict_html_page(client.get("/no-such-page"), status=404)
    assert_strict_html_page(client.get("/admin/", headers={"host": "evil.example"}), status=400)


def test_json_responses_carry_the_same_harmless_policy(api):
    response = api.get("/api/v1/projects")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Security-Policy"] == content_security_policy(settings.SECURE_CSP)
    assert response.json()["results"] == []


def test_a_policy_set_by_the_view_is_kept_and_async_responses_get_one_too():
    request = RequestFactory().get("/")

    def own_policy(request):
        return HttpResponse(headers={"Content-Security-Policy": "default-src 'none'"})

    assert ContentSecurityPolicyMiddleware(own_policy)(request)["Content-Security-Policy"] == "default-src 'none'"

    async def plain(request):
        return HttpResponse()

    response = asyncio.run(ContentSecurityPolicyMiddleware(plain)(request))
    assert response["Content-Security-Policy"] == content_security_policy(settings.SECURE_CSP)
