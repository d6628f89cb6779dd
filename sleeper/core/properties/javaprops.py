"""Reads and writes Java ``.properties`` text, the format of Sleeper's instance and table properties.

Reading follows ``java.util.Properties.load``: ``#`` and ``!`` comment lines, ``key=value``, ``key: value`` and
``key value``, a backslash at the end of a line continuing it (leading white space of the next line is dropped), and
the escapes ``\\t \\n \\r \\f \\uXXXX``; any other escaped character stands for itself, so keys may contain ``\\=``,
``\\:`` and ``\\ ``.

Writing follows ``Properties.store``, except that ``= : # !`` are escaped in keys only (a value's are literal to
``Properties.load``; unescaped, as Sleeper's own writer leaves them, a value such as a queue URL also reads back right
through ``configparser``, which Sleeper's Python client uses): special characters are escaped and every character
outside printable ASCII is written as ``\\uXXXX``, so the text is pure ASCII and reads back the same under ISO-8859-1
or UTF-8. Java's date comment is left out so that the output is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sleeper.core.exceptions import PropertyError

_WHITESPACE = " \t\f"
_SEPARATORS = "=:"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_WRITE_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def load(text: str) -> dict[str, str]:
    """Reads Java properties text.

    Args:
        text: The text of a ``.properties`` file.

    Returns:
        The keys and values, in the order first seen; a key given twice keeps its last value.

    Raises:
        PropertyError: If a ``\\u`` escape is malformed.
    """
    values: dict[str, str] = {}
    for line_number, logical in _logical_lines(text):
        key, value = _split(logical)
        values[_unescape(key, line_number)] = _unescape(value, line_number)
    return values


def decode(data: bytes) -> dict[str, str]:
    """Reads Java properties from bytes: UTF-8 if they decode as such, otherwise ISO-8859-1 (Java's default)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return load(text)


def dump(values: Mapping[str, str], *, order: Iterable[str] = (), header: str | None = None) -> str:
    """Writes Java properties text.

    Args:
        values: The keys and values to write.
        order: Keys to write first, in this order (keys not in ``values`` are skipped). The remaining keys follow,
            sorted.
        header: An optional comment written as the first line.

    Returns:
        ASCII text with one ``key=value`` line per entry, ending with a newline.
    """
    lines: list[str] = []
    if header is not None:
        lines.extend("#" + _escape(line, is_key=False, comment=True) for line in header.splitlines())
    written: set[str] = set()
    for key in order:
        if key in values and key not in written:
            lines.append(_line(key, values[key]))
            written.add(key)
    for key in sorted(k for k in values if k not in written):
        lines.append(_line(key, values[key]))
    return "".join(line + "\n" for line in lines)


def _line(key: str, value: str) -> str:
    return _escape(key, is_key=True) + "=" + _escape(value, is_key=False)


def _escape(text: str, *, is_key: bool, comment: bool = False) -> str:
    out: list[str] = []
    for index, char in enumerate(text):
        if comment:
            out.append(char if 0x20 <= ord(char) <= 0x7E else _unicode_escape(char))
        elif char in _WRITE_ESCAPES:
            out.append(_WRITE_ESCAPES[char])
        elif char == " ":
            out.append("\\ " if is_key or index == 0 else " ")
        elif char in "=:#!" and is_key:
            out.append("\\" + char)
        elif 0x20 <= ord(char) <= 0x7E:
            out.append(char)
        else:
            out.append(_unicode_escape(char))
    return "".join(out)


def _unicode_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def _natural_lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # the text ended with a line terminator, not with an empty line
    return lines


def _ends_with_continuation(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    lines = _natural_lines(text)
    index = 0
    while index < len(lines):
        start = index
        line = lines[index].lstrip(_WHITESPACE)
        index += 1
        parts: list[str] = []
        continued_to_end = False
        while True:
            if not any(parts) and line[:1] in ("#", "!"):
                # As in Java, # or ! where the logical line is still empty starts a comment, even after a
                # continuation, and a comment never continues.
                line = ""
                break
            if not _ends_with_continuation(line):
                break
            parts.append(line[:-1])
            if index == len(lines):
                # Java keeps a line continued past the end of the text, even an empty one.
                continued_to_end = True
                line = ""
                break
            line = lines[index].lstrip(_WHITESPACE)
            index += 1
        parts.append(line)
        logical = "".join(parts)
        if logical or continued_to_end:
            yield start + 1, logical


def _split(line: str) -> tuple[str, str]:
    """Splits a logical line at the first unescaped separator into its raw (still escaped) key and value."""
    index = 0
    escaped = False
    while index < len(line):
        char = line[index]
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in _SEPARATORS or char in _WHITESPACE:
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(_WHITESPACE)
    if rest and rest[0] in _SEPARATORS:
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def _unescape(text: str, line_number: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        index += 1
        if char != "\\" or index >= len(text):
            out.append(char)
            continue
        char = text[index]
        index += 1
        if char == "u":
            digits = text[index : index + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                bad = "\\u" + digits
                raise PropertyError(f"line {line_number}: malformed \\uXXXX escape {bad!r}")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return _join_surrogates("".join(out))


def _join_surrogates(text: str) -> str:
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
