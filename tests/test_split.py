"""Tests for svc.sql.split: statement splitting and first-keyword detection."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svc.sql.split import first_keyword, split_statements

# --- basics ---------------------------------------------------------------------


def test_empty_and_blank_scripts() -> None:
    assert split_statements("") == []
    assert split_statements("   \n\t ") == []
    assert split_statements(";") == []
    assert split_statements(" ; ;;\n; ") == []


def test_simple_split_strips_and_drops_semicolons() -> None:
    assert split_statements("SELECT 1; SELECT 2;") == ["SELECT 1", "SELECT 2"]
    assert split_statements("  SELECT 1 ;\n\n  SELECT 2  ") == ["SELECT 1", "SELECT 2"]


def test_final_statement_without_semicolon_is_kept() -> None:
    assert split_statements("SELECT 1; SELECT 2") == ["SELECT 1", "SELECT 2"]


def test_empty_statements_between_semicolons_are_dropped() -> None:
    assert split_statements("SELECT 1;;; ;\n;SELECT 2;;") == ["SELECT 1", "SELECT 2"]


def test_only_postgres_whitespace_is_stripped() -> None:
    # U+00A0 is an identifier character for Postgres, not whitespace.
    assert split_statements("\f\vSELECT a\u00a0;") == ["SELECT a\u00a0"]


# --- comments -------------------------------------------------------------------


def test_comment_only_statements_are_dropped() -> None:
    assert split_statements("-- just a comment") == []
    assert split_statements("/* block */") == []
    assert split_statements("SELECT 1; -- trailing comment") == ["SELECT 1"]
    assert split_statements("SELECT 1; /* a */ -- b\n /* c /* d */ */ ;SELECT 2") == [
        "SELECT 1",
        "SELECT 2",
    ]


def test_comments_attached_to_a_statement_are_kept() -> None:
    assert split_statements("-- note\nSELECT 1;") == ["-- note\nSELECT 1"]
    assert split_statements("SELECT 1 /* why */;") == ["SELECT 1 /* why */"]


def test_semicolon_in_line_comment() -> None:
    assert split_statements("SELECT 1 -- not; a split\n, 2; SELECT 3") == [
        "SELECT 1 -- not; a split\n, 2",
        "SELECT 3",
    ]


def test_line_comment_ends_at_carriage_return() -> None:
    assert split_statements("SELECT 1 -- c\r; SELECT 2") == ["SELECT 1 -- c", "SELECT 2"]


def test_line_comment_at_end_of_script() -> None:
    assert split_statements("SELECT 1 -- ; no newline") == ["SELECT 1 -- ; no newline"]


def test_double_dash_starts_a_comment_even_glued_to_an_operator() -> None:
    assert split_statements("SELECT 2--1; x\n; SELECT 3") == ["SELECT 2--1; x", "SELECT 3"]


def test_semicolon_in_block_comment() -> None:
    assert split_statements("SELECT /* ; */ 1; SELECT 2") == ["SELECT /* ; */ 1", "SELECT 2"]


def test_nested_block_comments() -> None:
    script = "SELECT /* outer /* inner; */ still comment; */ 1; SELECT 2"
    assert split_statements(script) == [
        "SELECT /* outer /* inner; */ still comment; */ 1",
        "SELECT 2",
    ]
    deep = "SELECT 1 /* a /* b /* c; */ ; */ ; */; SELECT 2"
    assert split_statements(deep) == ["SELECT 1 /* a /* b /* c; */ ; */ ; */", "SELECT 2"]


def test_block_comment_edge_spellings() -> None:
    # "/*/" opens a comment; the "/" does not close it.
    assert split_statements("SELECT 1 /*/ ; */; SELECT 2") == ["SELECT 1 /*/ ; */", "SELECT 2"]
    assert split_statements("SELECT 1 /**/; SELECT 2 /***/;") == ["SELECT 1 /**/", "SELECT 2 /***/"]
    # Division and multiplication are not comments.
    assert split_statements("SELECT 4 / 2 * 1; SELECT 2") == ["SELECT 4 / 2 * 1", "SELECT 2"]


def test_quotes_inside_comments_are_ignored() -> None:
    assert split_statements("SELECT 1 -- it's\n; SELECT 2 /* \"$$ */;") == [
        "SELECT 1 -- it's",
        'SELECT 2 /* "$$ */',
    ]


# --- single-quoted strings ------------------------------------------------------------


def test_semicolon_in_string() -> None:
    assert split_statements("SELECT 'a;b'; SELECT 2") == ["SELECT 'a;b'", "SELECT 2"]


def test_doubled_quote_escape() -> None:
    assert split_statements("SELECT 'it''s; fine'; SELECT ''';'''") == [
        "SELECT 'it''s; fine'",
        "SELECT ''';'''",
    ]
    assert split_statements("SELECT ''; SELECT ''''") == ["SELECT ''", "SELECT ''''"]


def test_backslash_is_ordinary_in_standard_strings() -> None:
    # standard_conforming_strings: 'a\' is a complete string.
    assert split_statements(r"SELECT 'a\'; SELECT 2") == [r"SELECT 'a\'", "SELECT 2"]


def test_comment_markers_in_strings() -> None:
    assert split_statements("SELECT '--;', '/*;'; SELECT 2") == ["SELECT '--;', '/*;'", "SELECT 2"]


def test_prefixed_standard_strings() -> None:
    assert split_statements(r"SELECT U&'\0041;'; SELECT B'01', X'1F', N'x;'") == [
        r"SELECT U&'\0041;'",
        "SELECT B'01', X'1F', N'x;'",
    ]


# --- E'' strings ------------------------------------------------------------------


def test_escape_string_backslash_quote() -> None:
    assert split_statements(r"SELECT E'it\'s; ok'; SELECT 2") == [
        r"SELECT E'it\'s; ok'",
        "SELECT 2",
    ]


def test_escape_string_lowercase_prefix_and_doubled_quote() -> None:
    assert split_statements(r"SELECT e'a\';b'''; SELECT 2") == [r"SELECT e'a\';b'''", "SELECT 2"]


def test_escape_string_ending_in_escaped_backslash() -> None:
    assert split_statements(r"SELECT E'\\'; SELECT 2") == [r"SELECT E'\\'", "SELECT 2"]


def test_escape_string_that_is_only_an_escaped_quote() -> None:
    assert split_statements(r"SELECT E'\''; SELECT 2") == [r"SELECT E'\''", "SELECT 2"]


def test_escape_string_after_operator_or_paren() -> None:
    assert split_statements(r"SELECT 1||E'\';'; SELECT (E'\';')") == [
        r"SELECT 1||E'\';'",
        r"SELECT (E'\';')",
    ]


def test_e_at_end_of_a_word_is_not_a_prefix() -> None:
    # `xe` is an identifier followed by the standard string '\'.
    assert split_statements(r"SELECT xe'\'; SELECT 2; --'") == [r"SELECT xe'\'", "SELECT 2"]
    assert split_statements(r"SELECT date'x\'; SELECT 2") == [r"SELECT date'x\'", "SELECT 2"]


def test_escape_string_inside_parentheses() -> None:
    assert split_statements(r"INSERT INTO t VALUES (1, E'a\'; b'); SELECT 2") == [
        r"INSERT INTO t VALUES (1, E'a\'; b')",
        "SELECT 2",
    ]


# --- quoted identifiers -----------------------------------------------------------


def test_semicolon_in_quoted_identifier() -> None:
    assert split_statements('SELECT 1 AS "a;b"; SELECT 2') == ['SELECT 1 AS "a;b"', "SELECT 2"]


def test_doubled_double_quote_in_identifier() -> None:
    assert split_statements('SELECT "x"";y" FROM "t;""u"; SELECT 2') == [
        'SELECT "x"";y" FROM "t;""u"',
        "SELECT 2",
    ]


def test_single_quote_inside_identifier_and_vice_versa() -> None:
    assert split_statements("SELECT \"it's\"; SELECT '\"'; SELECT 3") == [
        'SELECT "it\'s"',
        "SELECT '\"'",
        "SELECT 3",
    ]


# --- dollar quotes ------------------------------------------------------------------


def test_anonymous_dollar_quote() -> None:
    assert split_statements("SELECT $$a;b$$; SELECT 2") == ["SELECT $$a;b$$", "SELECT 2"]


def test_tagged_dollar_quote() -> None:
    assert split_statements("SELECT $body$ ; $$ ; $body$; SELECT 2") == [
        "SELECT $body$ ; $$ ; $body$",
        "SELECT 2",
    ]


def test_dollar_tags_are_case_sensitive_and_must_match() -> None:
    assert split_statements("SELECT $a$ ; $A$ ; $b$ ; $a$; SELECT 2") == [
        "SELECT $a$ ; $A$ ; $b$ ; $a$",
        "SELECT 2",
    ]


def test_dollar_quote_contents_are_opaque() -> None:
    script = "SELECT $q$ ' \" -- /* ; $q$; SELECT 2"
    assert split_statements(script) == ["SELECT $q$ ' \" -- /* ; $q$", "SELECT 2"]


def test_dollar_tag_with_digits_and_underscore() -> None:
    assert split_statements("SELECT $_t1$;$_t1$; SELECT $é$;$é$") == [
        "SELECT $_t1$;$_t1$",
        "SELECT $é$;$é$",
    ]


def test_positional_parameters_are_not_quotes() -> None:
    assert split_statements("SELECT $1, $2; SELECT $10 + $3") == [
        "SELECT $1, $2",
        "SELECT $10 + $3",
    ]
    assert split_statements("SELECT * FROM t WHERE a = $1; SELECT 2") == [
        "SELECT * FROM t WHERE a = $1",
        "SELECT 2",
    ]


def test_dollar_inside_identifier_is_not_a_quote() -> None:
    assert split_statements("SELECT a$b$; SELECT c$$; SELECT 3") == [
        "SELECT a$b$",
        "SELECT c$$",
        "SELECT 3",
    ]


def test_dollar_quote_after_parameter_or_number() -> None:
    assert split_statements("SELECT $1$$;$$; SELECT 2") == ["SELECT $1$$;$$", "SELECT 2"]
    assert split_statements("SELECT x1$$; SELECT 2") == ["SELECT x1$$", "SELECT 2"]


def test_adjacent_dollar_quotes() -> None:
    assert split_statements("SELECT $a$x$a$$b$;$b$; SELECT 2") == [
        "SELECT $a$x$a$$b$;$b$",
        "SELECT 2",
    ]


def test_create_function_with_dollar_body() -> None:
    script = """
CREATE OR REPLACE FUNCTION public.bump(n integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  x integer := n;  -- a comment; inside the body
BEGIN
  x := x + 1;
  RAISE NOTICE 'x = %; done', x;
  RETURN x;
END;
$$;
SELECT public.bump(1);
"""
    stmts = split_statements(script)
    assert len(stmts) == 2
    assert stmts[0].startswith("CREATE OR REPLACE FUNCTION public.bump")
    assert stmts[0].endswith("END;\n$$")
    assert stmts[1] == "SELECT public.bump(1)"
    assert [first_keyword(s) for s in stmts] == ["CREATE", "SELECT"]


def test_do_block_with_tagged_body() -> None:
    script = "DO $do$ BEGIN PERFORM 1; PERFORM $$;$$; END $do$; SELECT 1"
    assert split_statements(script) == [
        "DO $do$ BEGIN PERFORM 1; PERFORM $$;$$; END $do$",
        "SELECT 1",
    ]


# --- parentheses and BEGIN ATOMIC (psql rules) ---------------------------------------


def test_semicolon_inside_parentheses_does_not_split() -> None:
    script = (
        "CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO a VALUES (1); DELETE FROM b);"
        " SELECT 1"
    )
    assert split_statements(script) == [
        "CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO a VALUES (1); DELETE FROM b)",
        "SELECT 1",
    ]


def test_unbalanced_close_paren_is_ignored() -> None:
    assert split_statements("SELECT 1); SELECT (2)") == ["SELECT 1)", "SELECT (2)"]


def test_begin_atomic_function_body() -> None:
    script = """CREATE FUNCTION f(a int) RETURNS int LANGUAGE sql
BEGIN ATOMIC
  SELECT CASE WHEN a > 0 THEN 1 ELSE 0 END;
  SELECT a + 1;
END;
CREATE OR REPLACE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES (1); end;
select 1"""
    stmts = split_statements(script)
    assert len(stmts) == 3
    assert stmts[0].endswith("SELECT a + 1;\nEND")
    assert stmts[1] == (
        "CREATE OR REPLACE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES (1); end"
    )
    assert stmts[2] == "select 1"


def test_begin_end_outside_routines_are_ordinary_statements() -> None:
    assert split_statements("BEGIN; SELECT 1; END; CREATE TABLE t (begin_at int); COMMIT") == [
        "BEGIN",
        "SELECT 1",
        "END",
        "CREATE TABLE t (begin_at int)",
        "COMMIT",
    ]


def test_routine_words_inside_quotes_or_longer_words_are_not_counted() -> None:
    script = (
        "CREATE FUNCTION f() RETURNS text LANGUAGE sql RETURN 'begin' || \"begin\" || beginning;"
        " SELECT 2"
    )
    assert split_statements(script) == [
        "CREATE FUNCTION f() RETURNS text LANGUAGE sql RETURN 'begin' || \"begin\" || beginning",
        "SELECT 2",
    ]


def test_routine_head_with_comments_between_words() -> None:
    script = (
        "create /* c */ or -- x\n replace function f() returns int begin atomic select 1; end;"
        " select 2"
    )
    assert split_statements(script) == [
        "create /* c */ or -- x\n replace function f() returns int begin atomic select 1; end",
        "select 2",
    ]


# --- malformed input ----------------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        "SELECT 1; SELECT 'unterminated; SELECT 3",
        "SELECT 1; SELECT E'unterminated\\'; SELECT 3",
        'SELECT 1; SELECT "unterminated; SELECT 3',
        "SELECT 1; SELECT $$unterminated; SELECT 3",
        "SELECT 1; SELECT /* unterminated /* */; SELECT 3",
        "SELECT 1; SELECT (unclosed; SELECT 3",
    ],
)
def test_unterminated_constructs_swallow_the_rest(script: str) -> None:
    stmts = split_statements(script)
    assert stmts == ["SELECT 1", script[len("SELECT 1; ") :]]


# --- first_keyword ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "keyword"),
    [
        ("SELECT 1", "SELECT"),
        ("select 1", "SELECT"),
        ("  \n\tWith q AS (SELECT 1) SELECT * FROM q", "WITH"),
        ("INSERT INTO t VALUES (1)", "INSERT"),
        ("create table t ()", "CREATE"),
        ("SHOW search_path", "SHOW"),
        ("(SELECT 1) UNION (SELECT 2)", "SELECT"),
        ("( ( (values (1))))", "VALUES"),
        ("-- comment\nUPDATE t SET a = 1", "UPDATE"),
        ("/* a /* nested */ b */ DELETE FROM t", "DELETE"),
        ("( /* c */ -- d\n (SELECT 1))", "SELECT"),
        ("explain analyze select 1", "EXPLAIN"),
        ("", ""),
        ("   ", ""),
        ("-- only a comment", ""),
        ("/* unterminated", ""),
        ("(((", ""),
        ("'string'", ""),
        ("E'string'", ""),
        ('"quoted"', ""),
        ("123", ""),
        ("; SELECT 1", ""),
    ],
)
def test_first_keyword(statement: str, keyword: str) -> None:
    assert first_keyword(statement) == keyword


def test_first_keyword_of_split_statements() -> None:
    script = (
        "-- setup\nBEGIN; WITH x AS (SELECT 1) SELECT * FROM x; (SELECT 2); SHOW TimeZone; COMMIT;"
    )
    assert [first_keyword(s) for s in split_statements(script)] == [
        "BEGIN",
        "WITH",
        "SELECT",
        "SHOW",
        "COMMIT",
    ]


# --- large scripts and properties ---------------------------------------------------


_STATEMENT_TEMPLATES = [
    "INSERT INTO t (id, name, note) VALUES ({i}, 'name {i}', 'it''s; row {i}')",
    'SELECT "we;ird""col", count(*) FROM s WHERE id = $1 AND x = {i} /* a; /* b; */ c; */',
    "UPDATE t SET v = $$a;b {i}$$ || E'\\';' WHERE id IN (SELECT id FROM u WHERE z > {i})",
    "CREATE FUNCTION f{i}(x int) RETURNS int LANGUAGE plpgsql AS $fn$ BEGIN RETURN x; END; $fn$",
    "CREATE PROCEDURE p{i}() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES ({i}); END",
    "DELETE FROM t WHERE a = '{pad}' AND b = {i} -- trailing; comment\n",
]


def test_large_generated_script() -> None:
    pad = "x" * 60
    expected = [
        _STATEMENT_TEMPLATES[i % len(_STATEMENT_TEMPLATES)].format(i=i, pad=pad).strip()
        for i in range(30_000)
    ]
    # "\n;" rather than ";": a statement may end in a -- comment.
    script = "\n;\n".join(expected) + "\n;\n"
    while len(script) < 3_000_000:  # pad to 3 MB with whitespace and comment-only noise
        script += "-- filler ;\n" * 1000
    assert len(script) >= 3_000_000
    stmts = split_statements(script)
    assert len(stmts) == 30_000
    assert stmts == expected


_FRAGMENTS = st.sampled_from(
    [
        "SELECT 1",
        "x",
        "'a;b'",
        "'it''s'",
        "E'\\';'",
        "e'\\\\'",
        '"q;""x"',
        "$$;$$",
        "$t$ ; $$ $t$",
        "$1",
        "a$b$",
        "(1; 2)",
        "-- c;\n",
        "/* a /* ; */ ; */",
        "U&'x'",
        "f(x, 'y')",
        "\n",
        "+",
    ]
)


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.lists(_FRAGMENTS, min_size=1, max_size=8), max_size=8))
def test_joined_statements_split_back(statements: list[list[str]]) -> None:
    texts = ["SELECT " + " ".join(parts) for parts in statements]
    # "-- c;\n" may end a statement; the newline keeps the ';' out of the comment.
    script = ";\n".join(texts) + ("\n;" if texts else "")
    assert split_statements(script) == [t.strip(" \t\n\r\f\v") for t in texts]
