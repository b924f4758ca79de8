r"""Kriti's modal lexer, after kriti-lang's `src/Kriti/Parser/Lexer.x` (Alex) and
`src/Kriti/Parser/Monad.hs` (positions, start codes).

Four modes (Alex start codes): `0` (top level), `expr` (inside `{{ }}`), `string`
(inside `"…"`), `literal` (inside `'…'`, only in `expr`). `"` pushes `string`, `{{`
pushes `expr`, `}}` (only in `expr`) and the closing `"` pop.

String text is decoded as JSON's escapes are (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`,
`\r`, `\t`, `\uXXXX`; a surrogate pair gives one character, a lone surrogate U+FFFD as
Data.Text stores it), plus `\{` for a literal brace (`"\{{"` is the text `{{`):
kriti-lang's tests (`test/Spec.hs`, "JSON Parsing") require any aeson-encoded JSON
without `{{` to parse and evaluate to itself. Another backslash is kept as it is.
Adjacent string fragments (`"a{b"` lexes as `a`, `{`, `b`) are joined, as kriti-lang's
post-lexing pass does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from svc.outbound.kriti.errors import LEX_ERROR, KritiParseError, Span

# Token kinds: symbols are their own text; plus these.
INT, NUM, BOOL, IDENT, STRING = "int", "num", "bool", "ident", "string"
STRING_BEGIN, STRING_END = 's"', '"e'

_IDENT = re.compile(r"\$?[a-zA-Z][$a-zA-Z0-9_\-]*|\$")
_INT = re.compile(r"-?[0-9]+")
_NUM = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+\-]?[0-9]+)?")
_WHITE = re.compile(r"[ \t\n\r\f\v]+")
_COMMENT = re.compile(r"#[^\n]*")
_STRING_RUN = re.compile(r'[^"{\\]+')
_LITERAL_RUN = re.compile(r"[^'{\\]+")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n"}
_ESCAPES.update({"r": "\r", "t": "\t", "{": "{"})
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SYMBOLS = (  # longest first
    "{{",
    "==",
    "!=",
    ">=",
    "<=",
    "&&",
    "||",
    ":=",
    "??",
    ":",
    ".",
    ",",
    ">",
    "<",
    "_",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "?",
)


@dataclass(frozen=True, slots=True)
class Token:
    """One lexeme: `kind` (a symbol's text, or `int`/`num`/`bool`/`ident`/`string`/
    `s"`/`"e`), `text` (the source text; a string fragment's content) and `span`."""

    kind: str
    text: str
    span: Span

    def render(self) -> str:
        """The token as kriti-lang's `serializeToken` prints it in errors."""
        if self.kind == STRING:
            return f'"{self.text}"'
        if self.kind in (STRING_BEGIN, STRING_END):
            return '"'
        return self.text


@dataclass(frozen=True, slots=True)
class Lexed:
    """The tokens and the span the lexer ended on (kriti-lang's `parseSpan` after the
    last lexeme or skipped whitespace: where its parser reports syntax errors)."""

    tokens: tuple[Token, ...]
    last: Span


class _Lexer:
    def __init__(self, source: str) -> None:
        self.src = source
        self.pos = 0
        self.line = 0
        self.col = 1
        self.modes = ["0"]
        self.last = Span(0, 1, 0, 1)
        self.out: list[Token] = []

    def advance(self, n: int) -> Span:
        start_line, start_col = self.line, self.col
        text = self.src[self.pos : self.pos + n]
        newlines = text.count("\n")
        if newlines:
            self.line += newlines
            self.col = n - text.rfind("\n")
        else:
            self.col += n
        self.pos += n
        span = Span(start_line, start_col, self.line, self.col)
        self.last = Span(self.last.end_line, self.last.end_column, self.line, self.col)
        return span

    def emit(self, kind: str, n: int, text: str | None = None) -> None:
        raw = self.src[self.pos : self.pos + n]
        span = self.advance(n)
        self.out.append(Token(kind, raw if text is None else text, span))

    def fail(self) -> KritiParseError:
        rest = self.src[self.pos :]
        end = Span(self.line, self.col, self.line, self.col + len(rest.encode()))
        return KritiParseError(LEX_ERROR, f"Invalid Lexeme: '{rest}'", end)

    def pop(self) -> None:
        if len(self.modes) > 1:
            self.modes.pop()

    def run(self) -> Lexed:
        src = self.src
        while self.pos < len(src):
            mode = self.modes[-1]
            if mode == "string":
                self.string_mode()
            elif mode == "literal":
                self.literal_mode()
            else:
                self.code_mode(mode == "expr")
        return Lexed(_join_strings(self.out), self.last)

    def escape(self) -> None:
        """A backslash in a string or quoted key: an escape, or itself."""
        src, pos = self.src, self.pos
        nxt = src[pos + 1 : pos + 2]
        if nxt == "u" and _HEX4.match(src, pos + 2):
            code = int(src[pos + 2 : pos + 6], 16)
            low = _low_surrogate(src, pos + 6) if 0xD800 <= code <= 0xDBFF else None
            if low is not None:  # a pair: one character, as JSON means it
                char = chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
                self.emit(STRING, 12, char)
            else:
                self.emit(STRING, 6, "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code))
        elif nxt in _ESCAPES:
            self.emit(STRING, 2, _ESCAPES[nxt])
        else:
            self.emit(STRING, 1)

    def string_mode(self) -> None:
        src, pos = self.src, self.pos
        if src[pos] == "\\":
            self.escape()
        elif src.startswith("{{", pos):
            self.emit("{{", 2)
            self.modes.append("expr")
        elif src[pos] == "{":
            self.emit(STRING, 1)
        elif src[pos] == '"':
            self.emit(STRING_END, 1)
            self.pop()
        else:
            m = _STRING_RUN.match(src, pos)
            assert m is not None
            self.emit(STRING, m.end() - pos)

    def literal_mode(self) -> None:
        src, pos = self.src, self.pos
        if src[pos] == "'":
            self.emit("'", 1)
            self.pop()
            return
        if src[pos] == "\\":
            self.escape()
            return
        m = _LITERAL_RUN.match(src, pos)
        if m is None:
            raise self.fail()
        self.emit(STRING, m.end() - pos)

    def code_mode(self, expr: bool) -> None:
        src, pos = self.src, self.pos
        for skip in (_WHITE, _COMMENT):
            m = skip.match(src, pos)
            if m:
                self.advance(m.end() - pos)
                return
        ch = src[pos]
        if ch == '"':
            self.emit(STRING_BEGIN, 1)
            self.modes.append("string")
            return
        if expr and src.startswith("}}", pos):
            self.emit("}}", 2)
            self.pop()
            return
        if expr and ch == "'":
            self.emit("'", 1)
            self.modes.append("literal")
            return
        if ch == "$" or (ch.isascii() and ch.isalpha()):
            m = _IDENT.match(src, pos)
            assert m is not None
            word = m.group(0)
            kind = BOOL if word in ("true", "false") else IDENT
            self.emit(kind, len(word))
            return
        if ch == "-" or (ch.isdigit() and ch.isascii()):
            mi, mn = _INT.match(src, pos), _NUM.match(src, pos)
            li = mi.end() - pos if mi else 0
            ln = mn.end() - pos if mn else 0
            if li == 0 and ln == 0:
                raise self.fail()
            if li >= ln:
                self.emit(INT, li)
            else:
                self.emit(NUM, ln)
            return
        for sym in _SYMBOLS:
            if src.startswith(sym, pos):
                self.emit(sym, len(sym))
                if sym == "{{":
                    self.modes.append("expr")
                return
        raise self.fail()


def _low_surrogate(src: str, pos: int) -> int | None:
    if src.startswith("\\u", pos) and _HEX4.match(src, pos + 2):
        code = int(src[pos + 2 : pos + 6], 16)
        if 0xDC00 <= code <= 0xDFFF:
            return code
    return None


def _join_strings(tokens: list[Token]) -> tuple[Token, ...]:
    out: list[Token] = []
    for tok in tokens:
        if tok.kind == STRING and out and out[-1].kind == STRING:
            prev = out[-1]
            out[-1] = Token(STRING, prev.text + tok.text, prev.span.join(tok.span))
        else:
            out.append(tok)
    return tuple(out)


def lex(source: str) -> Lexed:
    """The tokens of `source`; raises `KritiParseError` (`Lex Error`, message
    `Invalid Lexeme: '<rest of the input>'`) where no rule of the current mode matches."""
    return _Lexer(source).run()
