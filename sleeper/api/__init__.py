"""The user API of a Sleeper table: :class:`~sleeper.api.table.Table` (ingest, scan, properties, metadata, time
travel), :class:`~sleeper.api.scan.Scan` (a planned read, to Arrow, pandas or a file) and the instance's verbs.

This package is what a user of ``sleeper.connect(...)`` is handed. It builds only on the core, the storage and the
features: the runtimes (``sleeper.runtime``) compose it with their own plumbing, never the reverse.
"""
