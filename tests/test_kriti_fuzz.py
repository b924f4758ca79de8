"""Fuzzing `svc.outbound.kriti`: any template, random text or a random composition of
Kriti's grammar fragments, either renders to a value or raises `KritiError` whose span is
a position and whose `serialize()` is JSON; never another exception. Nesting deeper than
`MAX_DEPTH` is refused with `KritiParseError` instead of exhausting Python's stack."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc.outbound.kriti import MAX_DEPTH, KritiError, KritiParseError, parse, render

BODY = {
    "a": {"b": [1, 2.5, "x", None, True], "c": {"d": "e"}},
    "list": [{"id": 1, "name": "n"}, {"id": 2}],
    "s": "text",
    "n": 3,
}
VARIABLES = {"$body": BODY, "$session_variables": {"x-hasura-role": "user"}, "$": [1, 2]}

ATOMS = [
    "1",
    "-2",
    "2.5",
    "1e3",
    "true",
    "false",
    "null",
    '"s"',
    '"a {{ $body.s }} b"',
    "[]",
    "{}",
    "$body",
    "$body.a",
    "$body.a.b[0]",
    "$body['a']",
    "$body?.nope.x",
    "$nope?",
    "$body.list[1]?.name",
    "$nope",
    "x",
    "i",
    "$",
]
BINARY = ["==", "!=", ">", "<", ">=", "<=", "&&", "||", "in", "??"]
FUNCTIONS = [
    "empty",
    "size",
    "inverse",
    "head",
    "tail",
    "toCaseFold",
    "toLower",
    "toUpper",
    "toTitle",
    "escapeUri",
    "fromPairs",
    "toPairs",
    "removeNulls",
    "concat",
    "not",
    "nope",
]
TOKENS = [
    *ATOMS,
    *BINARY,
    *FUNCTIONS,
    "{{",
    "}}",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    ":=",
    "?",
    ".",
    "'k'",
    '"',
    "if",
    "elif",
    "else",
    "end",
    "range",
    "_",
    "#",
    "\n",
    "\\",
    "@",
]


def _compose(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from(BINARY), children).map(" ".join),
        st.tuples(st.sampled_from(FUNCTIONS), children).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(st.sampled_from(FUNCTIONS), children).map(lambda t: f"{t[0]} {t[1]}"),
        st.lists(children, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(st.text("abc", max_size=2), children), max_size=3).map(
            lambda kv: "{" + ", ".join(f'"{k}": {v}' for k, v in kv) + "}"
        ),
        children.map(lambda c: f"({c})"),
        children.map(lambda c: "{{ " + c + " }}"),
        children.map(lambda c: '"pre {{ ' + c + ' }} post"'),
        children.map(lambda c: f"{c}.a"),
        children.map(lambda c: f"{c}[0]"),
        children.map(lambda c: f"{c}?.a"),
        st.tuples(children, children, children).map(
            lambda t: "{{ if " + t[0] + " }} " + t[1] + " {{ else }} " + t[2] + " {{ end }}"
        ),
        st.tuples(children, children, children).map(
            lambda t: (
                "{{ if false }} 0 {{ elif "
                + t[0]
                + " }} "
                + t[1]
                + " {{ else }} "
                + t[2]
                + " {{ end }}"
            )
        ),
        st.tuples(st.sampled_from(["i", "_"]), children, children).map(
            lambda t: "{{ range " + t[0] + ", x := " + t[1] + " }} " + t[2] + " {{ end }}"
        ),
        st.tuples(children, children, children).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
    )


TEMPLATES = st.recursive(st.sampled_from(ATOMS), _compose, max_leaves=12)
TOKEN_SOUP = st.lists(st.sampled_from(TOKENS), max_size=25).map(" ".join)


def _check(template: str) -> None:
    try:
        value = render(template, VARIABLES)
    except KritiError as exc:
        assert isinstance(exc.error_code, str) and isinstance(exc.message, str)
        assert exc.span is None or (len(exc.span) == 4 and all(type(v) is int for v in exc.span))
        encoded = json.dumps(exc.serialize())
        assert set(json.loads(encoded)) == {"error_code", "message", "source_position"}
        return
    json.dumps(value)  # a JSON value


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(max_size=80))
def test_random_text(template: str) -> None:
    _check(template)


@FUZZ
@given(TEMPLATES)
def test_grammar_compositions(template: str) -> None:
    _check(template)


@FUZZ
@given(TOKEN_SOUP)
def test_token_soup(template: str) -> None:
    _check(template)


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    )
)
def test_json_templates_render_to_themselves(value: Any) -> None:
    """kriti-lang's `test/Spec.hs` property: JSON without `{{` evaluates to itself."""
    text = json.dumps(value)
    if "{{" in text:
        return
    assert render(text, {}) == value


@pytest.mark.parametrize(
    "template",
    [
        "[" * 5000 + "]" * 5000,
        "(" * 5000 + "1" + ")" * 5000,
        "{{ " * 5000 + "1" + " }}" * 5000,
        '{"a": ' * 5000 + "1" + "}" * 5000,
        '"{{ ' * 3000 + "1" + ' }}"' * 3000,
        " && ".join(["true"] * 5000),
        "not " * 5000 + "true",
        "f[" * 5000 + "1" + "]" * 5000,
        "{{ if true }} " * 3000 + "1" + " {{ else }} 2 {{ end }}" * 3000,
    ],
)
def test_deep_nesting_is_refused(template: str) -> None:
    with pytest.raises(KritiParseError) as info:
        parse(template)
    assert info.value.error_code == "Parse Error"
    assert str(MAX_DEPTH) in info.value.message


def test_nesting_up_to_the_limit_renders() -> None:
    depth = MAX_DEPTH // 2
    assert render("[" * depth + "]" * depth, {}) is not None
    assert render(" && ".join(["true"] * depth), {}) is True
