"""The live side of the timeline: who is subscribed to which agent, and how news reaches them.

What travels is small: "agent X has committed rows up to seq N", "agents
X, Y changed", or a provisional item. Committed rows themselves are always
read from the database by the subscriber (``stream``), so a lost or late
notification delays a row and never loses it; a one-second poll of
``head_seq``/``version`` for the subscribed agents is the safety net.

Modules, each importing only those listed before it:

* ``messages``: what travels, its wire encoding, and chunking for ``NOTIFY``;
* ``sse``: Server-Sent Events framing of rows and agent states;
* ``reads``: the database reads the stream needs, on a small thread pool;
* ``transports``: one class per way of reaching the other processes
  (``local``, ``postgres``, ``redis``) behind one interface, picked by
  ``CHARTR_LIVE_TRANSPORT``;
* ``hub``: the per-process in-memory fan-out, the process-wide hub, and the
  signal receivers that publish commits and snapshot changes;
* ``stream``: one client's catch-up-then-live handover;
* ``provisional``: the ``publish_provisional`` service;
* ``slots``: the open streams, bounded per worker and per token;
* ``views``: the SSE view and the provisional endpoint.
"""
