"""Moving a whole instance between databases, of either engine: ``export_instance`` and ``import_instance``.

- ``format``: the instance format (docs/portability.md), its header and a streamed reader;
- ``records``: each kind of record to and from its model;
- ``selectors``: the export's paged reads, the per-agent content hash and the sessions' read-back hash;
- ``export``: ``write_instance``, the streamed writer;
- ``parse``: records read into what the services take;
- ``services``: ``import_instance``, the one write path, through each owning app's services;
- ``verify``: the counts and content hashes checked at the end of an import.

It reads and writes the apps below it and ``legacy``'s and ``claude_code``'s records (docs/architecture.md).
"""
