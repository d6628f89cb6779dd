"""``sleeper.exceptions`` names the errors of the public API, each the class that is raised, all ``SleeperError``s."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleeper
import sleeper.exceptions as errors


def should_name_only_sleeper_errors_each_once() -> None:
    classes = [getattr(errors, name) for name in errors.__all__]
    assert all(isinstance(c, type) and issubclass(c, errors.SleeperError) for c in classes)
    assert len(set(classes)) == len(classes) == len(set(errors.__all__))
    assert [c.__name__ for c in classes] == list(errors.__all__)


def should_raise_the_classes_it_names_from_the_public_api(tmp_path: Path) -> None:
    # An instance that is not there
    with pytest.raises(errors.InstanceNotFoundError):
        sleeper.connect(tmp_path / "nothing")
    # A table that is not there, and a time travel given the wrong type
    instance = sleeper.create_instance(tmp_path / "instance")
    with pytest.raises(errors.TableNotFoundError):
        instance.table("missing")
    schema = sleeper.Schema.of(row_keys=[sleeper.Field("key", sleeper.PrimitiveType.LONG)])
    table = instance.create_table("t", schema)
    with pytest.raises(errors.AsOfError):
        table.scan(as_of=1.5).to_arrow()  # type: ignore[arg-type]
    with pytest.raises(errors.PropertyError):
        table.set_properties({"sleeper.table.statestore.transactionlog.files.snapshot.batch.size": "0"})
