from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tokens.services import create_api_token


@pytest.fixture
def api() -> APIClient:
    """An API client with a fresh token."""
    _, raw = create_api_token(name="paseo-reads")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client
