"""The real URLs plus two views that fail, to test the 500 contract."""

from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from chartr.urls import handler400, handler403, handler404, handler500  # noqa: F401
from chartr.urls import urlpatterns as real_urlpatterns

SECRET = "secret-internal-detail-/etc/chartr"


class BoomView(APIView):
    def get(self, request):
        raise RuntimeError(SECRET)

    def post(self, request):
        return Response({"seen": request.data})


def django_boom(request):
    raise RuntimeError(SECRET)


urlpatterns = [
    path("api/v1/test-boom", BoomView.as_view()),
    path("api/v1/test-django-boom", django_boom),
    *real_urlpatterns,
]
