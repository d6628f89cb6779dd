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


@pytest.mark.parametrize(("chosen", "expected"), [(None, "system"), ("jemalloc", "jemalloc")])
def should_start_as_the_images_do_unless_the_user_chose(chosen: str | None, expected: str) -> None:
    # Given the sleeper command started with or without the user's own choice of Arrow's memory pool
    env = {key: value for key, value in os.environ.items() if key != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    code = (
        "import atexit, sys\n"
        "def report():\n"
        "    import pyarrow\n"
        "    print(pyarrow.default_memory_pool().backend_name, file=sys.stderr)\n"
        "atexit.register(report)\n"
        "sys.argv = ['sleeper', '--version']\n"
        "from sleeper.cli.main import main\n"
        "main()\n"
    )
    # When it runs a command
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT
    )
    # Then Arrow allocates from the pool the images use, or from the one the user chose
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == expected
