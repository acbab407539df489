from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "timeline"
    verbose_name = "Timeline"
