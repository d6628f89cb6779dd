from __future__ import annotations

import pytest

from sleeper.core.jobs.exceptions import UnsafeIdError, UnsafePathError
from sleeper.core.paths import (
    MAX_ID_LENGTH,
    SAFE_ID_RULE,
    check_key_under,
    check_safe_id,
    check_safe_path,
    is_s3_path,
    is_safe_id,
    join_under,
    normalise_s3_path,
    split_s3_path,
)


@pytest.mark.parametrize(
    ("path", "bucket", "key"),
    [
        ("bucket/dir/file.parquet", "bucket", "dir/file.parquet"),
        ("s3://bucket/dir/file.parquet", "bucket", "dir/file.parquet"),
        ("s3a://bucket/dir/", "bucket", "dir/"),
        ("s3a://bucket//leading/slashes", "bucket", "leading/slashes"),
        ("bucket", "bucket", ""),
    ],
)
def should_split_s3_paths_with_or_without_scheme(path: str, bucket: str, key: str) -> None:
    # When
    found = split_s3_path(path)
    # Then
    assert found == (bucket, key)


def should_normalise_s3_paths_to_bucket_and_key() -> None:
    # Given paths to the same object in three forms
    paths = ["s3://b/k/f.parquet", "s3a://b/k/f.parquet", "b/k/f.parquet"]
    # When
    normalised = {normalise_s3_path(p) for p in paths}
    # Then
    assert normalised == {"b/k/f.parquet"}
    assert normalise_s3_path("s3a://whole-bucket") == "whole-bucket"


@pytest.mark.parametrize(
    "path",
    [
        "bucket/dir/file.parquet",
        "s3a://bucket/dir/",
        "s3://Legacy_Bucket.name/key with spaces/file.parquet",
        "bucket",
        "bucket/a..b/file..parquet",
    ],
)
def should_accept_s3_paths(path: str) -> None:
    # When / Then
    assert check_safe_path(path) == path
    assert is_s3_path(path)


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("bucket/../other-table/file.parquet", "traversal"),
        ("bucket/dir/..", "traversal"),
        ("bucket/./file.parquet", "traversal"),
        ("s3a://bucket/a/../../b", "traversal"),
        ("bucket/%2e%2e/secret", "traversal"),
        ("bucket/%2E%2e/secret", "traversal"),
        ("bucket/.%2e/secret", "traversal"),
        ("bucket/a%2f..%2fb", "traversal"),
        ("bucket/%252e%252e/secret", "traversal"),
        ("bucket\\..\\secret", "backslash"),
        ("bucket/a%5c..%5cb", "backslash"),
        ("bucket/file\x00.parquet", "control"),
        ("bucket/file%00.parquet", "control"),
        ("bucket/line\nbreak", "control"),
        ("/etc/passwd", "absolute"),
        ("file:///etc/passwd", "local file"),
        ("http://example.com/x.parquet", "scheme"),
        ("C:/windows/file.parquet", "scheme"),
        ("s3:/bucket/key", "'//'"),
        ("../bucket/key", "bucket"),
        ("~/key", "bucket"),
        ("", "empty"),
    ],
)
def should_reject_unsafe_paths_with_a_typed_error(path: str, problem: str) -> None:
    # When / Then
    with pytest.raises(UnsafePathError, match=problem) as e:
        check_safe_path(path, where="$.files[0]")
    assert e.value.path == "$.files[0]"


def should_accept_local_paths_only_when_allowed() -> None:
    # Given
    local = ["/data/instance/table/file.parquet", "file:///data/instance/file.parquet"]
    # When / Then
    for path in local:
        assert check_safe_path(path, allow_local=True) == path
        with pytest.raises(UnsafePathError):
            check_safe_path(path)


def should_reject_traversal_in_local_paths_even_when_allowed() -> None:
    # When / Then
    with pytest.raises(UnsafePathError, match="traversal"):
        check_safe_path("/data/instance/../../etc/passwd", allow_local=True)
    with pytest.raises(UnsafePathError, match="traversal"):
        check_safe_path("file:///data/%2e%2e/etc", allow_local=True)


def should_reject_buckets_outside_the_allowlist() -> None:
    # Given
    allowed = {"ingest-bucket"}
    # When / Then
    assert check_safe_path("s3a://ingest-bucket/f.parquet", allowed_buckets=allowed)
    with pytest.raises(UnsafePathError, match="not allowed"):
        check_safe_path("s3://other-bucket/f.parquet", allowed_buckets=allowed)


def should_reject_overlong_paths() -> None:
    # Given
    path = "bucket/" + "k" * 5000
    # When / Then
    with pytest.raises(UnsafePathError, match="longer"):
        check_safe_path(path)


def should_check_object_keys_lie_under_their_prefix() -> None:
    # Given
    prefix = "933cd595/statestore/transactions/"
    # When / Then
    good = "933cd595/statestore/transactions/2025-01-14T15:30:00Z-test-transaction.json"
    assert check_key_under(good, prefix) == good
    for bad in [
        "other-table/statestore/transactions/x.json",
        "933cd595/statestore/transactions/../../other/x.json",
        "933cd595/statestore/transactions/",
        "/933cd595/statestore/transactions/x.json",
        "s3a://bucket/933cd595/statestore/transactions/x.json",
    ]:
        with pytest.raises(UnsafePathError):
            check_key_under(bad, prefix, where="$.bodyKey")


@pytest.mark.parametrize(
    "value",
    [
        "5f1a0c0e-7d3b-4c57-9d0a-1f2e3d4c5b6a",  # Sleeper's and the Python client's UUIDs
        "my-query_1.v2",
        "Q",
        "...",
        ".hidden",
        "x" * MAX_ID_LENGTH,
    ],
)
def should_accept_uuids_and_ordinary_names_as_ids(value: str) -> None:
    # When / Then
    assert check_safe_id(value) == value
    assert is_safe_id(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        ".",
        "..",
        "/../../x",
        "../query-other",
        "a/b",
        "a\\b",
        "a b",
        "a|b",
        "id\n",
        "id\x00",
        "%2e%2e",
        "é",
        "x" * (MAX_ID_LENGTH + 1),
    ],
)
def should_reject_ids_that_could_escape_or_collide_naming_the_rule(value: str) -> None:
    # When
    with pytest.raises(UnsafeIdError) as e:
        check_safe_id(value, where="$.queryId", what="query id")
    # Then the error is a path error naming the field, the id and the rule
    assert isinstance(e.value, UnsafePathError)
    assert e.value.path == "$.queryId"
    assert e.value.reason.startswith("query id ")
    assert SAFE_ID_RULE in e.value.reason
    assert not is_safe_id(value)


def should_shorten_a_long_id_in_the_error() -> None:
    # When
    with pytest.raises(UnsafeIdError) as e:
        check_safe_id("y" * 10_000)
    # Then
    assert len(e.value.reason) < 400


@pytest.mark.parametrize(
    ("root", "names", "joined"),
    [
        ("s3://results", ("query-q1", "s1.parquet"), "s3://results/query-q1/s1.parquet"),
        ("file:///tmp/inst/query-results/", ("query-q1",), "file:///tmp/inst/query-results/query-q1"),
        ("/tmp/data", ("data", "partition_root", "f.parquet"), "/tmp/data/data/partition_root/f.parquet"),
        ("bucket/table", ("data",), "bucket/table/data"),
    ],
)
def should_join_names_under_a_root(root: str, names: tuple[str, ...], joined: str) -> None:
    # When / Then
    assert join_under(root, *names) == joined


@pytest.mark.parametrize(
    "names",
    [
        ("query-", "..", "x"),
        ("..",),
        (".",),
        ("",),
        ("query-/../../x",),
        ("a/b",),
        ("%2e%2e",),
        ("%252e%252e",),
        ("a%2Fb",),
        ("a\\b",),
        ("a\x00b",),
        (),
    ],
)
def should_refuse_to_join_a_name_that_could_leave_the_root(names: tuple[str, ...]) -> None:
    # When / Then
    with pytest.raises(UnsafePathError):
        join_under("s3://results", *names)
