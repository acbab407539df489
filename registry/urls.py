from django.urls import path

from registry.views import ProjectViewSet, WorkspaceViewSet

urlpatterns = []
for prefix, viewset, name in (("projects", ProjectViewSet, "project"), ("workspaces", WorkspaceViewSet, "workspace")):
    urlpatterns += [
        path(prefix, viewset.as_view({"get": "list", "post": "create"}), name=f"{name}-list"),
        path(
            f"{prefix}/<int:id>", viewset.as_view({"get": "retrieve", "patch": "partial_update"}), name=f"{name}-detail"
        ),
        path(f"{prefix}/<int:id>/archive", viewset.as_view({"post": "archive"}), name=f"{name}-archive"),
        path(f"{prefix}/<int:id>/unarchive", viewset.as_view({"post": "unarchive"}), name=f"{name}-unarchive"),
    ]
