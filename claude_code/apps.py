from django.apps import AppConfig


class ClaudeCodeConfig(AppConfig):
    name = "claude_code"
    verbose_name = "Claude Code sessions"
    default_auto_field = "django.db.models.BigAutoField"
