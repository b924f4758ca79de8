r"""Tests for svc.execute.copy_text.decode_copy_text.

The byte strings below reproduce what Postgres (checked against 15.x) sends for
``COPY (...) TO STDOUT`` in text format: ``\N`` for NULL, ``\\`` for a
backslash, ``\b \f \n \r \t \v`` for those control characters, every other
character raw (UTF-8), ``\t`` between columns and ``\n`` after every row.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svc.execute.copy_text import decode_copy_text


def pg_copy_text(rows: list[list[str | None]]) -> bytes:
    """Encode rows the way Postgres's COPY TO (text format) does."""
    out = []
    for row in rows:
        fields = []
        for value in row:
            if value is None:
                fields.append("\\N")
                continue
            fields.append(
                value.replace("\\", "\\\\")
                .replace("\b", "\\b")
                .replace("\f", "\\f")
                .replace("\n", "\\n")
                .replace("\r", "\\r")
                .replace("\t", "\\t")
                .replace("\v", "\\v")
            )
        out.append("\t".join(fields) + "\n")
    return "".join(out).encode("utf-8")


# --- shape ------------------------------------------------------------------------


def test_empty_input() -> None:
    assert decode_copy_text(b"") == []


def test_single_row_single_column() -> None:
    assert decode_copy_text(b"42\n") == [["42"]]


def test_rows_and_columns() -> None:
    assert decode_copy_text(b"1\talice\ttrue\n2\tbob\tfalse\n") == [
        ["1", "alice", "true"],
        ["2", "bob", "false"],
    ]


def test_missing_final_newline_is_tolerated() -> None:
    assert decode_copy_text(b"1\ta\n2\tb") == [["1", "a"], ["2", "b"]]


def test_one_empty_string_row() -> None:
    # COPY (SELECT '') TO STDOUT sends a bare newline (as does a zero-column row).
    assert decode_copy_text(b"\n") == [[""]]
    assert decode_copy_text(b"\n\n") == [[""], [""]]


def test_empty_columns() -> None:
    assert decode_copy_text(b"\t\t\n") == [["", "", ""]]
    assert decode_copy_text(b"a\t\n\tb\n") == [["a", ""], ["", "b"]]


# --- NULL ---------------------------------------------------------------------------


def test_null_versus_empty_string_versus_literal_backslash_n() -> None:
    # COPY (SELECT NULL::text, '', '\N'::text, 'N') TO STDOUT
    assert decode_copy_text(b"\\N\t\t\\\\N\tN\n") == [[None, "", "\\N", "N"]]


def test_all_null_row() -> None:
    assert decode_copy_text(b"\\N\t\\N\n\\N\n") == [[None, None], [None]]


def test_null_marker_must_be_the_whole_field() -> None:
    assert decode_copy_text(b"x\\N\t\\Nx\n") == [["xN", "Nx"]]


# --- escapes ------------------------------------------------------------------------


def test_tab_newline_carriage_return_backslash() -> None:
    # COPY (SELECT 'a'||chr(9)||'b', E'line1\nline2\r\\back') TO STDOUT
    data = b"a\\tb\tline1\\nline2\\r\\\\back\n"
    assert decode_copy_text(data) == [["a\tb", "line1\nline2\r\\back"]]


def test_other_control_character_escapes() -> None:
    # COPY (SELECT chr(8)||chr(12)||chr(11)||chr(13)||chr(10)||chr(9)||'\', 'C:\') TO STDOUT
    data = b"\\b\\f\\v\\r\\n\\t\\\\\tC:\\\\\n"
    assert decode_copy_text(data) == [["\b\f\v\r\n\t\\", "C:\\"]]


def test_raw_control_characters_pass_through() -> None:
    # Postgres escapes only the six control characters above; others are raw.
    assert decode_copy_text(b"\x01\x1b\x7f\n") == [["\x01\x1b\x7f"]]


def test_escaped_backslash_followed_by_letters() -> None:
    # '\\n' in the output is a backslash and an "n", not a newline.
    assert decode_copy_text(b"\\\\n\t\\\\\\n\t\\\\\\\\\n") == [["\\n", "\\\n", "\\\\"]]


def test_backslash_at_end_of_field_before_delimiter() -> None:
    assert decode_copy_text(b"a\\\\\tb\\\\\n") == [["a\\", "b\\"]]


def test_octal_escapes() -> None:
    assert decode_copy_text(b"\\101\\1011\\7\\0101\n") == [["AA1\x07\x08" + "1"]]


def test_octal_value_is_taken_modulo_256() -> None:
    # \501 = 0o501 = 321 -> 321 & 0xFF = 0x41
    assert decode_copy_text(b"\\501\n") == [["A"]]


def test_hex_escapes() -> None:
    assert decode_copy_text(b"\\x41\\x4a\\x4A\\x7\\x414\n") == [["AJJ\x07A4"]]


def test_octal_and_hex_escapes_are_bytes_of_utf8() -> None:
    # é is C3 A9 in UTF-8; ☃ is E2 98 83.
    assert decode_copy_text(b"\\303\\251\t\\xe2\\x98\\x83\t\\303\\xa9\n") == [["é", "☃", "é"]]


def test_x_without_hex_digits_is_a_literal_x() -> None:
    assert decode_copy_text(b"\\xz\\x\n") == [["xzx"]]


def test_any_other_escaped_character_is_itself() -> None:
    assert decode_copy_text(b"\\q\\8\\9\\.x\\\"\\'\\N2\\\xc3\xa9\n") == [["q89.x\"'N2é"]]


def test_escaped_real_tab_is_data_not_a_delimiter() -> None:
    # As in Postgres's COPY FROM: backslash + a real tab character is a tab.
    assert decode_copy_text(b"a\\\tb\tc\n") == [["a\tb", "c"]]
    assert decode_copy_text(b"\\\\\tb\n") == [["\\", "b"]]  # escaped backslash, then delimiter
    assert decode_copy_text(b"\\\\\\\tb\n") == [["\\\tb"]]


def test_escaped_real_newline_is_data_not_a_row_end() -> None:
    assert decode_copy_text(b"x\\\ny\tz\nnext\n") == [["x\ny", "z"], ["next"]]
    assert decode_copy_text(b"x\\\\\ny\n") == [["x\\"], ["y"]]  # escaped backslash, then row end
    assert decode_copy_text(b"x\\\\\\\ny\n") == [["x\\\ny"]]
    assert decode_copy_text(b"x\\\n") == [["x\n"]]


def test_lone_backslash_at_end_of_data_is_dropped() -> None:
    assert decode_copy_text(b"ab\\") == [["ab"]]


def test_end_of_data_marker() -> None:
    assert decode_copy_text(b"1\ta\n\\.\n") == [["1", "a"]]
    assert decode_copy_text(b"1\n\\.\nignored\n") == [["1"]]
    assert decode_copy_text(b"\\\\.\n") == [["\\."]]  # a literal backslash-dot value


# --- unicode and errors -------------------------------------------------------------------


def test_unicode_is_sent_raw() -> None:
    # COPY (SELECT 'é ☃ 😀', 'ß') TO STDOUT
    data = "é ☃ 😀\tß\n".encode()
    assert data == b"\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80\t\xc3\x9f\n"
    assert decode_copy_text(data) == [["é ☃ 😀", "ß"]]


def test_unicode_next_to_escapes() -> None:
    assert decode_copy_text("ü\\tñ\\\\\\N€\t\\N\n".encode()) == [["ü\tñ\\N€", None]]


def test_invalid_utf8_input_raises() -> None:
    with pytest.raises(UnicodeDecodeError):
        decode_copy_text(b"\xff\n")


def test_escapes_spelling_invalid_utf8_raise() -> None:
    with pytest.raises(UnicodeDecodeError):
        decode_copy_text(b"\\777\n")  # 0xFF
    with pytest.raises(ValueError):  # UnicodeDecodeError is a ValueError
        decode_copy_text(b"ok\t\\xc3\n")  # truncated 2-byte sequence


# --- realistic output ---------------------------------------------------------------------


def test_real_postgres_output_sample() -> None:
    # Captured from PostgreSQL 15:
    # COPY (SELECT 'a'||chr(9)||'b', NULL::text, '', E'line1\nline2\r\\back', 'é ☃ 😀',
    #       chr(8)||chr(12)||chr(11)||chr(1)||chr(127), '\N'::text, 1::int,
    #       ARRAY['x,y', NULL, 'q"z'], '{"k": "v\\n"}'::jsonb, 'x'::bytea, ''::text) TO STDOUT
    data = (
        b"a\\tb\t\\N\t\tline1\\nline2\\r\\\\back\t\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80\t"
        b'\\b\\f\\v\x01\x7f\t\\\\N\t1\t{"x,y",NULL,"q\\\\"z"}\t{"k": "v\\\\\\\\n"}\t\\\\x78\t\n'
    )
    assert decode_copy_text(data) == [
        [
            "a\tb",
            None,
            "",
            "line1\nline2\r\\back",
            "é ☃ 😀",
            "\b\f\v\x01\x7f",
            "\\N",
            "1",
            '{"x,y",NULL,"q\\"z"}',
            '{"k": "v\\\\n"}',
            "\\x78",
            "",
        ]
    ]


def test_encoder_matches_captured_output() -> None:
    rows: list[list[str | None]] = [["a\tb", None, "", "line1\nline2\r\\back", "\\N"]]
    assert pg_copy_text(rows) == b"a\\tb\t\\N\t\tline1\\nline2\\r\\\\back\t\\\\N\n"


def test_many_rows_mixing_fast_and_escaped_lines() -> None:
    rows: list[list[str | None]] = []
    for i in range(5000):
        kind = i % 5
        if kind == 0:
            rows.append([str(i), f"user {i}", f"user{i}@example.com"])
        elif kind == 1:
            rows.append([str(i), None, ""])
        elif kind == 2:
            rows.append([str(i), f"multi\nline\t{i}", "C:\\dir\\"])
        elif kind == 3:
            rows.append([str(i), "ünï☃ode", '{"a": "b\\n"}'])
        else:
            rows.append([str(i), "\\N", "\\.\r\x0b\x08\x0c"])
    assert decode_copy_text(pg_copy_text(rows)) == rows


_VALUES = st.one_of(
    st.none(), st.text(), st.sampled_from(["", "\\", "\\N", "\\.", "\t", "\n", "."])
)


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.lists(_VALUES, min_size=1, max_size=6), max_size=6))
def test_round_trip_through_postgres_encoding(rows: list[list[str | None]]) -> None:
    assert decode_copy_text(pg_copy_text(rows)) == rows
