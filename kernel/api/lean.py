"""An ``APIView`` whose per-request set-up is cheap when the request is plain.

DRF's ``dispatch`` is kept whole: authentication, the permission and throttle
checks, the one exception handler and ``finalize_response`` all run as they
do for every other view. What changes is the work DRF does to reach the same
answers when the request is the common one (docs/benchmarks.md):

* **content negotiation**: with one renderer and an ``Accept`` that is absent,
  ``*/*`` or exactly the renderer's media type (and no ``?format=``), DRF
  parses the header into media types and ranks them only to choose that
  renderer and its own media type; here that choice is made directly. Any
  other ``Accept`` (a list, parameters, ``text/html``) takes DRF's negotiation,
  406 included;
* **the body's parser**: a ``Content-Type`` that is exactly the one parser's
  media type picks it without DRF's media-type matching; anything else
  (parameters, another type, none) takes DRF's ``_parse``, 415 included.

(Caching the ``Allow`` header's method list per class was tried and dropped: it
depends on the instance, which ``as_view`` gives a ``head`` only once set up.)

``tests/timeline/test_lean_api.py`` sends every kind of request through such a
view and through plain DRF, and compares status, headers and body.
"""

from __future__ import annotations

from django.http import QueryDict
from django.utils.datastructures import MultiValueDict
from rest_framework.request import Request
from rest_framework.views import APIView


class LeanRequest(Request):
    """DRF's ``Request``; a body of exactly the one parser's media type goes straight to that parser."""

    def _parse(self):
        parsers = self.parsers
        if len(parsers) != 1 or self.content_type != parsers[0].media_type or self._request._read_started:
            return super()._parse()
        stream = self.stream
        if stream is None:
            return super()._parse()
        try:
            parsed = parsers[0].parse(stream, parsers[0].media_type, self.parser_context)
        except Exception:
            # What DRF's _parse leaves behind when its parser raises.
            self._data = QueryDict("", encoding=self._request._encoding)
            self._files = MultiValueDict()
            self._full_data = self._data
            raise
        try:
            return parsed.data, parsed.files
        except AttributeError:
            return parsed, MultiValueDict()


class LeanApiView(APIView):
    # No docstring: drf-spectacular would publish it as every operation's description.

    def initialize_request(self, request, *args, **kwargs):
        parser_context = self.get_parser_context(request)
        return LeanRequest(
            request,
            parsers=self.get_parsers(),
            authenticators=self.get_authenticators(),
            negotiator=self.get_content_negotiator(),
            parser_context=parser_context,
        )

    def perform_content_negotiation(self, request, force=False):
        renderer_classes = self.renderer_classes
        if (
            len(renderer_classes) == 1
            and self.format_kwarg is None
            and request._request.META.get("HTTP_ACCEPT", "*/*") in ("*/*", renderer_classes[0].media_type)
            and not asks_for_a_format(request._request, self.settings.URL_FORMAT_OVERRIDE)
        ):
            return renderer_classes[0](), renderer_classes[0].media_type
        return super().perform_content_negotiation(request, force)


def asks_for_a_format(request, parameter: str) -> bool:
    """Whether the query names ``?<parameter>=``; without a query string Django's ``GET`` is not built for it."""
    return bool(request.META.get("QUERY_STRING")) and parameter in request.GET
