"""The live transports: which backend each setting picks, and a dead one never stalls a publisher."""

from __future__ import annotations

import asyncio
import time

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.test import override_settings

from timeline.live.hub import Hub
from timeline.live.messages import Committed
from timeline.live.transports.base import LiveTransport
from timeline.live.transports.factory import default_channel_name, make_transport, transport_name
from timeline.live.transports.local import LocalTransport
from timeline.live.transports.postgres import PostgresTransport
from timeline.live.transports.redis import RedisTransport


@pytest.mark.parametrize(
    "setting, transport_class",
    [("local", LocalTransport), ("postgres", PostgresTransport), ("redis", RedisTransport)],
)
def test_each_named_transport_picks_its_class(setting, transport_class):
    with override_settings(CHARTR_LIVE_TRANSPORT=setting, CHARTR_REDIS_URL="redis://127.0.0.1:6379/0"):
        assert transport_name() == setting
        transport = make_transport(origin="o1")
    assert type(transport) is transport_class and transport.name == setting
    assert (transport.origin, transport.channel_name) == ("o1", default_channel_name())


@override_settings(CHARTR_LIVE_TRANSPORT="auto", CHARTR_REDIS_URL="redis://127.0.0.1:6379/0")
def test_auto_prefers_redis_when_it_is_configured():
    assert type(make_transport(origin="o")) is RedisTransport


@override_settings(CHARTR_LIVE_TRANSPORT="auto", CHARTR_REDIS_URL="")
def test_auto_without_redis_follows_the_database(monkeypatch):
    monkeypatch.setattr(connections["default"], "vendor", "sqlite")
    assert transport_name() == "local" and type(make_transport(origin="o")) is LocalTransport
    monkeypatch.setattr(connections["default"], "vendor", "postgresql")
    assert transport_name() == "postgres" and type(make_transport(origin="o")) is PostgresTransport


@override_settings(CHARTR_LIVE_TRANSPORT="carrier-pigeon")
def test_an_unknown_name_is_refused_not_taken_for_local():
    with pytest.raises(ImproperlyConfigured, match="CHARTR_LIVE_TRANSPORT='carrier-pigeon'"):
        make_transport(origin="o")


@override_settings(CHARTR_LIVE_CHANNEL="")
def test_the_channel_is_derived_from_the_database_unless_configured():
    derived = default_channel_name()
    assert derived.startswith("chartr_live_") and derived == default_channel_name()
    with override_settings(CHARTR_LIVE_CHANNEL="mine"):
        assert default_channel_name() == "mine"
        assert make_transport("local", origin="o").channel_name == "mine"


def test_the_hub_builds_its_transport_from_a_name_or_takes_one():
    hub = Hub(transport="local")
    assert type(hub.transport) is LocalTransport and hub.transport.origin == hub.origin
    hub.db.shutdown()
    given = LocalTransport(channel_name="c", origin="elsewhere")
    hub = Hub(transport=given)
    assert hub.transport is given
    hub.db.shutdown()


def test_every_transport_implements_the_interface():
    for transport_class in (LocalTransport, PostgresTransport, RedisTransport):
        assert issubclass(transport_class, LiveTransport)
        transport_class(channel_name="c", origin="o")  # nothing abstract left


def test_the_local_transport_is_connected_as_soon_as_started():
    async def scenario():
        transport = LocalTransport(channel_name="c", origin="o")
        assert transport.connected is None
        transport.start(asyncio.get_running_loop(), receive=lambda payload: None, on_connect=lambda: None)
        assert transport.connected.is_set()
        transport.publish(Committed("a", 1, "e"))  # goes nowhere, raises nothing
        await transport.aclose()

    asyncio.run(scenario())


@override_settings(CHARTR_REDIS_URL="redis://127.0.0.1:1/0")
def test_an_unreachable_transport_never_fails_or_stalls_the_publisher():
    hub = Hub(transport="redis")
    started = time.monotonic()
    hub.publish(Committed("a", 1, "e"))  # refused connection: logged, not raised
    first = time.monotonic() - started
    started = time.monotonic()
    for _ in range(20):
        hub.publish(Committed("a", 1, "e"))
    assert time.monotonic() - started < 0.5, "later publishes skip the dead transport for a while"
    assert first < 5
    hub.db.shutdown()
