"""Changes to moto's server that keep an emulated instance's requests from costing more as it runs.

moto is built to answer tests of a few items; an emulated instance runs the whole system for as long as its user
likes, and its trackers gain items with every job. Three things made a long run slower and slower:

* :func:`keep_moto_service_list`: routing a request listed moto's own package directory, on every request;
* :func:`count_cluster_tasks` (a fix more than a speedup): ECS DescribeClusters counted no Fargate task, so task
  creators started a task per queued job on every run;
* :func:`query_by_hash_key`: a DynamoDB Query of a table (not of an index) sorted every item of the table, of every
  hash key, before keeping those of the queried key: 7 ms per query of a 1,000-item table, 38 ms at 5,000 items and
  141 ms at 20,000 (measured on this machine), so a run's job trackers made each of its later polls slower.

:func:`speed_up_moto` applies them all; each is applied once per process, and only in a process that runs a moto server
for an emulated instance or for tests. Only :func:`count_cluster_tasks` changes what moto answers, to what ECS answers.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["count_cluster_tasks", "keep_moto_service_list", "query_by_hash_key", "speed_up_moto"]


def speed_up_moto() -> None:
    """Applies every change of this module (each once per process)."""
    keep_moto_service_list()
    query_by_hash_key()
    count_cluster_tasks()


def count_cluster_tasks() -> None:
    """Makes moto's ECS DescribeClusters count a cluster's tasks as ECS does.

    moto counts only tasks placed on container instances in ``runningTasksCount`` and never Fargate tasks, so
    ``pendingTasksCount + runningTasksCount`` (what Sleeper's task creators read to decide how many tasks to start)
    stayed 0 however many tasks waited: every scheduled run started another task for every queued job, and an emulated
    race of 2,000 ingests had 1,248 compaction tasks waiting to run while the pump ran 3 at a time (each round
    described them all). Here a described cluster's ``runningTasksCount`` is its tasks whose desired status is
    RUNNING (ECS's running and pending tasks; the pump stops a task when its process ends), and its
    ``pendingTasksCount`` 0.
    """
    from moto.ecs.models import EC2ContainerServiceBackend

    if getattr(EC2ContainerServiceBackend.describe_clusters, "_counts_tasks", False):
        return
    original = EC2ContainerServiceBackend.describe_clusters

    def describe_clusters(self: EC2ContainerServiceBackend, *args: Any, **kwargs: Any) -> Any:
        clusters, failures = original(self, *args, **kwargs)
        for cluster in clusters:
            tasks = self.tasks.get(cluster.name, {})
            cluster.running_tasks_count = sum(1 for task in tasks.values() if task.desired_status == "RUNNING")
            cluster.pending_tasks_count = 0
        return clusters, failures

    describe_clusters._counts_tasks = True  # type: ignore[attr-defined]
    EC2ContainerServiceBackend.describe_clusters = describe_clusters  # type: ignore[method-assign]


def keep_moto_service_list() -> None:
    """Makes moto's server list its services once per process rather than on every request.

    To route a request, moto's server (``moto.moto_server.werkzeug_app``) asks whether the request's host names one
    of its services by listing its own package directory, a ``stat`` per entry (about 170), on every request: about
    24 s of one profiled emulated A3 run. The list cannot change while the process runs, so it is read once and the
    same set is answered afterwards. This replaces ``moto.backends.list_of_moto_modules``, which nothing else in moto
    calls.
    """
    from moto import backends

    if getattr(backends.list_of_moto_modules, "_listed_once", False):
        return
    services = frozenset(backends.list_of_moto_modules())

    def listed_once() -> frozenset[str]:
        return services

    listed_once._listed_once = True  # type: ignore[attr-defined]
    backends.list_of_moto_modules = listed_once


_INDEX_NAME_POSITION = 6
"""Where ``index_name`` comes among the positional arguments of moto's ``Table.query`` after ``hash_key``."""


_QUERY_KEYWORDS = frozenset(
    {"index_name", "consistent_read", "filter_expression", "hash_key_conditions", "range_key_conditions"}
)
"""The keyword arguments of moto's ``Table.query`` that are not legacy attribute filters (``filter_kwargs``)."""


def query_by_hash_key() -> None:
    """Makes moto's Query of a table read only the queried hash key's items.

    moto's ``Table.query`` (moto 5) takes its candidates from ``Table.all_items()``, every item of the table sorted by
    hash and range key, and then keeps those whose hash key is the queried one; it sorts those by range key again
    itself. While a table query (not an index query, which still reads every item, as moto must) runs on a thread,
    ``all_items`` of that table answers only that hash key's items, which moto holds apart already
    (``Table.items[hash_key]``), and of those only the ones whose range key meets the query's key condition;
    every other call of ``all_items`` (scans, exports, other threads) is unchanged. The results and their order are
    the same: moto filters by the hash key and the key condition and sorts by range key after. moto weighs each
    candidate (``Item.size``, walking its attributes) against its 1 MB page before it checks the key condition, so
    a query for the few transactions after a number weighed every transaction of the table's log (15% of one
    emulated A3 run's time at 2,000 transactions); DynamoDB reads only the items in the key condition, and so do
    moto's pages now.
    """
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_by_hash_key", False):
        return
    original_query = Table.query
    original_all_items = Table.all_items
    narrowed = threading.local()

    def all_items(self: Table) -> list[Any]:
        target = getattr(narrowed, "target", None)
        if target is None or target[0] is not self:
            return original_all_items(self)
        _, hash_key, comparison, values = target
        held = self.items.get(hash_key)  # .get: the table's defaultdict must not gain an empty key
        if held is None:
            return []
        if not self.range_key_attr:
            return [held]
        if comparison is None:
            return list(held.values())
        return [item for item in held.values() if item.range_key.compare(comparison, values)]

    def query(self: Table, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[_INDEX_NAME_POSITION] if len(args) > _INDEX_NAME_POSITION else kwargs.get("index_name")
        if hash_key is None or index_name:
            return original_query(self, hash_key, *args, **kwargs)
        comparison = args[0] if args else kwargs.get("range_comparison")
        values = args[1] if len(args) > 1 else kwargs.get("range_objs")
        conditions = kwargs.get("range_key_conditions")
        if (conditions and (len(conditions) > 1 or conditions[-1][0] != self.range_key_attr)) or (
            set(kwargs) - _QUERY_KEYWORDS
        ):
            comparison = None  # a condition on other attributes than the table's range key: moto applies it alone
        narrowed.target = (self, hash_key, comparison or None, values)
        try:
            return original_query(self, hash_key, *args, **kwargs)
        finally:
            narrowed.target = None

    query._by_hash_key = True  # type: ignore[attr-defined]
    Table.all_items = all_items  # type: ignore[method-assign]
    Table.query = query  # type: ignore[method-assign]
