"""A process already running on AWS sees a changed table property within the bound the ``--set`` notice states
(:data:`sleeper.core.properties.notices.TABLE_CACHE_SECONDS`), on an instance on moto."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

import sleeper.runtime.aws.instance as aws_instance_module
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.notices import TABLE_CACHE_SECONDS, change_notice
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),))
BATCH = "sleeper.table.compaction.files.batch.size"


def should_see_a_changed_table_property_within_the_bound_the_notice_states(
    instance: AwsInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a warm process on a clock of its own, which has loaded a table by id as queued work does
    now = [1000.0]
    monkeypatch.setattr(aws_instance_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    warm = AwsInstance(AwsRuntimeConfig(config_bucket=instance.config.config_bucket, settings=instance.config.settings))
    name = f"bound-{uuid.uuid4().hex[:8]}"
    table_id = instance.create_table(name, SCHEMA).table_id
    assert warm.table_by_id(table_id).properties.get_int(BATCH) == 12
    # When another process (the CLI) changes one of the table's properties
    instance.update_table_properties(name, {BATCH: "20"})
    # Then the warm process sees it at once by name, by id once its copy is as old as the stated bound, not later
    assert warm.table(name).properties.get_int(BATCH) == 20
    warm.table_by_id(table_id)  # the lookup by name refreshed the copy: age it again from here
    now[0] += TABLE_CACHE_SECONDS - 1
    instance.update_table_properties(name, {BATCH: "30"})
    assert warm.table_by_id(table_id).properties.get_int(BATCH) == 20
    now[0] += 1
    assert warm.table_by_id(table_id).properties.get_int(BATCH) == 30
    # And the bound is the one the notice states
    notice = change_notice(InstanceProperties(instance.properties_store.load_instance()), table=True, local=False)
    assert notice is not None and f"within {TABLE_CACHE_SECONDS} s" in notice


def should_use_changed_state_store_settings_within_the_same_bound(
    instance: AwsInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a warm process that has loaded a table's state store with the default snapshot batch size
    snapshot_batch = "sleeper.table.statestore.transactionlog.files.snapshot.batch.size"
    now = [1000.0]
    monkeypatch.setattr(aws_instance_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    warm = AwsInstance(AwsRuntimeConfig(config_bucket=instance.config.config_bucket, settings=instance.config.settings))
    name = f"bound-{uuid.uuid4().hex[:8]}"
    table_id = instance.create_table(name, SCHEMA).table_id
    assert warm.table_by_id(table_id).state_store.settings.files_snapshot_batch_size == 1000
    # When the setting is changed and the warm copy reaches the bound
    instance.update_table_properties(name, {snapshot_batch: "5"})
    now[0] += TABLE_CACHE_SECONDS
    table = warm.table_by_id(table_id)
    # Then the state store the process uses has the new setting, not only the properties
    assert table.properties.get_int(snapshot_batch) == 5
    assert table.state_store.settings.files_snapshot_batch_size == 5
