"""chartr/urls.py: the order of the API's patterns."""

from __future__ import annotations

from django.urls import get_resolver, resolve, reverse

SAMPLE_KWARGS = {"agent_id": "a", "id": 1, "seq": 1}


def api_route_names() -> list[tuple[str, list[str]]]:
    """(name, its URL parameters) of every named route under /api/v1/."""
    api = next(p for p in get_resolver().url_patterns if str(p.pattern) == "api/v1/")
    found = []

    def walk(patterns):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns)
            elif pattern.name:
                found.append((pattern.name, list(pattern.pattern.converters)))

    walk(api.url_patterns)
    return found


def test_the_timeline_is_the_first_pattern_tried():
    # Django tries patterns in order; the API's busiest address (append and page) tries no other first.
    match = resolve("/api/v1/agents/a/timeline")
    assert match.url_name == "agent-timeline"
    assert len(match.tried) == 1, match.tried


def test_every_api_route_still_resolves_to_itself():
    # The order must decide nothing else: no route's address is taken by a pattern before it.
    names = api_route_names()
    assert len(names) > 10
    for name, parameters in names:
        path = reverse(name, kwargs={p: SAMPLE_KWARGS[p] for p in parameters})
        assert resolve(path).url_name == name, (name, path)
