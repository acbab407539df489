from django.urls import path

from claude_code.api import hooks

urlpatterns = [
    path("claude-code/hooks", hooks.hooks, name="claude-code-hooks"),
]
