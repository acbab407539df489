"""The timeline's HTTP API: one module per endpoint group, all on the lean path of ``kernel/api/plain.py``.

``views`` (read and append), ``history`` (Paseo's store writes), ``rows`` (a row updated in place),
``last`` (the newest item and assistant message), ``search`` (the fleet search), ``shapes`` (the wire
shapes) and ``schema`` (their OpenAPI). A new timeline endpoint goes here; its rule goes in
``timeline/services.py`` or ``timeline/writes/`` (writes) and ``timeline/selectors.py`` or
``timeline/reads/`` (reads).
"""
