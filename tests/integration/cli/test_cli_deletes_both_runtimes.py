"""``sleeper delete`` and ``sleeper purge`` alike on a local instance and on an emulated instance on AWS (this process's
moto server): the same rows are gone from ``sleeper query`` at once, and the purge compacts the files holding them in
the calling process on both, leaving no delete on a file a read plans; ``Table.overwrite`` replaces every row alike on
both."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from sleeper.cli.main import run
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig
from tests.integration.cli.test_cli_both_runtimes import _same, aws_config, locations

pytestmark = [pytest.mark.integration, pytest.mark.aws]

__all__ = ["aws_config", "locations"]


def should_delete_and_purge_alike_on_both_runtimes(
    capsys: pytest.CaptureFixture[str], locations: dict[str, str], aws_config: AwsRuntimeConfig
) -> None:
    # Given the same table and rows on both (written directly on AWS, as a direct ingest does)
    _same(capsys, locations, ["table", "create", "nums", "--schema", "schema.json", "--json"])
    rows = pa.table({"key": pa.array(range(100), pa.int64()), "value": [f"v{i % 4}" for i in range(100)]})
    from sleeper.runtime.local.instance import LocalInstance

    LocalInstance("local").table("nums").ingest(rows)
    AwsInstance(aws_config).table("nums").ingest(rows, direct=True)
    # When the same rows are deleted on both
    local, aws = _same(capsys, locations, ["delete", "nums", "--where", "key >= 20 or value = 'v1'", "--json"])
    assert local["table"] == aws["table"] == "nums"
    # Then a query gives the same rows on both, and a purge leaves no delete on a file a read plans
    expected = [{"key": k, "value": f"v{k % 4}"} for k in range(20) if k % 4 != 1]
    local, aws = _same(capsys, locations, ["query", "nums", "--format", "json"])
    assert local == aws == {"rows": expected, "count": len(expected)}
    purged: Any = _same(capsys, locations, ["purge", "nums", "--json"])
    for result in purged:
        assert result["done"] is True and result["jobs"]
        assert [d["filesWithRows"] for d in result["pendingDeletes"]] == [0]
    local, aws = _same(capsys, locations, ["query", "nums", "--format", "json"])
    assert local == aws == {"rows": expected, "count": len(expected)}
    assert run(["--instance", locations["aws"], "delete", "nums"]) == 1


def should_overwrite_alike_on_both_runtimes(
    capsys: pytest.CaptureFixture[str], locations: dict[str, str], aws_config: AwsRuntimeConfig
) -> None:
    from sleeper.runtime.local.instance import LocalInstance

    _same(capsys, locations, ["table", "create", "over", "--schema", "schema.json", "--json"])
    old = pa.table({"key": pa.array(range(50), pa.int64()), "value": ["old"] * 50})
    new = pa.table({"key": pa.array([7, 70], pa.int64()), "value": ["new", "new"]})
    for table in (LocalInstance("local").table("over"), AwsInstance(aws_config).table("over")):
        table.ingest(old, direct=True)
        number = table.overwrite(new)
        assert table.scan(as_of=number - 1).count() == 50
    local, aws = _same(capsys, locations, ["query", "over", "--format", "json"])
    assert local == aws == {"rows": [{"key": 7, "value": "new"}, {"key": 70, "value": "new"}], "count": 2}
