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


NOT_PUBLIC = ("sleeper.client", "sleeper.adapters.memory", "sleeper.emulator", "sleeper.cli")
"""Packages whose errors are not the library's: Sleeper's Python client keeps its own error module (as Sleeper's
client does), the in-memory adapters are test doubles, the emulator and the command line are tools over the library."""


def should_name_every_public_error_of_the_package() -> None:
    # Given every error class the package defines, outside the packages whose errors are not the library's
    import importlib
    import inspect
    import pkgutil

    defined = set()
    for info in pkgutil.walk_packages(sleeper.__path__, "sleeper."):
        if info.name.startswith(NOT_PUBLIC):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, errors.SleeperError)
                and value.__module__ == module.__name__
            ):
                defined.add((module.__name__, name))
    # When sleeper.exceptions is read
    named = {(getattr(errors, name).__module__, name) for name in errors.__all__}
    # Then it names each public one (a leading underscore marks an error private to its module)
    assert {pair for pair in defined if not pair[1].startswith("_")} - named == set()
    assert len(defined) > 100
