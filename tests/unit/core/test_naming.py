"""One definition of every name: resource names follow Sleeper's conventions, and every queue logical name and
resource-name pattern is spelled in one module (``sleeper.core.operations`` for queues, ``sleeper.core.naming`` for
resources) that the stacks, the adapters, the runtimes, the emulator and the CLI import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sleeper.core import naming, operations

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ("sleeper", "containers")

QUEUE_NAMES = {spec.name for spec in operations.QUEUES} | {operations.BULK_IMPORT_EKS_Q}
RESOURCE_NAMES = {
    naming.FILES_LOG, naming.PARTITIONS_LOG, naming.LATEST_SNAPSHOTS, naming.ALL_SNAPSHOTS, naming.INDEX_BY_NAME,
    naming.INDEX_BY_ID, naming.INDEX_BY_ONLINE, naming.INGEST_JOB_UPDATES, naming.INGEST_JOB_LOOKUP,
    naming.INGEST_TASK_STATUS, naming.COMPACTION_JOB_UPDATES, naming.COMPACTION_JOB_LOOKUP,
    naming.COMPACTION_TASK_STATUS, naming.QUERY_TRACKER, naming.INGEST_BATCHER_STORE,
    naming.COMPACTION_JOB_CREATION_RULE, naming.COMPACTION_TASK_CREATION_RULE, naming.PARTITION_SPLITTING_RULE,
    naming.GARBAGE_COLLECTOR_RULE, naming.INGEST_TASK_CREATION_RULE, naming.INGEST_BATCHER_JOB_CREATION_RULE,
    naming.TABLE_METRICS_RULE, naming.QUERY_WARM_RULE, naming.SNAPSHOT_CREATION_RULE, naming.SNAPSHOT_DELETION_RULE,
    naming.TRANSACTION_DELETION_RULE, naming.INGEST_CLUSTER, naming.COMPACTION_CLUSTER, naming.INGEST_TASK_FAMILY,
    naming.COMPACTION_FARGATE_FAMILY, naming.COMPACTION_EC2_FAMILY, naming.COMPACTION_CONTAINER_NAME,
}  # fmt: skip


def _python_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for source in SOURCES:
        path = root / source
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def _spellings(root: Path) -> dict[str, set[str]]:
    """The files (relative to the root) each queue logical name or resource-name pattern is spelled in: a string
    literal equal to a queue's or resource's name, an f-string starting ``sleeper-`` or ``/aws/lambda/``, or a literal
    holding ``DLQ`` (docstrings and comments are prose, not spellings)."""
    found: dict[str, set[str]] = {}
    for path in _python_files(root):
        tree = ast.parse(path.read_text(), filename=str(path))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        where = str(path.relative_to(root))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if node.value in QUEUE_NAMES | RESOURCE_NAMES or node.value.endswith(("DLQ", "DLQ{")):
                    found.setdefault(node.value, set()).add(where)
            if isinstance(node, ast.JoinedStr) and node.values:
                first = node.values[0]
                if isinstance(first, ast.Constant) and str(first.value).startswith(("sleeper-", "/aws/lambda/")):
                    found.setdefault(f"f-string {first.value!r}", set()).add(where)
    return found


def should_spell_each_queue_and_resource_name_in_one_module() -> None:
    # Given every module of the package (the lambdas, the CDK stacks and app among them) and the containers
    # When the names of queues and resources spelled in them are found
    spellings = _spellings(ROOT)
    # Then each queue name is spelled only in the registry, each resource name and pattern only in the naming module
    misplaced = {
        name: files
        for name, files in spellings.items()
        if files != {"sleeper/core/operations.py" if name in QUEUE_NAMES else "sleeper/core/naming.py"}
    }
    assert misplaced == {}
    assert QUEUE_NAMES <= set(spellings)


def should_find_a_queue_name_spelled_outside_the_registry(tmp_path: Path) -> None:
    # Given a module that spells a queue's logical name and builds a queue name itself
    (tmp_path / "sleeper").mkdir()
    (tmp_path / "sleeper" / "bad.py").write_text(
        '"""Sends to IngestJobQ."""\nQ = "IngestJobQ"\n\n\ndef name(i: str) -> str:\n    return f"sleeper-{i}-{Q}"\n'
    )
    # When its spellings are found
    spellings = _spellings(tmp_path)
    # Then both are reported (the docstring is not)
    assert spellings == {"IngestJobQ": {"sleeper/bad.py"}, "f-string 'sleeper-'": {"sleeper/bad.py"}}


@pytest.mark.parametrize(
    ("logical", "dead_letters"),
    [
        ("IngestJobQ", "sleeper-inst-IngestJobDLQ"),
        ("QueryQueue", "sleeper-inst-QueryDLQ"),
        ("StateStoreCommitterQ.fifo", "sleeper-inst-StateStoreCommitterDLQ.fifo"),
        ("Odd", "sleeper-inst-Odd-DLQ"),
    ],
)
def should_name_queues_and_their_dead_letter_queues_as_sleeper_does(logical: str, dead_letters: str) -> None:
    # Given an instance id and a queue's logical name
    # When the queue and its dead-letter queue are named
    # Then they follow Sleeper's conventions
    assert naming.queue_name("inst", logical) == f"sleeper-inst-{logical}"
    assert naming.dead_letter_queue_name("inst", logical) == dead_letters


def should_name_a_local_dead_letter_queue_after_its_queue() -> None:
    # Given a standard and a FIFO queue of a local instance
    # When their dead-letter queues are named
    # Then -DLQ is added before any .fifo
    assert naming.local_dead_letter_queue_name("IngestJobQ") == "IngestJobQ-DLQ"
    assert naming.local_dead_letter_queue_name("GCJobQ.fifo") == "GCJobQ-DLQ.fifo"


def should_name_buckets_with_the_clean_id_and_tables_with_the_id_as_given() -> None:
    # Given an id with capitals and dots
    instance_id, account = "My.Inst", "123456789012"
    names = naming.InstanceNames(instance_id=instance_id, account=account)
    # When its buckets and tables are named
    state = naming.StateStoreTableNames.for_instance(instance_id)
    # Then buckets use the clean id, tables the id as given
    assert names.config_bucket == "sleeper-my-inst-config-123456789012"
    assert names.data_bucket == "sleeper-my-inst-table-data-123456789012"
    assert state.files_log == "sleeper-My.Inst-file-transaction-log"
    assert naming.task_tracker_table_name(instance_id, "ingest") == "sleeper-My.Inst-ingest-task-status"
    assert names.bulk_import_role_arn == "arn:aws:iam::123456789012:role/sleeper-my-inst-bulk-import-job"


def should_cut_rule_and_function_names_to_64_characters() -> None:
    # Given a long instance id
    instance_id = "x" * 40
    # When a rule and a function are named
    rule = naming.rule_name(instance_id, naming.TRANSACTION_DELETION_RULE)
    function = naming.function_name(instance_id, naming.COMPACTION_FARGATE_FAMILY)
    # Then each is cut to 64 characters
    assert len(rule) == 64 and rule.startswith(instance_id + "-TransactionLog")
    assert len(function) == 64 and function.startswith(f"sleeper-{instance_id}-CompactionTask")
