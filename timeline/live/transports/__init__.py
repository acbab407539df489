"""How a process's live messages reach the other processes: one class per backend.

Every backend implements :class:`~timeline.live.transports.base.LiveTransport`;
:func:`~timeline.live.transports.factory.make_transport` picks one from
``CHARTR_LIVE_TRANSPORT``, the way Django picks a session backend from a
dotted path, so only the chosen backend's client library is imported.
"""
