"""The docs' code blocks run as shown: each document's bash, sh and Python blocks, in order, in one new directory
per document, with the virtualenv's ``sleeper`` on the PATH, as ``tests/integration/test_readme.py`` runs the README's.

Marks (``tests/doc_blocks.py``), on the line just before a block: ``<!-- docs-test: skip (why) -->`` shows a block
only; ``<!-- docs-test: file (path) -->`` writes the block to that path in the directory (a module the next blocks
import); ``<!-- docs-test: aws (what) -->`` runs it with the AWS configuration a user of a deployed instance has,
pointing at this process's moto server, where the test first provisions what the document's ``AWS_SETUPS`` entry
makes. Local blocks run with the extras' modules unimportable, as in the virtualenv ``make demo`` builds, unless the
document is about an extra (``EXTRA_DOCS``).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.doc_blocks import AWS, FILE, SKIP, read_blocks, run_block, without_extras

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARKER = "docs-test"
NOT_YET_MARKED: set[str] = set()
EXTRA_DOCS = {"usage/iceberg.md", "usage/filters.md"}
"""Documents about an extra: their local blocks run with the extras installed, as a reader of them has."""
EXPECTED_OUTPUT: dict[str, tuple[str, ...]] = {
    # the security filter keeps the rows labelled A and the unlabelled one, from the CLI and from Python
    "usage/iterators.md": (" e1 ", " e3 ", "'id': 'e1'", "'id': 'e3'"),
    # the history lists the ingests, and the state as of files transaction 2 ends at key 99
    "usage/time-travel.md": ("ADD_FILES", '{"key": 99, "value": "v99"}'),
    # the filtered scans count the adults named n1*, the keys of two ranges, and DuckDB reads the scan's stream
    "usage/filters.md": ("[10, 11, 12, 500]", "[(60, 4)]"),
    # the Lambda module answers Athena's ping as Sleeper's connector does
    "usage/athena.md": ("'sourceType': 'Sleeper'", "'capabilities': 24"),
    # the queued scan returns the one row in range; the errors example names the missing table
    "usage/python.md": ("[{'name': 'bob', 'age': 42}]", "Table not found with name 'no-such-table'"),
}
"""What a document's blocks print, between them: a block that ran but did the wrong thing fails here."""
UNEXPECTED_OUTPUT: dict[str, tuple[str, ...]] = {
    "usage/iterators.md": (" e2 ", "'e2'"),
    "usage/time-travel.md": ('{"key": 100,',),
}


def _documents_with_blocks() -> list[str]:
    return sorted(
        str(path.relative_to(DOCS))
        for path in DOCS.rglob("*.md")
        if read_blocks(path.read_text(encoding="utf-8"), MARKER)
    )


AwsSetup = Callable[[Path, dict[str, str]], AbstractContextManager[dict[str, str]]]


@contextmanager
def _sleeper_client_instance(cwd: Path, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """client.md's script's world: an emulated instance ``my-sleeper-instance`` (on an in-process moto server) with
    a table ``my_table`` of string ``key`` and ``value``, a bucket ``my-bucket`` holding ``dir/file.parquet`` that
    the instance may ingest from, and a pump running its queues (ingest tasks, the batcher, queries) while the script
    runs. Gives the environment a user exports (endpoint, region, credentials; the client finds the rest), and
    checks afterwards that what the script wrote reached the table."""
    import boto3
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sleeper.core import operations
    from sleeper.core.schema import Field, PrimitiveType, Schema
    from sleeper.emulator.instance import EmulatedAwsInstance
    from sleeper.runtime.aws.api import AwsApi
    from sleeper.runtime.aws.containers import IDLE_WAIT_ENV
    from sleeper.runtime.aws.instance import ACCOUNT_ENV, CONFIG_BUCKET_ENV, INSTANCE_ID_ENV

    schema = Schema(
        row_key_fields=(Field("key", PrimitiveType.STRING),), value_fields=(Field("value", PrimitiveType.STRING),)
    )
    with EmulatedAwsInstance("my-sleeper-instance", port=0) as emulated:
        instance = emulated.instance()
        aws = emulated.environment()
        s3 = boto3.client(
            "s3",
            endpoint_url=emulated.endpoint,
            region_name=emulated.region,
            aws_access_key_id=aws.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=aws.get("AWS_SECRET_ACCESS_KEY", "testing"),
        )
        s3.create_bucket(Bucket="my-bucket", CreateBucketConfiguration={"LocationConstraint": emulated.region})
        rows = pa.table({"key": ["f1", "f2"], "value": ["from-file", "from-file"]})
        pq.write_table(rows, "my-bucket/dir/file.parquet", filesystem=instance.filesystem)
        AwsApi(instance).update_instance_properties({"sleeper.ingest.source.bucket": "my-bucket"})
        batcher = {"sleeper.table.ingest.batcher.job.min.size": "1", "sleeper.table.ingest.batcher.job.min.files": "1"}
        instance.create_table("my_table", schema, properties=batcher)
        user_env = {**env, **emulated.environment()}
        for name in (CONFIG_BUCKET_ENV, INSTANCE_ID_ENV, ACCOUNT_ENV):
            user_env.pop(name, None)
        pump = emulated.pump(task_log_dir=str(cwd), environment_extra={IDLE_WAIT_ENV: "1"})
        stop = threading.Event()

        def drive() -> None:
            last_fired = 0.0
            while not stop.is_set():
                if time.monotonic() - last_fired > 3:
                    pump.fire(operations.INGEST_BATCHER_JOB_CREATION)
                    pump.fire(operations.INGEST_TASK_CREATION)
                    last_fired = time.monotonic()
                if not pump.run_once().active:
                    stop.wait(0.2)

        thread = threading.Thread(target=drive, daemon=True)
        thread.start()
        try:
            yield user_env
            # the single batch, the batch writer's two rows and the file's two (ingested, then batched again)
            deadline = time.monotonic() + 240
            keys: set[str] = set()
            while time.monotonic() < deadline and not {"example-key", "k1", "k2", "f1", "f2"} <= keys:
                keys = set(emulated.instance().table("my_table").query().column("key").to_pylist())
                time.sleep(1)
            assert {"example-key", "k1", "k2", "f1", "f2"} <= keys, keys
        finally:
            stop.set()
            thread.join(timeout=60)
            pump.close()


AWS_SETUPS: dict[str, AwsSetup] = {"usage/client.md": _sleeper_client_instance}
"""For each document with ``aws`` blocks: what the test provisions on moto first, giving the blocks' environment."""


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(document, marks=[pytest.mark.aws] if document in AWS_SETUPS else [])
        for document in _documents_with_blocks()
        if document not in NOT_YET_MARKED
    ],
)
def should_run_every_bash_sh_and_python_block_of_the_docs(document: str, tmp_path: Path) -> None:
    # Given the document's blocks and a new directory, with the virtualenv's sleeper first on the PATH
    blocks = read_blocks((DOCS / document).read_text(encoding="utf-8"), MARKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEEPER_", "AWS_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    local_env = env if document in EXTRA_DOCS else without_extras(tmp_path, env)
    pandas = run_block("python", "import pandas", tmp_path, local_env)
    assert (pandas.returncode == 0) == (document in EXTRA_DOCS), pandas.stderr
    assert all(block.detail for block in blocks if block.mark), f"{document}: a mark without its reason"
    assert (document in AWS_SETUPS) == any(block.mark == AWS for block in blocks), document

    # When each block runs in turn (a file block written, a skipped block passed over)
    output = ""
    with ExitStack() as on_aws:
        aws_env: dict[str, str] | None = None
        for index, block in enumerate(blocks):
            if block.mark == SKIP:
                continue
            if block.mark == FILE:
                path = tmp_path / block.detail
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.code, encoding="utf-8")
                continue
            if block.mark == AWS:
                aws_env = aws_env or on_aws.enter_context(AWS_SETUPS[document](tmp_path, env))
            result = run_block(block.language, block.code, tmp_path, aws_env if block.mark == AWS else local_env)

            # Then it succeeds, printing no traceback
            failed = f"{document} block {index} ({block.language}) failed:\n{block.code}\n{result.stderr}"
            assert result.returncode == 0, failed
            assert "Traceback" not in result.stderr, result.stderr
            output += result.stdout

    # And it printed what the document says it does
    assert all(text in output for text in EXPECTED_OUTPUT.get(document, ())), output
    assert not any(text in output for text in UNEXPECTED_OUTPUT.get(document, ())), output


def should_read_the_docs_marks() -> None:
    # Given a document with a file block, a skipped block, an indented block in a list and an aws block
    text = "<!-- docs-test: file (pkg/m.py) -->\n```python\nX = 1\n```\n"
    text += "<!-- docs-test: skip (a server) -->\n```sh\nup\n```\n"
    text += "1. step:\n\n   ```bash\n   ls\n   ```\n<!-- docs-test: aws (on moto) -->\n```python\nprint(1)\n```\n"
    # When its blocks are read, then each has its language, code, mark and the mark's reason
    assert [tuple(block) for block in read_blocks(text, MARKER)] == [
        ("python", "X = 1\n", FILE, "pkg/m.py"),
        ("sh", "up\n", SKIP, "a server"),
        ("bash", "ls\n", None, ""),
        ("python", "print(1)\n", AWS, "on moto"),
    ]


def should_refuse_an_unknown_mark() -> None:
    # Given a block marked with a typo, when it is read, then the mark is named rather than the block run
    with pytest.raises(ValueError, match="unknown docs-test mark 'skp'"):
        read_blocks("<!-- docs-test: skp (x) -->\n```bash\nrm -rf /\n```\n", MARKER)
