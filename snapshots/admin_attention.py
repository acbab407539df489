"""Clear attention in the admin: a button on the agent's page and a list action, each through a
confirmation page stating the change, then ``snapshots.services.clear_attention`` for each agent
(logged in the admin history), then the counts."""

from __future__ import annotations

import datetime as dt

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils import timezone
from django.utils.timesince import timesince

from kernel.admin import Confirmation, ConfirmationItem, plural
from snapshots import services
from snapshots.models import AgentSnapshot


def attention_phrase(reason: str | None, at: dt.datetime | None) -> str:
    """ "for permission since 2026-12-03 10:00:00 UTC (3 hours ago)", or "for no reason given since ..."."""
    if at is None:
        return f"for {reason or 'no reason given'} since an unknown time"
    return (
        f"for {reason or 'no reason given'} since {timezone.localtime(at):%Y-%m-%d %H:%M:%S %Z} ({timesince(at)} ago)"
    )


class ClearAttentionMixin:
    """For ``AgentSnapshotAdmin`` (a ``ConfirmingAdminMixin``): the flow, its URL and its action."""

    def can_clear_attention(self, request: HttpRequest) -> bool:
        """Clearing attention is a change to the agent: the model's change permission."""
        return self.has_change_permission(request)

    def clear_attention_url(self):
        return self.object_url("clear_attention", self.clear_attention_flow, self.can_clear_attention)

    @admin.action(permissions=["change"], description="Clear attention on selected %(verbose_name_plural)s")
    def clear_attention_selected(self, request, queryset):
        return self.clear_attention_flow(request, list(queryset), action_name="clear_attention_selected")

    def clear_attention_flow(self, request: HttpRequest, objs: list, *, action_name: str | None):
        return self.confirmation_flow(
            request,
            objs,
            action_name=action_name,
            preview=self.clear_attention_confirmation,
            perform=self.perform_clear_attention,
        )

    def clear_attention_confirmation(self, objs: list[AgentSnapshot]) -> Confirmation:
        items, targets = [], []
        for agent in objs:
            url = self.change_url(agent)
            if agent.is_archived:
                items.append(ConfirmationItem(str(agent), url, "archived; left unchanged (unarchive it first)"))
            elif not agent.requires_attention:
                items.append(ConfirmationItem(str(agent), url, "needs no attention; left unchanged"))
            else:
                targets.append(agent)
                phrase = attention_phrase(agent.attention_reason, agent.attention_at)
                items.append(ConfirmationItem(str(agent), url, f"needs attention {phrase}; clears it"))
        summary = []
        if len(targets) == 1:
            agent = targets[0]
            summary.append(
                f"Clearing attention on agent “{agent}” marks it as needing no attention: it now needs attention "
                f"{attention_phrase(agent.attention_reason, agent.attention_at)}, and its reason and time are emptied."
            )
        elif targets:
            summary.append(
                f"Clearing attention on {plural(len(targets), 'agent')} marks each as needing no attention, "
                "its reason and time emptied."
            )
        if targets:
            summary.append(
                "Each gets a new version and every client following it an agent event; "
                "its lifecycle, timeline and other fields stay as they are."
            )
        return Confirmation(
            title=f"Clear attention on {plural(len(targets), 'agent')}?" if targets else "No attention to clear",
            summary=summary,
            confirm_label="Yes, clear attention",
            items=items,
            can_confirm=bool(targets),
        )

    def perform_clear_attention(self, request: HttpRequest, objs: list[AgentSnapshot]) -> None:
        results, unchanged = self.perform_each(
            request,
            objs,
            service=lambda agent: services.clear_attention(agent=agent),
            changed=lambda result: result.changed,
            log_message=lambda result: (
                f"Cleared attention (it needed attention {attention_phrase(result.reason, result.since)})."
            ),
        )
        if results:
            self.message_user(request, f"Cleared attention on {plural(len(results), 'agent')}.", messages.SUCCESS)
        if unchanged:
            self.message_user(
                request, f"{plural(unchanged, 'agent')} needed no attention; left unchanged.", messages.WARNING
            )
