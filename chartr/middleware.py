"""Middleware that works in both modes.

chartr/asgi.py sends only the live stream through Django's ASGI handler (the
rest runs on its WSGI handler). For those requests a sync-only middleware
would make Django hop to a worker thread and back before the async view even
starts; with every middleware async-capable the stream's view is reached on
the event loop. Under WSGI the classes behave exactly like their parents.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, able to run in async mode too; files are served exactly as WhiteNoise serves them."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response=None):
        super().__init__(get_response)
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def _static_file(self, request):
        if self.autorefresh:
            return self.find_file(request.path_info)
        return self.files.get(request.path_info)

    def __call__(self, request):
        if self.async_mode:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request):
        static_file = self._static_file(request)
        if static_file is not None:
            # Opening the file and stat-ing it block, so they run off the loop.
            return await sync_to_async(self.serve)(static_file, request)
        return await self.get_response(request)
