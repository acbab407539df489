"""View building blocks shared by every app's API, and the schema/docs views."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.views import redirect_to_login
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework import exceptions, serializers, viewsets
from rest_framework.renderers import JSONRenderer

from kernel.api.serializers import INT64_MAX
from kernel.errors import NotFound, PreconditionFailed


def validated(serializer_class, data, *, partial: bool = False) -> dict:
    """Validate a request body with ``serializer_class``; DRF turns failures into a 400."""
    serializer = serializer_class(data=data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def row_id(raw, label: str) -> int:
    """An id from the URL; one no row can have is a 404 before any query runs."""
    value = int(raw)
    if not 1 <= value <= INT64_MAX:
        raise NotFound(f"{label} {raw} does not exist.")
    return value


class ApiViewSet(viewsets.GenericViewSet):
    # No docstring: drf-spectacular would publish it as every operation's description.

    #: Actions that take no request body (``request=None`` in their schema).
    actions_without_body: frozenset[str] = frozenset({"archive", "unarchive"})
    #: Actions that evaluate ``If-Match`` against an ETag; every other one refuses the header with 412.
    if_match_actions: frozenset[str] = frozenset()

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.action is not None:  # an unsupported method gets its 405 first
            self.refuse_if_match_without_etag(request)
            self.refuse_unknown_query_parameters(request)
            if self.action in self.actions_without_body:
                self.refuse_a_body(request)

    def refuse_if_match_without_etag(self, request) -> None:
        # A condition the server cannot check must not be taken as met: the
        # client would believe it guarded a change that nothing guarded.
        if "If-Match" in request.headers and self.action not in self.if_match_actions:
            raise PreconditionFailed(
                "This operation has no entity tag to compare If-Match with; send it without If-Match."
            )

    @staticmethod
    def refuse_a_body(request) -> None:
        # An action without parameters still refuses keys, so a client that
        # thinks it passed an option learns that it did not.
        data = request.data
        if isinstance(data, Mapping):
            if data:
                raise serializers.ValidationError(
                    {str(key)[:100]: ["Unknown field: this action takes no body."] for key in data}
                )
        elif data is not None:
            raise serializers.ValidationError({"non_field_errors": ["This action takes no body, or an empty object."]})

    def known_query_parameters(self) -> set[str]:
        if self.action != "list":
            return set()
        known = {self.paginator.cursor_query_param, self.paginator.limit_query_param}
        if getattr(self, "keyset_orderings", None):
            known.add(self.paginator.ordering_query_param)
        if getattr(self, "filterset_class", None) is not None:
            known |= set(self.filterset_class.base_filters)
        return known

    def refuse_unknown_query_parameters(self, request) -> None:
        # A misspelt filter (?archvied=true) would otherwise quietly list the wrong rows.
        unknown = sorted(set(request.query_params) - self.known_query_parameters())
        if unknown:
            raise serializers.ValidationError({name[:100]: ["Unknown query parameter."] for name in unknown})

    def list_page(self, request):
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class JsonErrorsMixin:
    """For views whose success is not plain JSON (HTML, OpenAPI): refusals keep the JSON envelope."""

    def handle_exception(self, exc):
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)


class SchemaView(JsonErrorsMixin, SpectacularAPIView):
    """The OpenAPI document, JSON by default (``?format=yaml`` for YAML).

    Besides the OpenAPI media types, plain ``application/json`` and
    ``application/yaml``: what generic HTTP clients and generators ask for.
    """

    renderer_classes = [OpenApiJsonRenderer, OpenApiYamlRenderer, OpenApiJsonRenderer2, OpenApiYamlRenderer2]


class DocsView(JsonErrorsMixin, SpectacularSwaggerSplitView):
    """Swagger UI with assets from drf-spectacular-sidecar, served by the app (no CDN).

    The split view serves the page's start-up script at ``?script`` instead of
    inline, and the template has no inline style, so the page works under
    chartr's Content-Security-Policy (settings.SECURE_CSP).
    """

    url_name = "api-schema"
    template_name = "api/docs.html"

    def handle_exception(self, exc):
        # A person opening the page: to the admin's login, and back here after it. A program
        # (it sends a token, or prefers JSON) keeps its 401/403 in the JSON error envelope.
        request = self.request
        a_person = "Authorization" not in request.headers and (
            request.get_preferred_type(["application/json", "text/html"]) == "text/html"
        )
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.PermissionDenied) and a_person:
            response = redirect_to_login(request.get_full_path(), reverse("admin:login"))
        else:
            response = super().handle_exception(exc)
        patch_vary_headers(response, ["Accept"])
        return response

    @extend_schema(exclude=True)  # as the view's own get: the page is not an API operation
    def get(self, request, *args, **kwargs):
        # The page asks for the document as JSON; ``url`` is the view's public setting for it.
        self.url = reverse(self.url_name) + "?format=json"
        return super().get(request, *args, **kwargs)
