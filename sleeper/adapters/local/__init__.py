"""Adapters of the local instance: SQLite and local files."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.adapters.local.batcher_store import SqliteIngestBatcherStore as SqliteIngestBatcherStore
    from sleeper.adapters.local.file_log import FileStateStoreBackend as FileStateStoreBackend
    from sleeper.adapters.local.properties import LocalPropertiesStore as LocalPropertiesStore
    from sleeper.adapters.local.queue import SqliteQueues as SqliteQueues
    from sleeper.adapters.local.sqlite import DatabaseLockedError as DatabaseLockedError
    from sleeper.adapters.local.statestore import SqliteStateStoreBackend as SqliteStateStoreBackend
    from sleeper.adapters.local.table_index import SqliteTableIndex as SqliteTableIndex
    from sleeper.adapters.local.trackers import SqliteCompactionJobTracker as SqliteCompactionJobTracker
    from sleeper.adapters.local.trackers import SqliteIngestJobTracker as SqliteIngestJobTracker
    from sleeper.adapters.local.trackers import SqliteQueryTracker as SqliteQueryTracker
    from sleeper.adapters.local.trackers import SqliteTaskTracker as SqliteTaskTracker


__getattr__, __dir__ = lazy_face(__name__, __file__)
