from django.apps import AppConfig


class ChartrConfig(AppConfig):
    name = "chartr"
    verbose_name = "chartr"

    def ready(self) -> None:
        # Registers the OpenAPI description of the bearer tokens.
        import chartr.api.schema  # noqa: F401
