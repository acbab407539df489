"""Middleware adapted so that, under ASGI, a request runs the whole stack on the event loop.

Django adapts a sync-only middleware by hopping to a worker thread and back
for every request, which cost several milliseconds per API call (measured in
bench/timeline_bench.py). With every middleware async-capable, the only hop
left is the one into the (sync) DRF view itself.
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
