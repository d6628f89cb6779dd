"""What the command line's tests share: a new local instance, named by ``SLEEPER_INSTANCE`` for every command a test
runs (a test file may define its own ``instance`` instead)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleeper.cli.main import run


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local instance ``test-instance`` in a new directory, which every command of the test uses."""
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "test-instance"]) == 0
    return directory
