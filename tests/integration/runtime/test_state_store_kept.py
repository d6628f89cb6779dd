"""A local instance keeps each table's state store per thread between calls (``LocalInstance._state_store``), as
Sleeper's state store provider keeps one per table in a warm function: reads still see every commit, whoever made it,
a store is never shared between threads or kept across a change of the table's state store settings, and at most
``sleeper.statestore.provider.cache.size`` tables are kept."""

from __future__ import annotations

import gc
import os
import threading
import weakref
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.properties.instance_common import STATESTORE_PROVIDER_CACHE_SIZE
from sleeper.core.statestore.transactions.files import AddFilesTransaction
from sleeper.runtime.local.instance import LocalInstance
from sleeper.statestore.committer import handle_commit_request
from tests.integration.runtime.crash_harness import SCHEMA


def _rows(start: int, count: int) -> pa.Table:
    keys = pa.array(range(start, start + count), pa.int64())
    return pa.table({"key": keys, "value": keys})


def _instance(tmp_path: Path) -> LocalInstance:
    instance = LocalInstance.create(tmp_path / "instance")
    instance.create_table("t", SCHEMA)
    return instance


def should_keep_one_state_store_per_thread_between_calls(tmp_path: Path) -> None:
    # Given an instance with a table
    instance = _instance(tmp_path)
    # When the table is looked up twice on this thread and once on another
    first, second = instance.table("t").state_store, instance.table_by_id(instance.table("t").table_id).state_store
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append(instance.table("t").state_store))
    thread.start()
    thread.join()
    # Then this thread is given the same store each time, and the other thread a store of its own
    assert first is second
    assert elsewhere[0] is not first


def should_read_commits_made_through_other_stores_with_a_kept_store(tmp_path: Path) -> None:
    # Given a kept state store that has read the table
    instance = _instance(tmp_path)
    kept = instance.table("t").state_store
    assert kept.file_references() == []
    # When another instance object (as another process would) and this one ingest
    LocalInstance(instance.directory).table("t").ingest(_rows(0, 10), job_id="other")
    instance.table("t").ingest(_rows(10, 5), job_id="this")
    # Then the kept store's reads see both commits, and queries all the rows
    assert instance.table("t").state_store is kept
    assert sorted(r.number_of_rows for r in kept.file_references()) == [5, 10]
    assert instance.table("t").query().num_rows == 15


def should_make_a_new_store_when_the_state_store_settings_change_or_none_is_kept(tmp_path: Path) -> None:
    # Given a kept state store
    instance = _instance(tmp_path)
    kept = instance.table("t").state_store
    # When a setting the state store is made with changes
    instance.update_table_properties(
        "t", {"sleeper.table.statestore.transactionlog.time.between.transaction.checks.ms": "5"}
    )
    changed = instance.table("t").state_store
    # Then the table gets a new store, kept from then on
    assert changed is not kept
    assert instance.table("t").state_store is changed
    # And an instance told to keep none makes one per call
    instance.properties.set(STATESTORE_PROVIDER_CACHE_SIZE, "0")
    assert instance.table("t").state_store is not instance.table("t").state_store


def should_keep_at_most_the_provider_cache_size_of_tables(tmp_path: Path) -> None:
    # Given an instance keeping 2 tables' state stores, with 3 tables
    instance = _instance(tmp_path)
    instance.create_table("u", SCHEMA)
    instance.create_table("v", SCHEMA)
    instance.properties.set(STATESTORE_PROVIDER_CACHE_SIZE, "2")
    t, u = instance.table("t").state_store, instance.table("u").state_store
    # When t is used again, then v: u is the least recently used
    assert instance.table("t").state_store is t
    instance.table("v")
    # Then t is still kept and u was dropped
    assert instance.table("t").state_store is t
    assert instance.table("u").state_store is not u


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def should_free_an_instance_and_its_database_once_dropped_after_its_committer_kept_its_stores(
    tmp_path: Path,
) -> None:
    # Given instances made one after another, each committing a transaction through the committer (which keeps the
    # table's state store against the instance)
    gc.collect()
    before = _open_descriptors()
    freed: list[weakref.ref[LocalInstance]] = []
    for n in range(5):
        instance = _instance(tmp_path / str(n))
        transaction = AddFilesTransaction(files=(), job_id=f"job-{n}")
        request = StateStoreCommitRequest.of_transaction(instance.table("t").table_id, transaction)
        handle_commit_request(instance, request.to_json())
        freed.append(weakref.ref(instance))
        # When the instance is dropped
        del instance
    gc.collect()
    # Then each is freed, and its database connections closed with it
    assert [ref() for ref in freed] == [None] * 5
    assert _open_descriptors() <= before
