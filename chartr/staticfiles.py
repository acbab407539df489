"""Static files storage: hashed and compressed once collectstatic has run.

whitenoise's manifest storage refuses to render any page that links a static
file while no manifest exists (with DEBUG off). The test suite and a fresh
checkout run without collectstatic, so until a manifest is present this
storage hands out the plain, unhashed URL instead of raising. The server
entrypoint and the Docker build always collect, so served pages use the
hashed, long-cacheable names.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class ManifestOnceCollectedStorage(CompressedManifestStaticFilesStorage):
    has_manifest = False

    def read_manifest(self):
        content = super().read_manifest()
        self.has_manifest = content is not None
        return content

    def stored_name(self, name: str) -> str:
        if not self.has_manifest:
            return name
        return super().stored_name(name)
