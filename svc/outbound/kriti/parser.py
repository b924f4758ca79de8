"""Kriti's parser: recursive descent over the lexer's tokens, after kriti-lang's
`src/Kriti/Parser/Grammar.y` (Happy).

    expr     := binary ['?' expr ':' expr]
    binary   := operands joined by, loosest first: `in`, `||`, `&&`, `??` (each
                right-associative), `== != > < >= <=` (non-associative)
    operand  := primary postfix*
    postfix  := '.' ident | '[' ("'" string "'" | expr) ']'
              | '?' ('.' ident | '.'? '[' … ']')+     (one optional chain)
              | '?'                                  (`foo?`, before a non-operand)
    primary  := ident '(' expr ')' | ident operand | ident | null | true | false | number | string
              | '[' [expr (',' expr)*] ']' | '{' [string ':' expr (',' …)*] '}'
              | '(' expr ')' | '{{' expr '}}' | if | range
    if       := '{{' 'if' expr '}}' expr ('{{' 'elif' expr '}}' expr)*
                '{{' 'else' '}}' expr '{{' 'end' '}}'
    range    := '{{' 'range' (ident | '_') ',' ident ':=' expr '}}' expr '{{' 'end' '}}'
    string   := '"' (text | '{{' expr '}}')* '"'

`ident operand` (juxtaposition, kriti-lang's `apps atom`: `toLower x.name`) and
`ident(expr)` both call the function `ident`; postfix steps after `f(x)` apply to the
result, after `f x.a` they belong to the argument. `name[e]` indexes; `name[a, b]` and
`name []` apply `name` to the array (`concat [[1], [2]]`, kriti-lang's example27).
Expressions nested deeper than `MAX_DEPTH` (100) are refused with a `Parse Error`, so
no template can exhaust Python's stack in the parser or the evaluator.

Like kriti-lang (whose lexer runs to the end before Happy parses), a syntax error is
reported at the span the lexer ended on, with the offending token in the message.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial

from svc.outbound.kriti import nodes as n
from svc.outbound.kriti.errors import PARSE_ERROR, KritiParseError, Span
from svc.outbound.kriti.lexer import (
    BOOL,
    IDENT,
    INT,
    NUM,
    STRING,
    STRING_BEGIN,
    STRING_END,
    Lexed,
    Token,
    lex,
)

MAX_DEPTH = 100  # expressions nested deeper are refused (keeps Python's stack safe)
_KEYWORDS = frozenset({"if", "elif", "else", "end", "null", "range", "in"})
_PREC = {"in": 1, "||": 2, "&&": 3, "??": 4}
_COMPARISONS = frozenset({"==", "!=", ">", "<", ">=", "<="})
_CMP_PREC = 5
_OPERAND_ENDS = frozenset({"}}", ",", "]", ")", "}", "??", "&&", "||", "in", *_COMPARISONS})
_ARGUMENT_STARTS = frozenset({IDENT, "null", BOOL, INT, NUM, STRING_BEGIN, "{"})


def _number(tok: Token) -> int | float:
    text = tok.text
    if len(text) > 4000:  # beyond Python's int/str conversion limit: a float (maybe inf)
        return float(text)
    if tok.kind == INT:
        return int(text)
    if "." not in text:
        mantissa, _, exponent = text.lower().partition("e")
        if not exponent or 0 <= int(exponent) <= 400:
            scaled: int = int(mantissa) * 10 ** int(exponent or "0")
            return scaled
    return float(text)


class _Parser:
    def __init__(self, lexed: Lexed) -> None:
        self.toks = lexed.tokens
        self.last = lexed.last
        self.i = 0
        self.depth = 0

    # -- token helpers -------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    def kind(self, ahead: int = 0) -> str | None:
        tok = self.peek(ahead)
        if tok is None:
            return None
        if tok.kind == IDENT and tok.text in _KEYWORDS:
            return tok.text
        return tok.kind

    def error(self) -> KritiParseError:
        tok = self.peek()
        if tok is None:
            return KritiParseError(PARSE_ERROR, "ParseError: Empty token stream.", self.last)
        return KritiParseError(PARSE_ERROR, f"Unexpected token '{tok.render()}'.", self.last)

    def take(self, kind: str) -> Token:
        tok = self.peek()
        if tok is None or self.kind() != kind:
            raise self.error()
        self.i += 1
        return tok

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            tok = self.peek()
            raise KritiParseError(
                PARSE_ERROR,
                f"ParseError: Nesting deeper than {MAX_DEPTH}.",
                tok.span if tok else self.last,
            )

    def nested(self, parse: Callable[[], n.Node]) -> n.Node:
        self.enter()
        try:
            return parse()
        finally:
            self.depth -= 1

    # -- grammar ---------------------------------------------------------------------
    def top(self) -> n.Node:
        node = self.expr()
        if self.peek() is not None:
            raise self.error()
        return node

    def expr(self) -> n.Node:
        self.enter()
        try:
            cond = self.binary(1)
            if self.kind() != "?":
                return cond
            self.i += 1
            then = self.expr()
            self.take(":")
            other = self.expr()
            return n.Ternary(cond.span.join(other.span), cond, then, other)
        finally:
            self.depth -= 1

    def binary(self, min_prec: int) -> n.Node:
        left = self.operand()
        while True:
            op = self.kind()
            if op in _COMPARISONS and min_prec <= _CMP_PREC:
                self.i += 1
                right = self.operand()
                left = n.Binary(left.span.join(right.span), op, left, right)
                if self.kind() in _COMPARISONS:
                    raise self.error()
                continue
            prec = _PREC.get(op or "")
            if op is None or prec is None or prec < min_prec:
                return left
            self.i += 1
            right = self.nested(partial(self.binary, prec))
            left = n.Binary(left.span.join(right.span), op, left, right)

    def operand(self) -> n.Node:
        node, postfix = self.primary()
        return self.postfix(node) if postfix else node

    def postfix(self, node: n.Node) -> n.Node:
        while True:
            k = self.kind()
            if k == ".":
                self.i += 1
                name = self.take(IDENT)
                node = n.Field(node.span.join(name.span), node, name.text)
            elif k == "[":
                key, end = self.bracket()
                node = n.Field(node.span.join(end), node, key)
            elif k == "?" and self.kind(1) in (".", "["):
                self.i += 1
                keys: list[str | n.Node] = []
                while self.kind() in (".", "["):
                    if self.kind() == "." and self.kind(1) == "[":
                        self.i += 1  # `?.[…]`, as kriti-lang's pathLookups example writes it
                    if self.kind() == ".":
                        self.i += 1
                        keys.append(self.take(IDENT).text)
                    else:
                        keys.append(self.bracket()[0])
                node = n.OptionalFields(node.span, node, tuple(keys))
            elif k == "?" and self.ends_operand(1):
                self.i += 1  # `foo?`: the value, or null when it fails (README.md)
                node = n.OptionalFields(node.span, node, ())
            else:
                return node

    def ends_operand(self, ahead: int) -> bool:
        """Whether the token `ahead` cannot begin an expression (so a `?` before it is
        `foo?`, not a ternary)."""
        k = self.kind(ahead)
        if k == "{{":
            return self.kind(ahead + 1) in ("else", "elif", "end")
        return k is None or k in _OPERAND_ENDS

    def name_then_bracket(self, name: Token) -> tuple[n.Node, bool]:
        """`name[…]`: an index (`x[0]`, `x['k']`, `x[$i]`), or `name` applied to an
        array (`concat [[1], [2]]`, `removeNulls []`) when the brackets hold anything but
        one expression."""
        var = n.Var(name.span, name.text)
        if self.kind(1) == "'":
            return var, True
        begin = self.take("[")
        items: list[n.Node] = []
        if self.kind() != "]":
            items.append(self.expr())
            if self.kind() == "]":
                end = self.take("]")
                return n.Field(name.span.join(end.span), var, items[0]), True
            while self.kind() == ",":
                self.i += 1
                items.append(self.expr())
        end = self.take("]")
        arg = self.postfix(n.Array(begin.span.join(end.span), tuple(items)))
        return n.Call(name.span.join(arg.span), name.text, arg), False

    def starts_argument(self) -> bool:
        """Whether the next token begins a juxtaposed argument (`toLower x.name`,
        `concat {{ range … }}`): an operand's first token, `{{` unless it opens
        `else`/`elif`/`end`; not `[`, which indexes (`x[0]`: Happy's `%right '['`)."""
        k = self.kind()
        if k == "{{":
            return self.kind(1) not in ("else", "elif", "end")
        return k in _ARGUMENT_STARTS

    def bracket(self) -> tuple[str | n.Node, Span]:
        self.take("[")
        key: str | n.Node
        if self.kind() == "'":
            self.i += 1
            key_tok = self.take(STRING)
            self.take("'")
            key = n.Literal(key_tok.span, key_tok.text)
        else:
            key = self.expr()
        end = self.take("]")
        return key, end.span

    def primary(self) -> tuple[n.Node, bool]:
        tok = self.peek()
        k = self.kind()
        if tok is None:
            raise self.error()
        if k == IDENT:
            self.i += 1
            if self.kind() == "(":
                self.i += 1
                arg = self.expr()
                close = self.take(")")
                return n.Call(tok.span.join(close.span), tok.text, arg), True
            if self.kind() == "[":
                return self.name_then_bracket(tok)
            if self.starts_argument():
                arg = self.nested(self.operand)
                return n.Call(tok.span.join(arg.span), tok.text, arg), False
            return n.Var(tok.span, tok.text), True
        if k == "null":
            self.i += 1
            return n.Literal(tok.span, None), True
        if k == BOOL:
            self.i += 1
            return n.Literal(tok.span, tok.text == "true"), True
        if k in (INT, NUM):
            self.i += 1
            return n.Literal(tok.span, _number(tok)), True
        if k == STRING_BEGIN:
            return self.string(), True
        if k == "[":
            return self.array(), True
        if k == "{":
            return self.obj(), True
        if k == "(":
            self.i += 1
            inner = self.expr()
            self.take(")")
            return inner, True
        if k == "{{":
            if self.kind(1) == "if":
                return self.if_(), True
            if self.kind(1) == "range":
                return self.range_(), True
            self.i += 1
            inner = self.expr()
            self.take("}}")
            return inner, False
        raise self.error()

    def string(self) -> n.Node:
        begin = self.take(STRING_BEGIN)
        parts: list[n.Node] = []
        while self.kind() != STRING_END:
            tok = self.peek()
            if tok is not None and tok.kind == STRING:
                self.i += 1
                parts.append(n.Literal(tok.span, tok.text))
            else:
                self.take("{{")
                parts.append(self.expr())
                self.take("}}")
        end = self.take(STRING_END)
        return n.StringTemplate(begin.span.join(end.span), tuple(parts))

    def array(self) -> n.Node:
        begin = self.take("[")
        items: list[n.Node] = []
        if self.kind() != "]":
            items.append(self.expr())
            while self.kind() == ",":
                self.i += 1
                items.append(self.expr())
        end = self.take("]")
        return n.Array(begin.span.join(end.span), tuple(items))

    def obj(self) -> n.Node:
        begin = self.take("{")
        fields: list[tuple[str, n.Node]] = []
        if self.kind() != "}":
            fields.append(self.field())
            while self.kind() == ",":
                self.i += 1
                fields.append(self.field())
        end = self.take("}")
        return n.Object(begin.span.join(end.span), tuple(fields))

    def field(self) -> tuple[str, n.Node]:
        self.take(STRING_BEGIN)
        key = ""
        if self.kind() == STRING:
            key = self.take(STRING).text
        self.take(STRING_END)
        self.take(":")
        return key, self.expr()

    def if_(self) -> n.Node:
        begin = self.take("{{")
        self.take("if")
        cond = self.expr()
        self.take("}}")
        then = self.expr()
        elifs: list[n.Branch] = []
        while self.kind() == "{{" and self.kind(1) == "elif":
            start = self.take("{{")
            self.i += 1
            econd = self.expr()
            self.take("}}")
            body = self.expr()
            elifs.append(n.Branch(start.span.join(body.span), econd, body))
        self.take("{{")
        self.take("else")
        self.take("}}")
        other = self.expr()
        self.take("{{")
        self.take("end")
        end = self.take("}}")
        return n.If(begin.span.join(end.span), cond, then, tuple(elifs), other)

    def range_(self) -> n.Node:
        begin = self.take("{{")
        self.take("range")
        index: str | None = None
        if self.kind() == "_":
            self.i += 1
        else:
            index = self.take(IDENT).text
        self.take(",")
        binder = self.take(IDENT).text
        self.take(":=")
        source = self.expr()
        self.take("}}")
        body = self.expr()
        self.take("{{")
        self.take("end")
        end = self.take("}}")
        return n.Range(begin.span.join(end.span), index, binder, source, body)


@lru_cache(maxsize=1024)
def parse(template: str) -> n.Node:
    """The syntax tree of `template` (a frozen `nodes.Node`); raises `KritiParseError`:
    `Lex Error` (no lexer rule matches), `Parse Error` (`Unexpected token '<t>'.` or
    `ParseError: Empty token stream.`, at the span the lexer ended on), or `Parse Error`
    when nesting exceeds `MAX_DEPTH`. Cached: the same templates render per request."""
    return _Parser(lex(template)).top()
