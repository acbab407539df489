from django.apps import AppConfig


class TokensConfig(AppConfig):
    name = "tokens"
    verbose_name = "API tokens"

    def ready(self) -> None:
        # Registers the OpenAPI description of the bearer tokens.
        import tokens.schema  # noqa: F401
