"""State store settings: Sleeper's defaults and property names."""

from __future__ import annotations

import pytest

from sleeper.statestore.log_head import StateStoreSettings

PREFIX = "sleeper.table.statestore.transactionlog."


class FakeProperties:
    """Integer properties by name, each a distinct value."""

    def __init__(self, values: dict[str, int]) -> None:
        self.values = values

    def get_int(self, prop: str) -> int:
        return self.values[prop]


def should_read_each_setting_from_its_sleeper_property() -> None:
    # Given a distinct value for each property
    names = [
        "add.transaction.max.attempts",
        "add.transaction.first.retry.wait.ceiling.ms",
        "add.transaction.max.retry.wait.ceiling.ms",
        "snapshot.load.min.transactions.ahead",
        "time.between.snapshot.checks.seconds",
        "time.between.transaction.checks.ms",
        "files.snapshot.batch.size",
        "partitions.snapshot.batch.size",
        "snapshot.expiry.days",
        "delete.behind.snapshot.min.age.minutes",
        "delete.number.behind.latest.snapshot",
    ]
    properties = FakeProperties(
        {PREFIX + name: 11 + i for i, name in enumerate(names)} | {"sleeper.table.time.travel.retention.minutes": 22}
    )
    # When the settings are read
    settings = StateStoreSettings.from_properties(properties)
    # Then each comes from its property, milliseconds converted to seconds
    assert settings == StateStoreSettings(
        max_add_attempts=11,
        first_retry_wait_ceiling_seconds=0.012,
        max_retry_wait_ceiling_seconds=0.013,
        min_transactions_ahead_to_load_snapshot=14,
        time_between_snapshot_checks_seconds=15,
        time_between_transaction_checks_seconds=0.016,
        files_snapshot_batch_size=17,
        partitions_snapshot_batch_size=18,
        snapshot_expiry_days=19,
        delete_transactions_snapshot_min_age_minutes=20,
        delete_transactions_number_behind_snapshot=21,
        time_travel_retention_minutes=22,
    )


def should_default_to_the_table_property_defaults() -> None:
    # Given table properties with nothing set (skipped if the properties package is not there)
    properties = pytest.importorskip("sleeper.core.properties")
    table = properties.TableProperties(properties.InstanceProperties(), {})
    # When / Then the settings read from them are the built-in defaults
    assert StateStoreSettings.from_properties(table) == StateStoreSettings()


@pytest.mark.parametrize(
    "bad",
    [{"max_add_attempts": 0}, {"first_retry_wait_ceiling_seconds": -1}, {"min_transactions_ahead_to_load_snapshot": 0}],
)
def should_refuse_settings_that_cannot_work(bad: dict[str, float]) -> None:
    # When / Then
    with pytest.raises(ValueError):
        StateStoreSettings(**bad)  # type: ignore[arg-type]
