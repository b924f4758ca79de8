"""Split a Postgres SQL script into statements, and find a statement's first keyword.

The lexical rules follow the Postgres server lexer (``scan.l``) and, for deciding
where a statement ends, ``psql`` (``psqlscan.l``):

* ``'...'`` strings, with ``''`` as an escaped quote (``standard_conforming_strings``
  is assumed on, so a backslash is an ordinary character).  ``U&'...'``, ``B'...'``,
  ``X'...'`` and ``N'...'`` strings follow the same rule;
* ``E'...'`` / ``e'...'`` strings, where a backslash escapes the next character
  (so ``\\'`` does not end the string) and ``''`` is also an escaped quote.  The
  ``E`` only counts as a prefix when it is not the tail of a longer word;
* ``"..."`` quoted identifiers, with ``""`` as an escaped quote;
* dollar quotes ``$$...$$`` and ``$tag$...$tag$``, where the tag is an identifier-like
  word (letters, digits, ``_``, non-ASCII; not starting with a digit).  ``$1`` is a
  positional parameter, not a quote, and a ``$`` that continues a word
  (``a$b$``, ``x1$$``) is part of that word;
* ``--`` comments to the end of the line (``\\n`` or ``\\r``);
* ``/* ... */`` comments, which nest.

A semicolon ends a statement only at the top level: not inside any of the above,
not inside parentheses (so ``CREATE RULE ... DO ALSO (INSERT ...; UPDATE ...)`` stays
whole), and not inside a ``BEGIN ... END`` block of a statement that starts with
``CREATE [OR REPLACE] {FUNCTION|PROCEDURE}`` (SQL-standard ``BEGIN ATOMIC`` bodies;
``CASE ... END`` inside such a block is counted too, and BEGIN/CASE/END inside
parentheses are not).  These are the rules ``psql`` uses; the one simplification
is that the CREATE ... FUNCTION/PROCEDURE words must come first in the statement,
separated only by whitespace and comments (``psql`` also skips other tokens, which
only matters for invalid SQL).

Nothing here raises on malformed SQL: an unterminated string, quoted identifier,
dollar quote or block comment runs to the end of the script (it becomes part of
the last statement, and the server will report the error), and unbalanced
parentheses are tolerated (an extra ``)`` is ignored; an unclosed ``(`` keeps
later semicolons from splitting, exactly as in ``psql``).

The scanner jumps between "interesting" characters with compiled regular
expressions and skips quoted text with ``str.find`` / anchored regexes, so the
Python loop runs once per token of interest rather than once per character.
"""

from __future__ import annotations

import re

__all__ = ["first_keyword", "split_statements"]

# Postgres whitespace (scan.l: space = [ \t\n\r\f\v]); str.strip() would also
# remove e.g. U+00A0, which Postgres treats as an identifier character.
_WS = " \t\n\r\f\v"

_IDENT_START = "A-Za-z_\x80-\U0010ffff"
_IDENT_CONT = "A-Za-z0-9_$\x80-\U0010ffff"
# Characters that continue a word: a '$' or an E-prefix right after one of these
# belongs to the word rather than starting a dollar quote or an E'' string.
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")

# One token of interest per match.  Complete '...' strings, "..." identifiers,
# -- comments and simple parenthesised groups are consumed whole; the bare
# ' " ( ) $ /* alternatives catch what needs more work (unterminated quotes,
# E'' strings, nesting, dollar quotes, block comments).  A "simple" group holds
# only plain text, '...' strings not preceded by e/E, "..." identifiers and at
# most one level of simple inner groups: nothing that could hide a top-level ';'
# or needs Python to decide.  Quantifiers are possessive so a failed match never
# backtracks into a shorter, wrong one.  Every alternative starts with a literal,
# which lets the regex engine skip ahead with a character-set scan.
_GROUP_ITEM = r"""(?:
  [^;'"$()\-/]++
| -(?!-)
| /(?!\*)
| (?<![eE])'[^']*+(?:''[^']*+)*+'
| "[^"]*+(?:""[^"]*+)*+"
)"""
_TOKENS = rf"""
 ;
|'[^']*+(?:''[^']*+)*+'
|\((?:{_GROUP_ITEM}|\({_GROUP_ITEM}*+\))*+\)
|\(|\)
|"[^"]*+(?:""[^"]*+)*+"
|--[^\n\r]*+
|\$|/\*|'|"
"""
_FAST = re.compile(_TOKENS, re.VERBOSE)
# The same plus the words BEGIN, CASE and END in any case, used inside CREATE
# [OR REPLACE] FUNCTION/PROCEDURE statements.  Letter-led alternatives keep the
# fast prefix scan; word boundaries are checked by the caller.
_WORDY = re.compile(
    rf"{_TOKENS}|b(?i:egin)|B(?i:egin)|c(?i:ase)|C(?i:ase)|e(?i:nd)|E(?i:nd)", re.VERBOSE
)

# The rest of an E'...' string after its opening quote.
_EQ_END = re.compile(r"[^'\\]*+(?:(?:\\.|'')[^'\\]*+)*+'", re.DOTALL)
_DOLLAR_TAG = re.compile(rf"\$(?:[{_IDENT_START}][A-Za-z0-9_\x80-\U0010ffff]*+)?\$")
_NEWLINE = re.compile(r"[\r\n]")
_BLOCK = re.compile(r"/\*|\*/")
_NON_SPACE = re.compile(r"[^ \t\n\r\f\v]")
_WORD = re.compile(rf"[{_IDENT_START}][{_IDENT_CONT}]*+")

_FUNC_WORDS = ("function", "procedure")
# Pre-checks for _is_routine_head: CREATE or a comment after whitespace; the
# common comment-free spelling of a routine head.
_CREATE = re.compile(r"[ \t\n\r\f\v]*+(?:create|--|/\*)", re.IGNORECASE)
_ROUTINE = re.compile(
    rf"[ \t\n\r\f\v]*+create[ \t\n\r\f\v]++(?:or[ \t\n\r\f\v]++replace[ \t\n\r\f\v]++)?"
    rf"(?:function|procedure)(?![{_IDENT_CONT}])",
    re.IGNORECASE,
)


def _is_word_char(ch: str) -> bool:
    """Whether ``ch`` can continue a Postgres identifier (letter, digit, _, $, non-ASCII)."""
    return ch in _WORD_CHARS or ch >= "\x80"


def _continues_word(script: str, i: int, floor: int) -> bool:
    """Whether the ``$`` at ``i``, preceded by a word character, is part of a word.

    It is, unless what precedes it is a number (``1$$``) or a parameter
    (``$1$$``): Postgres lexes those as a separate token, so a dollar quote may
    follow directly.  Text before ``floor`` belongs to an earlier quoted token.
    """
    j = i
    while j > floor and "0" <= script[j - 1] <= "9":
        j -= 1
    if j == i:  # not preceded by a digit: a letter, _, $ or non-ASCII word
        return True
    if j > floor and script[j - 1] == "$":  # $<digits>: a parameter, unless in a word
        j -= 1
    return j > floor and _is_word_char(script[j - 1])


def _skip_block_comment(text: str, pos: int) -> int:
    """Return the index just past the (nested) block comment opening at ``pos``.

    ``text[pos:pos + 2]`` must be ``/*``.  Returns ``len(text)`` if the comment
    is never closed.
    """
    depth = 0
    search = _BLOCK.search
    while True:
        m = search(text, pos)
        if m is None:
            return len(text)
        pos = m.end()
        if text[m.start()] == "/":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return pos


def _skip_space_and_comments(text: str, pos: int) -> int:
    """Return the first index at or after ``pos`` that is not whitespace or a comment."""
    n = len(text)
    while True:
        m = _NON_SPACE.search(text, pos)
        if m is None:
            return n
        pos = m.start()
        if text.startswith("--", pos):
            m = _NEWLINE.search(text, pos)
            if m is None:
                return n
            pos = m.end()
        elif text.startswith("/*", pos):
            pos = _skip_block_comment(text, pos)
        else:
            return pos


def _append_statement(out: list[str], script: str, start: int, end: int) -> None:
    """Append ``script[start:end]`` stripped, unless it holds only whitespace/comments."""
    stmt = script[start:end].strip(_WS)
    if not stmt:
        return
    if stmt[0] in "-/" and _skip_space_and_comments(stmt, 0) == len(stmt):
        return
    out.append(stmt)


def split_statements(script: str) -> list[str]:
    """Split a Postgres SQL script into its statements.

    Args:
        script: SQL text holding zero or more statements separated by ``;``.

    Returns:
        One string per statement, in script order.  Each is the statement's
        source text with surrounding whitespace stripped and without the
        terminating semicolon; comments inside or before a statement are kept
        verbatim (so ``"-- note\\nSELECT 1;"`` gives ``["-- note\\nSELECT 1"]``).
        Statements that are empty or consist only of whitespace and comments
        (e.g. ``;;`` or a trailing ``-- end``) are dropped.  A final statement
        without a semicolon is included.

    Raises:
        Nothing for malformed SQL; see the module docstring for how unterminated
        quotes, comments and parentheses are treated.
    """
    out: list[str] = []
    n = len(script)
    start = 0  # start of the current statement
    pos = 0  # where scanning resumes
    parens = 0
    # Inside a CREATE [OR REPLACE] FUNCTION/PROCEDURE statement the words BEGIN
    # (and CASE within BEGIN) are counted against END, like psql does, so that
    # semicolons in a BEGIN ATOMIC ... END body do not split it.
    in_routine = _is_routine_head(script, 0)
    begin_depth = 0
    search = _WORDY.search if in_routine else _FAST.search
    # End of the last dollar quote: its closing '$' is not a word character for
    # what follows ($a$x$a$$b$ ... is two dollar quotes, $a$x$a$E'..' an E'' string).
    dollar_end = -1

    while True:
        m = search(script, pos)
        if m is None:
            break
        i, pos = m.span()
        c = script[i]

        if c == "'":
            if (
                i
                and script[i - 1] in "eE"
                and (i == 1 or i - 1 == dollar_end or not _is_word_char(script[i - 2]))
            ):
                # E'...': re-read with backslash escapes (the plain-string
                # alternative may have stopped at, or failed on, an escaped quote).
                q = _EQ_END.match(script, i + 1)
                if q is None:
                    pos = n
                    break
                pos = q.end()
            elif pos - i == 1:  # unterminated: the rest of the script is string
                pos = n
                break
        elif c == ";":
            if parens or begin_depth:
                continue
            _append_statement(out, script, start, i)
            start = pos
            in_routine = _is_routine_head(script, start)
            search = _WORDY.search if in_routine else _FAST.search
        elif c == "(":
            if pos - i == 1:  # not a simple (...) group consumed whole
                parens += 1
        elif c == ")":
            if parens:
                parens -= 1
        elif c == '"':
            if pos - i == 1:  # unterminated quoted identifier
                pos = n
                break
        elif c == "$":
            # A '$' continuing a word (a$b$) never opens a dollar quote.
            if (
                i != dollar_end
                and i
                and _is_word_char(script[i - 1])
                and _continues_word(script, i, max(dollar_end, 0))
            ):
                continue
            tag = _DOLLAR_TAG.match(script, i)
            if tag is None:
                continue  # $1 parameter or a stray '$'
            close = script.find(tag.group(), tag.end())
            if close < 0:
                pos = n
                break
            pos = dollar_end = close + (tag.end() - i)
        elif c == "/":  # "/*"
            pos = _skip_block_comment(script, i)
        elif (
            c != "-"  # "--" comments need nothing; else BEGIN/CASE/END from _WORDY
            and parens == 0
            and (i == 0 or i == dollar_end or not _is_word_char(script[i - 1]))
            and (pos == n or not _is_word_char(script[pos]))
        ):
            word = m.group().lower()
            if word == "begin":
                begin_depth += 1
            elif word == "end":
                if begin_depth:
                    begin_depth -= 1
            elif begin_depth:  # "case": its END must not close the BEGIN
                begin_depth += 1

    _append_statement(out, script, start, n)
    return out


def _is_routine_head(script: str, pos: int) -> bool:
    """Whether the statement at ``pos`` starts CREATE [OR REPLACE] {FUNCTION|PROCEDURE}."""
    if _CREATE.match(script, pos) is None:
        return False
    if _ROUTINE.match(script, pos) is not None:
        return True
    # Comments between the words, or some other CREATE: go word by word.
    words: list[str] = []
    while len(words) < 4:
        pos = _skip_space_and_comments(script, pos)
        m = _WORD.match(script, pos)
        if m is None:
            return False
        word = m.group().lower()
        if not words and word != "create":
            return False
        words.append(word)
        pos = m.end()
        if len(words) == 2:
            if word in _FUNC_WORDS:
                return True
            if word != "or":
                return False
        elif len(words) == 3 and word != "replace":
            return False
    return words[3] in _FUNC_WORDS


def first_keyword(statement: str) -> str:
    """Return the upper-cased first keyword of ``statement``.

    Leading whitespace, ``--`` / ``/* */`` comments and opening parentheses are
    skipped, so ``"/* x */ (SELECT 1)"`` gives ``"SELECT"`` and ``"WITH q AS
    (...) SELECT ..."`` gives ``"WITH"``.

    Args:
        statement: one SQL statement (or any SQL text; only its start is read).

    Returns:
        The first word (``[A-Za-z_][A-Za-z0-9_$]*``, non-ASCII letters allowed)
        upper-cased, e.g. ``"SELECT"``, ``"INSERT"``, ``"CREATE"``, ``"SHOW"``;
        ``""`` if the text starts with anything else (a string literal such as
        ``E'x'``, a quoted identifier, a number, an operator) or holds only
        whitespace and comments.
    """
    pos = _skip_space_and_comments(statement, 0)
    while statement.startswith("(", pos):
        pos = _skip_space_and_comments(statement, pos + 1)
    m = _WORD.match(statement, pos)
    if m is None or statement.startswith("'", m.end()):
        return ""
    return m.group().upper()
