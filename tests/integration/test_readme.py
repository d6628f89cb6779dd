"""The README's code blocks run verbatim: its bash and Python blocks, in order, in one new directory, with the
virtualenv's ``sleeper`` on the PATH. A block right after a ``<!-- readme-test: skip ... -->`` line is only shown (the
Quick start, which builds the virtualenv). A block right after a ``<!-- readme-test: aws ... -->`` line (the ``aws:ID``
examples, in Python and on the command line) runs with the AWS configuration a user of a deployed instance has,
pointing at this process's moto server: instance ``my-instance`` is provisioned there as a deployment leaves it
(once, before the first such block), with a table ``people`` of the README's schema, and an ingest task stand-in runs
its ingest job queue while the blocks run, so ``wait=True`` and ``--wait`` ingests finish."""

from __future__ import annotations

import csv
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from sleeper.core.schema import Schema
from sleeper.emulator.provision import provision_instance
from tests.doc_blocks import AWS, SKIP, read_blocks, run_block, without_extras

pytestmark = [pytest.mark.integration, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
AWS_INSTANCE_ID, AWS_TABLE = "my-instance", "people"
"""The instance and table the README's ``aws:ID`` example opens."""


def readme_blocks(text: str) -> list[tuple[str, str, str | None]]:
    """Each bash or Python block of the README: (language, code, its mark: ``skip``, ``aws`` or None)."""
    return [(block.language, block.code, block.mark) for block in read_blocks(text, "readme-test")]


@contextmanager
def _aws_instance(cwd: Path, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """Provisions the README's AWS instance on this process's moto server, with its table of the README's schema, and
    runs an ingest task for it while the block runs; gives the environment a user of that instance has."""
    from sleeper.runtime.aws.instance import AwsInstance
    from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint
    from tests.integration.aws_runtime.conftest import QUEUES
    from tests.integration.aws_runtime.test_arrow_api import _IngestTask

    instance = AwsInstance(provision_instance(aws_settings(), AWS_INSTANCE_ID, queues=QUEUES))
    schema = Schema.from_json((cwd / "schema.json").read_text(encoding="utf-8"))
    instance.create_table(AWS_TABLE, schema, split_points=["m"])
    aws_env = {
        **env,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": moto_endpoint(),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    with _IngestTask(instance):
        yield aws_env


@pytest.mark.aws
def should_run_every_bash_and_python_block_of_the_readme_verbatim(tmp_path: Path) -> None:
    # Given the README's blocks and a new directory, with the virtualenv's sleeper first on the PATH
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEEPER_", "AWS_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    base_env = without_extras(tmp_path, env)  # the local blocks run without any extra, as after `make demo`
    assert "No module named 'pandas'" in run_block("python", "import pandas", tmp_path, base_env).stderr
    run = [(language, code, mark) for language, code, mark in blocks if mark != SKIP]
    assert {language for language, *_ in run} == {"bash", "python"}
    # the Quick start, starting the emulated instance (shown only: the test provisions it), then the aws:ID examples
    assert [mark for *_, mark in blocks if mark] == [SKIP, SKIP, AWS, AWS]

    # When each block runs in turn (the aws:ID examples against the instance on moto)
    aws_output = ""
    with ExitStack() as on_aws:
        aws_env: dict[str, str] | None = None
        for index, (language, code, mark) in enumerate(run):
            if mark == AWS:
                aws_env = aws_env or on_aws.enter_context(_aws_instance(tmp_path, env))
                result = run_block(language, code, tmp_path, aws_env)
                aws_output = aws_output or result.stdout
            else:
                result = run_block(language, code, tmp_path, base_env)

            # Then it succeeds, printing no traceback
            assert result.returncode == 0, f"README block {index} ({language}) failed:\n{code}\n{result.stderr}"
            assert "Traceback" not in result.stderr

    # And what the blocks made is there: the instance, the CSV the query wrote, both tables
    assert (tmp_path / "my-instance" / "instance.properties").exists()
    with (tmp_path / "a-to-m.csv").open(newline="") as written:
        assert list(csv.reader(written))[1:] == [["alice", "31"], ["bob", "42"]]
    listed = run_block("bash", "sleeper --instance ./my-instance table list", tmp_path, env).stdout
    assert "people-py" in listed
    # And the aws:ID example printed the rows it ingested from the Parquet files into the instance on AWS
    assert all(f'"{name}"' in aws_output for name in ("alice", "bob", "zoe")), aws_output
    # And the command line, given the same relative path, staged and ingested the files again: every row twice
    with (tmp_path / "aws-a-to-m.csv").open(newline="") as written:
        assert list(csv.reader(written))[1:] == [["alice", "31"], ["alice", "31"], ["bob", "42"], ["bob", "42"]]


def should_find_the_blocks_the_readme_shows() -> None:
    # Given a README-like text with a skipped block, an unmarked block and a block marked to run against AWS
    text = "x\n<!-- readme-test: skip (why) -->\n```bash\nmake\n```\n\n```python\nprint(1)\n```\n"
    text += "<!-- readme-test: aws (how) -->\n```bash\nls\n```\n"
    # When its blocks are read, then each has its language, code and mark
    assert readme_blocks(text) == [("bash", "make\n", SKIP), ("python", "print(1)\n", None), ("bash", "ls\n", AWS)]
