"""API tokens in the admin: created (shown once) and revoked."""

from __future__ import annotations

from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.utils import timezone

from kernel.admin import (
    Confirmation,
    ConfirmationItem,
    ConfirmingAdminMixin,
    ServiceForm,
    ServiceModelAdmin,
    plural,
)
from tokens.models import ApiToken
from tokens.services import create_api_token, revoke_api_token


class TokenStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [("active", "Active"), ("revoked", "Revoked"), ("expired", "Expired")]

    def queryset(self, request, queryset):
        if self.value() == "active":
            return queryset.authenticating()
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=timezone.now())
        return queryset


class ApiTokenAddForm(ServiceForm):
    class Meta:
        model = ApiToken
        fields = ["name", "read_only"]

    def call_service(self):
        token, raw = create_api_token(
            name=self.cleaned_data["name"],
            read_only=self.cleaned_data["read_only"],
            created_by=self.request.user if self.request is not None else None,
        )
        # Only in memory, for the one page that shows it (response_add).
        token.raw_token = raw
        return token


@admin.register(ApiToken)
class ApiTokenAdmin(ConfirmingAdminMixin, ServiceModelAdmin):
    """Tokens are created (shown once) and revoked; nothing else about them changes."""

    add_form = ApiTokenAddForm
    fields = ["name", "prefix", "read_only", "created_at", "created_by", "last_used_at", "expires_at", "revoked_at"]
    readonly_fields = fields
    list_display = [
        "name",
        "prefix",
        "read_only",
        "is_active",
        "created_at",
        "created_by",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    list_select_related = ["created_by"]
    list_filter = [TokenStatusFilter, "read_only"]
    search_fields = ["name", "prefix"]
    date_hierarchy = "created_at"
    actions = ["revoke_selected"]
    change_form_template = "admin/tokens/apitoken/change_form.html"

    @admin.display(description="active", boolean=True, ordering="revoked_at")
    def is_active(self, obj):
        return obj.is_active

    # A token's page is a view page; Revoke is its only write.
    def has_change_permission(self, request, obj=None):
        if obj is not None:
            return False
        return super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None):
        # Revoked tokens stay, so the history of who could reach the API does too.
        return False

    def response_add(self, request, obj, post_url_continue=None):
        context = {
            **self.admin_site.each_context(request),
            "title": "API token created",
            "subtitle": None,
            "opts": self.opts,
            "token": obj,
            "raw_token": obj.raw_token,
        }
        response = TemplateResponse(request, "admin/tokens/apitoken/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    def get_urls(self):
        return [self.object_url("revoke", self.revoke_flow, self.can_revoke), *super().get_urls()]

    def can_revoke(self, request) -> bool:
        return super().has_change_permission(request)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "can_revoke": self.can_revoke(request)}
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.action(permissions=["change"], description="Revoke selected API tokens")
    def revoke_selected(self, request, queryset):
        return self.revoke_flow(request, list(queryset), action_name="revoke_selected")

    def revoke_flow(self, request, tokens: list[ApiToken], *, action_name: str | None):
        return self.confirmation_flow(
            request, tokens, action_name=action_name, preview=self.revoke_confirmation, perform=self.perform_revoke
        )

    def revoke_confirmation(self, tokens: list[ApiToken]) -> Confirmation:
        active = [token for token in tokens if token.revoked_at is None]
        return Confirmation(
            title=f"Revoke {plural(len(active), 'API token')}?" if active else "Nothing to revoke",
            summary=(
                [f"Clients using {'this token' if len(active) == 1 else 'these tokens'} get 401 from then on."]
                if active
                else []
            ),
            confirm_label="Yes, revoke",
            items=[
                ConfirmationItem(
                    str(token),
                    self.change_url(token),
                    "" if token.revoked_at is None else "already revoked; left unchanged",
                )
                for token in tokens
            ],
            can_confirm=bool(active),
        )

    def perform_revoke(self, request, tokens: list[ApiToken]) -> None:
        revoked, unchanged = self.perform_each(
            request,
            tokens,
            service=lambda token: revoke_api_token(token=token),
            changed=bool,
            log_message=lambda _: "Revoked.",
        )
        self.message_user(request, f"Revoked {plural(len(revoked), 'API token')}.", messages.SUCCESS)
        if unchanged:
            self.message_user(
                request, f"{plural(unchanged, 'token was', 'tokens were')} already revoked.", messages.WARNING
            )
