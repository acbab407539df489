from django.apps import AppConfig


class TokensConfig(AppConfig):
    name = "tokens"
    verbose_name = "API tokens"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        import tokens.schema  # noqa: F401  (registers the OpenAPI description of the bearer tokens)
        from kernel.api.idempotency import register_idempotent_creator
        from tokens.cache import token_cache
        from tokens.models import ApiToken
        from tokens.services import create_idempotently

        def forget_token(sender, instance, **kwargs) -> None:
            # Any edit (read-only flag, revocation through the admin's form) is seen at once in this process.
            token_cache.forget(instance.token_hash)

        post_save.connect(forget_token, sender=ApiToken, dispatch_uid="chartr-token-cache-save", weak=False)
        post_delete.connect(forget_token, sender=ApiToken, dispatch_uid="chartr-token-cache-delete", weak=False)
        register_idempotent_creator(create_idempotently)
