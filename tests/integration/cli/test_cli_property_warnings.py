"""What a property edit says on standard error beyond the value itself: a value Sleeper accepts that carries a risk
in this port (a GC delay shorter than a query may take) is saved and warned of once, and an edit that gives the risk
no more says nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleeper.cli.main import run
from sleeper.runtime.connection import connect

pytestmark = pytest.mark.integration

SCHEMA = {"rowKeyFields": [{"name": "key", "type": "StringType"}], "sortKeyFields": [], "valueFields": []}
GC_DELAY = "sleeper.table.gc.delay.minutes"


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "test-instance"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    assert run(["table", "create", "things", "--schema", str(schema)]) == 0
    return directory


def should_save_sleepers_gc_delay_and_warn_of_its_risk_once(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table with this port's default GC delay
    capsys.readouterr()
    # When Sleeper's default of 15 minutes is set
    code = run(["table", "properties", "things", "--set", f"{GC_DELAY}=15"])
    out, err = capsys.readouterr()
    # Then it is saved, and stderr names the risk and the value that removes it, once, as a warning line
    assert code == 0
    assert connect(str(instance)).table("things").properties.get_int(GC_DELAY) == 15
    warnings = [line for line in err.splitlines() if GC_DELAY in line]
    assert len(warnings) == 1, err
    assert warnings[0].startswith(f"warning: {GC_DELAY} (15 min) is not longer than")
    assert "set sleeper.table.gc.delay.minutes to 17 or more" in warnings[0]
    assert GC_DELAY not in out.replace(f"{GC_DELAY} = 15", "")


def should_say_nothing_more_when_the_risk_is_removed(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a table with Sleeper's GC delay
    assert run(["table", "properties", "things", "--set", f"{GC_DELAY}=15"]) == 0
    capsys.readouterr()
    # When the delay is set to the safe value
    code = run(["table", "properties", "things", "--set", f"{GC_DELAY}=17"])
    _, err = capsys.readouterr()
    # Then no warning is printed
    assert code == 0
    assert "warning" not in err
