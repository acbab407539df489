from django.urls import path

from claude_code.api import hooks, views

urlpatterns = [
    path("claude-code/sessions", views.sessions, name="claude-code-sessions"),
    path("claude-code/summaries", views.summaries, name="claude-code-summaries"),
    path("claude-code/session", views.session, name="claude-code-session"),
    path("claude-code/session/entries", views.session_entries, name="claude-code-entries"),
    path("claude-code/session/subkeys", views.subkeys, name="claude-code-subkeys"),
    path("claude-code/session/summary", views.summary, name="claude-code-summary"),
    path("claude-code/hooks", hooks.hooks, name="claude-code-hooks"),
]
