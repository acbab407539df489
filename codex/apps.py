from django.apps import AppConfig


class CodexConfig(AppConfig):
    name = "codex"
    verbose_name = "Codex CLI histories"

    def ready(self) -> None:
        from codex.console import shown_items
        from timeline.console.foreign import register_translator

        register_translator("codex", shown_items)
