"""The ``sleeper`` command imports only what a command uses: ``--version`` and ``--help`` load no pyarrow, no table
API and no runtime (their start-up time is measured in benchmarks/cli_startup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("pyarrow", "numpy", "sleeper.api.table", "sleeper.api.instance", "sleeper.runtime", "boto3")


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import json, sys\n"
        "from sleeper.cli.main import run\n"
        f"code = run({argv!r})\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["report", "--help"], ["table", "create", "--help"]])
def should_import_no_heavy_package_for_version_or_help(argv: list[str]) -> None:
    modules = _modules_after(argv)
    assert [m for m in HEAVY if m in modules] == []


def should_give_ingest_wait_the_table_api_default() -> None:
    from sleeper.api.table import DEFAULT_WAIT_SECONDS
    from sleeper.cli.common import DEFAULT_INGEST_WAIT_SECONDS

    assert DEFAULT_INGEST_WAIT_SECONDS == DEFAULT_WAIT_SECONDS
