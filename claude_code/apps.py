from django.apps import AppConfig


class ClaudeCodeConfig(AppConfig):
    name = "claude_code"
    verbose_name = "Claude Code sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The timeline page reads Claude Code records as a conversation (claude_code.console).
        from claude_code.console import shown_items
        from claude_code.services import NAMESPACE
        from timeline.console.foreign import register_translator

        register_translator(NAMESPACE, shown_items)
