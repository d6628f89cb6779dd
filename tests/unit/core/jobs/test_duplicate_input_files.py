"""A job names each input file once: the shared check every ingest path runs on a job's expanded files."""

from __future__ import annotations

from pathlib import Path

from sleeper.core.jobs.ingest import duplicate_file_problems, expand_job_files, input_file_key


def should_name_an_s3_file_alike_in_every_form_and_keep_keys_literal() -> None:
    # Given / When / Then
    assert input_file_key("bucket/dir/a.parquet") == "s3a://bucket/dir/a.parquet"
    assert input_file_key("s3://bucket/dir/a.parquet") == "s3a://bucket/dir/a.parquet"
    assert input_file_key("s3a://bucket/dir/a.parquet") == "s3a://bucket/dir/a.parquet"
    assert input_file_key("s3a://bucket/dir//a.parquet") != input_file_key("s3a://bucket/dir/a.parquet")


def should_name_a_local_file_alike_however_its_path_is_spelled(tmp_path: Path) -> None:
    # Given a file and a link to its directory
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.parquet").write_bytes(b"")
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    # When / Then
    spellings = [
        f"{tmp_path}/dir/a.parquet",
        f"{tmp_path}/dir/./a.parquet",
        f"{tmp_path}//dir/../dir/a.parquet",
        f"file://{tmp_path}/dir/a.parquet",
        f"{tmp_path}/link/a.parquet",
    ]
    assert {input_file_key(s) for s in spellings} == {str((tmp_path / "dir" / "a.parquet").resolve())}


def should_accept_paths_naming_each_file_once() -> None:
    # Given / When
    problems = duplicate_file_problems([("b/x", ["b/x"]), ("b/dir", ["b/dir/a", "b/dir/b"]), ("b/y", ["b/y"])])
    # Then
    assert problems == []


def should_refuse_the_same_path_twice_naming_it_and_what_to_do() -> None:
    # Given / When
    (problem,) = duplicate_file_problems([("b/x.parquet", ["b/x.parquet"]), ("b/x.parquet", ["b/x.parquet"])])
    # Then
    assert problem == (
        "Input file b/x.parquet is named more than once (the path 'b/x.parquet' is given more than once): its rows "
        "would be ingested twice; name each file or directory once (remove the repeated path)"
    )


def should_refuse_a_directory_and_a_file_inside_it_in_any_spelling() -> None:
    # Given a directory, then a file inside it spelt with another scheme
    expanded = [("s3://b/dir", ["b/dir/a.parquet", "b/dir/c.parquet"]), ("b/dir/c.parquet", ["b/dir/c.parquet"])]
    # When
    (problem,) = duplicate_file_problems(expanded)
    # Then
    assert "Input file b/dir/c.parquet is named more than once" in problem
    assert "the paths 's3://b/dir' and 'b/dir/c.parquet' both name it" in problem


def should_count_every_file_two_paths_share() -> None:
    # Given the same directory twice, in two spellings
    (problem,) = duplicate_file_problems([("b/dir", ["b/dir/a", "b/dir/b"]), ("s3a://b/dir/", ["b/dir/a", "b/dir/b"])])
    # Then
    assert "Input file b/dir/a is named more than once" in problem
    assert "and 1 more files" in problem


def should_expand_each_path_and_report_unusable_paths_before_duplicates() -> None:
    # Given
    listing = {"b/dir": ["b/dir/a", "b/dir/b"], "b/dir/a": ["b/dir/a"]}

    def expand(path: str) -> tuple[list[str], list[str]]:
        found = listing.get(path, [])
        return found, [] if found else [f"No files found at {path}"]

    # When
    files, reasons = expand_job_files(["b/dir", "b/missing", "b/dir/a"], expand, lambda f: f)

    # Then
    assert files == ["b/dir/a", "b/dir/b", "b/dir/a"]
    assert reasons[0] == "No files found at b/missing"
    assert len(reasons) == 2 and "the paths 'b/dir' and 'b/dir/a' both name it" in reasons[1]
