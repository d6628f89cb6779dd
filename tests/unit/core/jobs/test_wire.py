from __future__ import annotations

import pickle

import pytest

from sleeper.core.exceptions import SerDeError
from sleeper.core.jobs import wire
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    MalformedJsonError,
    MessageError,
    MissingFieldError,
    QueryValidationError,
    UnknownFieldError,
)


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "",
        "not json",
        '{"a": NaN}',
        '{"a": Infinity}',
        "[" * 100_000 + "]" * 100_000,
        b"\xff\xfe{}",
        "1" * 5000,
    ],
)
def should_raise_malformed_json_error_for_text_that_is_not_json(text: str | bytes) -> None:
    # When / Then
    with pytest.raises(MalformedJsonError) as e:
        wire.parse_json(text)
    assert e.value.path == "$"
    assert isinstance(e.value, SerDeError)


def should_read_utf8_bytes() -> None:
    # When
    found = wire.parse_json('{"a": "é"}'.encode())
    # Then
    assert found == {"a": "é"}


def should_name_the_path_of_a_missing_or_null_field() -> None:
    # Given
    data = {"present": "x", "nothing": None}
    # When / Then
    for key in ("absent", "nothing"):
        with pytest.raises(MissingFieldError) as e:
            wire.required_str(data, key, "$.request")
        assert e.value.path == f"$.request.{key}"


def should_name_the_path_of_a_bad_list_element() -> None:
    # Given
    data = {"files": ["a", None, "c"]}
    # When
    with pytest.raises(MissingFieldError) as e:
        wire.str_list(data, "files")
    # Then
    assert e.value.path == "$.files[1]"
    assert str(e.value) == "$.files[1]: is missing or null"


def should_reject_wrong_json_types() -> None:
    # Given
    data = {"s": 1, "l": "x", "i": "1", "b": True}
    # When / Then
    with pytest.raises(InvalidFieldError, match="string"):
        wire.required_str(data, "s")
    with pytest.raises(InvalidFieldError, match="list"):
        wire.str_list(data, "l")
    with pytest.raises(InvalidFieldError, match="integer"):
        wire.required_int(data, "i")
    with pytest.raises(InvalidFieldError, match="integer"):
        wire.required_int(data, "b")


def should_reject_unknown_fields_naming_them() -> None:
    # When
    with pytest.raises(UnknownFieldError) as e:
        wire.check_fields({"id": "x", "tablename": "t"}, {"id", "tableName"})
    # Then
    assert e.value.path == "$.tablename"


def should_quote_unusual_keys_in_paths() -> None:
    # When / Then
    assert wire.child("$", "tableId") == "$.tableId"
    assert wire.child("$", "a.b c") == '$["a.b c"]'


def should_read_string_maps_like_gson() -> None:
    # Given
    data = {"m": {"s": "v", "n": 2, "f": 1.5, "b": False}}
    # When
    found = wire.optional_str_map(data, "m")
    # Then
    assert found == {"s": "v", "n": "2", "f": "1.5", "b": "false"}
    with pytest.raises(InvalidFieldError) as e:
        wire.optional_str_map({"m": {"x": [1]}}, "m")
    assert e.value.path == "$.m.x"


def should_reject_lone_surrogates() -> None:
    # Given a string a JSON escape can produce but UTF-8 cannot hold
    data = wire.parse_json('{"id": "\\ud800"}')
    assert isinstance(data, dict)
    # When / Then
    with pytest.raises(InvalidFieldError, match="Unicode"):
        wire.required_str(data, "id")


def should_keep_the_precise_path_of_errors_from_shared_readers() -> None:
    # Given errors as the region and transaction readers word them
    located = SerDeError("$.regions[0].key.min must be an integer, got 'x'")
    unlocated = SerDeError("files[0] must be an object")
    # When
    a = wire.from_serde_error(located, "$.regions[0]")
    b = wire.from_serde_error(unlocated, "$.transaction")
    # Then
    assert (a.path, a.reason) == ("$.regions[0].key.min", "must be an integer, got 'x'")
    assert (b.path, b.reason) == ("$.transaction", "files[0] must be an object")
    assert isinstance(a, MessageError)


def should_keep_error_details_when_pickled() -> None:
    # Given
    error = MissingFieldError("is missing or null", path="$.files")
    error.job_id = "job-1"
    query_error = QueryValidationError("bad", path="$.type", query_id="q", status_report_destinations=[{"d": "x"}])
    # When
    copies = [pickle.loads(pickle.dumps(e)) for e in (error, query_error)]
    # Then
    assert (type(copies[0]), copies[0].path, copies[0].job_id, str(copies[0])) == (
        MissingFieldError,
        "$.files",
        "job-1",
        "$.files: is missing or null",
    )
    assert (copies[1].query_id, copies[1].status_report_destinations, str(copies[1])) == (
        "q",
        ({"d": "x"},),
        str(query_error),
    )
