from django.apps import AppConfig


class ChartrConfig(AppConfig):
    name = "chartr"
    verbose_name = "chartr"
