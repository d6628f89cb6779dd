"""Java .properties text: reading as java.util.Properties does, writing so that it reads back the same."""

from __future__ import annotations

import configparser
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleeper.core.exceptions import PropertyError
from sleeper.core.properties import javaprops


def should_read_each_separator_form() -> None:
    # Given lines separated by =, :, white space, and white space around separators
    text = "a=1\nb: 2\nc 3\nd  =  4\ne\t:\t5\nf\n"
    # When read
    values = javaprops.load(text)
    # Then each key has its value, and a key alone has an empty value
    assert values == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": ""}


def should_skip_comments_and_blank_lines() -> None:
    # Given comments starting with # or !, possibly indented, and blank lines
    text = "# comment\n  ! another\n\n   \nkey=value # not a comment\n"
    # When read
    values = javaprops.load(text)
    # Then only the key is read, and a # inside a value is kept
    assert values == {"key": "value # not a comment"}


def should_join_continued_lines_dropping_leading_white_space() -> None:
    # Given a value continued over three lines, the last continuation line starting with #
    text = "key = first, \\\n    second, \\\n    # third\nnext=1\n"
    # When read
    values = javaprops.load(text)
    # Then the lines are joined and the # line is part of the value, not a comment
    assert values == {"key": "first, second, # third", "next": "1"}


def should_keep_an_escaped_backslash_at_the_end_of_a_line() -> None:
    # Given a value ending in an escaped backslash (an even number of backslashes)
    text = "path=C:\\\\dir\\\\\nnext=1\n"
    # When read
    values = javaprops.load(text)
    # Then the line is not continued
    assert values == {"path": "C:\\dir\\", "next": "1"}


def should_read_escapes_in_keys_and_values() -> None:
    # Given escaped separators in a key, and character escapes in a value
    text = "my\\=key\\:with\\ space = tab\\there\\nline\\\\ \\u00e9\\u4e2d\\uD83D\\uDE00\\q\n"
    # When read
    values = javaprops.load(text)
    # Then the escapes are decoded, including a surrogate pair and an unneeded escape
    assert values == {"my=key:with space": "tab\there\nline\\ é中😀q"}


def should_accept_windows_and_old_mac_line_endings() -> None:
    # Given CRLF and CR line endings
    text = "a=1\r\nb=2\rc=3"
    # When read
    values = javaprops.load(text)
    # Then every line is read
    assert values == {"a": "1", "b": "2", "c": "3"}


def should_keep_the_last_value_of_a_repeated_key() -> None:
    # Given a key set twice
    # When read
    values = javaprops.load("a=1\na=2\n")
    # Then the last value wins
    assert values == {"a": "2"}


def should_reject_a_malformed_unicode_escape_naming_the_line() -> None:
    # Given a bad \\u escape on line 2
    text = "a=1\nb=\\u12G4\n"
    # When read
    with pytest.raises(PropertyError) as error:
        javaprops.load(text)
    # Then the error names the line
    assert "line 2" in str(error.value)


def should_write_escaped_ascii_in_the_order_given_then_sorted() -> None:
    # Given values with characters that need escaping, and an order for some keys
    values = {"z": "last", "b key": " lead=trail:#!", "a": "é\n", "c": "1", "k=:#!": "v"}
    # When written with c and b key first
    text = javaprops.dump(values, order=["c", "b key", "missing"])
    # Then those come first, the rest sorted, and special characters are escaped (= : # ! in keys only)
    assert text == "c=1\nb\\ key=\\ lead=trail:#!\na=\\u00E9\\n\nk\\=\\:\\#\\!=v\nz=last\n"
    assert text.isascii()
    # And they read back the same
    assert javaprops.load(text) == values


def should_write_urls_that_configparser_reads_back_as_sleepers_python_client_does() -> None:
    # Given a queue URL property
    url = "https://sqs.eu-west-2.amazonaws.com/123456789012/sleeper-abc-IngestJobQ"
    # When written, then read as Sleeper's Python client reads instance.properties (configparser, dummy section)
    parser = configparser.ConfigParser(allow_no_value=True)
    parser.read_string("[asection]\n" + javaprops.dump({"sleeper.ingest.job.queue.url": url}))
    # Then the URL is intact
    assert parser["asection"]["sleeper.ingest.job.queue.url"] == url


def should_write_a_header_comment() -> None:
    # Given a header
    # When written
    text = javaprops.dump({"a": "1"}, header="Sleeper instance properties")
    # Then it is a comment line that reads back as nothing
    assert text == "#Sleeper instance properties\na=1\n"
    assert javaprops.load(text) == {"a": "1"}


def should_round_trip_schema_json() -> None:
    # Given a table's schema JSON, with colons, quotes, braces and a non-ASCII field name
    schema = json.dumps(
        {
            "rowKeyFields": [{"name": "clé", "type": "StringType"}],
            "valueFields": [{"name": "m", "type": {"MapType": {"keyType": "StringType", "valueType": "LongType"}}}],
        },
        ensure_ascii=False,
        indent=2,
    )
    values = {"sleeper.table.name": "t", "sleeper.table.schema": schema}
    # When written and read back
    again = javaprops.load(javaprops.dump(values))
    # Then the schema text is unchanged
    assert again == values


def should_decode_utf8_and_latin1_bytes() -> None:
    # Given the same text encoded as UTF-8 and as ISO-8859-1
    # When decoded
    # Then both read the same
    assert javaprops.decode("a=é\n".encode()) == {"a": "é"}
    assert javaprops.decode("a=é\n".encode("iso-8859-1")) == {"a": "é"}


@given(st.dictionaries(st.text(min_size=1), st.text(), max_size=8))
def should_read_back_whatever_it_writes(values: dict[str, str]) -> None:
    # Given any keys and values
    # When written and read back
    again = javaprops.load(javaprops.dump(values))
    # Then they are unchanged
    assert again == values


def should_read_edge_cases_as_java_does() -> None:
    # Given lines Java treats specially: a continued empty line followed by a comment, a lone continued line
    # followed by an empty line, and a continuation at the very end
    text = "\\\n  # a comment, not a key\n\\\n\nkey=value\\"
    # When read
    values = javaprops.load(text)
    # Then (as java.util.Properties reads them) the comment and the empty line give nothing, and the last line ends
    assert values == {"key": "value"}
