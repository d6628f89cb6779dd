"""moto is pinned to the versions ``sleeper.emulator.moto_speedups`` and ``moto_guards`` were checked against.

Both modules replace or wrap functions inside moto. The package metadata allows the moto versions the guards support
(``SUPPORTED_MOTO``), the lock (``constraints.txt``) installs one of them, and the source of every moto function they
patch (or whose shape they rely on) is recorded here as it was in the checked version. A moto whose patched function
changed fails here, naming the function, so that the change is read and the patch re-checked before it runs unnoticed.

The sources are read from moto's files, not from the imported classes (which other tests may have patched already).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sleeper.emulator.moto_guards import SUPPORTED_MOTO

ROOT = Path(__file__).resolve().parents[3]

CHECKED_MOTO = "5.2.5"
"""The moto release whose internals the patches were last read against (the version the lock pins)."""

# (file under moto/, class or "" for a module function, function) -> the first 16 hex digits of the sha256 of its
# source in CHECKED_MOTO, and who relies on it.
PATCHED: dict[tuple[str, str, str], tuple[str, str]] = {
    ("backends.py", "", "list_of_moto_modules"): ("f7f966c4452733db", "moto_speedups.keep_moto_service_list"),
    ("moto_server/werkzeug_app.py", "DomainDispatcherApplication", "get_backend_for_host"): (
        "686676e229858e5d",
        "moto_speedups.keep_moto_service_list (whose caller must look it up on moto.backends)",
    ),
    ("dynamodb/models/table.py", "Table", "query"): ("7c7c449c0d26f159", "moto_speedups.query_by_hash_key"),
    ("dynamodb/models/table.py", "Table", "all_items"): ("98389d15573959bc", "moto_speedups.query_by_hash_key"),
    ("ecs/models.py", "EC2ContainerServiceBackend", "describe_clusters"): (
        "7bf896f62ccfff31",
        "moto_speedups.count_cluster_tasks",
    ),
    ("s3/responses.py", "S3Response", "put_object"): ("bcd376476e71a3e7", "moto_guards.atomic_conditional_puts"),
    ("dynamodb/models/__init__.py", "DynamoDBBackend", "put_item"): (
        "7efe9807b019969a",
        "moto_guards.atomic_dynamodb_items",
    ),
    ("dynamodb/models/__init__.py", "DynamoDBBackend", "update_item"): (
        "d8e4e02a421005da",
        "moto_guards.atomic_dynamodb_items",
    ),
    ("dynamodb/models/__init__.py", "DynamoDBBackend", "delete_item"): (
        "f1160c7db9568612",
        "moto_guards.atomic_dynamodb_items",
    ),
    ("dynamodb/models/__init__.py", "DynamoDBBackend", "query"): (
        "11708cf9cf09bd0a",
        "moto_guards.atomic_dynamodb_items",
    ),
    ("dynamodb/models/__init__.py", "DynamoDBBackend", "batch_write_item"): (
        "d07b7ec03a887e1f",
        "moto_guards.atomic_dynamodb_items",
    ),
    ("dynamodb/models/__init__.py", "DynamoDBBackend", "get_item"): (
        "88d651150e51b2d6",
        "moto_guards.atomic_dynamodb_items",
    ),
    ("dynamodb/models/__init__.py", "DynamoDBBackend", "scan"): (
        "82cad0bc41e030c0",
        "moto_guards.atomic_dynamodb_items",
    ),
    ("dynamodb/models/__init__.py", "DynamoDBBackend", "transact_write_items"): (
        "c3c395e934006404",
        "moto_guards.atomic_dynamodb_items",
    ),
    ("sqs/models.py", "SQSBackend", "receive_message"): ("b1c796a9301aaf27", "moto_guards.atomic_queues"),
    ("sqs/models.py", "SQSBackend", "change_message_visibility"): ("e711863815589ec2", "moto_guards.atomic_queues"),
    ("sqs/models.py", "SQSBackend", "get_queue"): ("280194aec5b9c611", "moto_guards.atomic_queues"),
    ("sqs/models.py", "Queue", "delete_message"): ("636fb315c91ee9f1", "moto_guards.atomic_queues"),
    ("sqs/models.py", "Queue", "__init__"): (
        "7a4c6359d4d5b355",
        "moto_guards.atomic_queues (which takes the queue's _messages_lock)",
    ),
}


def _moto_dir() -> Path:
    spec = importlib.util.find_spec("moto")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("moto is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _installed_moto() -> str:
    from importlib.metadata import version

    return version("moto")


def _function(path: Path, owner: str, name: str) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The source and syntax tree of ``owner.name`` (a module function when ``owner`` is empty) in ``path``."""
    text = path.read_text(encoding="utf-8")
    body: list[ast.stmt] = ast.parse(text).body
    if owner:
        classes = [node for node in body if isinstance(node, ast.ClassDef) and node.name == owner]
        if not classes:
            return None
        body = classes[0].body
    found = [node for node in body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name]
    if not found:
        return None
    return ast.get_source_segment(text, found[-1]) or "", found[-1]  # the last definition is the one Python keeps


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _moto_specifiers(extra: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {
        str(requirement.specifier)
        for requirement in map(Requirement, project["optional-dependencies"][extra])
        if requirement.name == "moto"
    }


def should_allow_in_the_package_metadata_only_the_moto_the_guards_support() -> None:
    # Given the moto versions the guards were written against
    supported = str(SpecifierSet(SUPPORTED_MOTO))

    # When / Then every extra that installs moto asks for exactly that range
    assert _moto_specifiers("dev") == {supported}
    assert _moto_specifiers("aws-local") == {supported}


def should_lock_and_install_the_moto_the_patches_were_checked_against() -> None:
    # Given the lock
    pins = dict(
        line.split("==", 1)
        for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    )

    # When / Then it pins the checked moto, which the guards support, and that is the moto installed here
    assert pins["moto"] == CHECKED_MOTO, (
        f"constraints.txt pins moto {pins['moto']}, but the patches in sleeper/emulator/moto_speedups.py and "
        f"moto_guards.py were checked against moto {CHECKED_MOTO}: re-check them against the new moto (this test "
        "names what changed), then update CHECKED_MOTO and the digests here"
    )
    assert Version(CHECKED_MOTO) in SpecifierSet(SUPPORTED_MOTO)
    _moto_dir()
    assert _installed_moto() == CHECKED_MOTO, (
        f"moto {_installed_moto()} is installed, the lock pins {CHECKED_MOTO}: run `make install`"
    )


@pytest.mark.parametrize(("where", "checked"), PATCHED.items(), ids=lambda value: ".".join(filter(None, value)))
def should_find_every_patched_moto_function_as_it_was_checked(
    where: tuple[str, str, str], checked: tuple[str, str]
) -> None:
    # Given a moto function that the emulator's patches replace, wrap or rely on
    file, owner, name = where
    digest, patched_by = checked
    qualified = ".".join(filter(None, (owner, name)))
    path = _moto_dir() / file

    # When its source is read from the installed moto
    found = _function(path, owner, name) if path.is_file() else None

    # Then it is there, unchanged since the version the patch was checked against
    assert found is not None, (
        f"moto {_installed_moto()} has no {qualified} in moto/{file}, which sleeper.emulator.{patched_by} patches: "
        f"the patches were checked against moto {CHECKED_MOTO}; pin that moto (`make install`) or rewrite the patch"
    )
    assert _digest(found[0]) == digest, (
        f"moto {_installed_moto()} changed {qualified} (moto/{file}), which sleeper.emulator.{patched_by} patches; "
        f"the patch was checked against moto {CHECKED_MOTO}. Read the change, re-check the patch and its tests, then "
        "record the new digest and CHECKED_MOTO in tests/unit/emulator/test_moto_internals.py"
    )


def should_find_the_query_index_name_where_the_hash_key_speedup_reads_it() -> None:
    # Given moto's Table.query, whose index_name the speed-up reads by position among the arguments after hash_key
    from sleeper.emulator import moto_speedups

    found = _function(_moto_dir() / "dynamodb/models/table.py", "Table", "query")
    assert found is not None
    _, function = found

    # When the positional parameters after self and hash_key are listed
    after_hash_key = [argument.arg for argument in function.args.args[2:]]

    # Then index_name is where the speed-up looks for it
    assert after_hash_key.index("index_name") == moto_speedups._INDEX_NAME_POSITION
