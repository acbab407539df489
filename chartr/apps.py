from django.apps import AppConfig


class ChartrConfig(AppConfig):
    """The project package as an app: its deployment commands (``migrate_safely``,
    ``prepare_server``) and the migration history of the models it once held."""

    name = "chartr"
    verbose_name = "chartr"
