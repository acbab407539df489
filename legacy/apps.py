from django.apps import AppConfig


class LegacyConfig(AppConfig):
    name = "legacy"
    verbose_name = "Legacy import"
