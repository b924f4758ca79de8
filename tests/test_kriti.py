"""kriti-lang's own test cases (github.com/hasura/kriti-lang, `test/Spec.hs` and
`test/data/**`) against `svc.outbound.kriti`, plus the semantics of `src/Kriti/Eval.hs`,
`src/Kriti/CustomFunctions.hs` and the error serialization of `src/Kriti/Error.hs` and
`src/Kriti/Parser/Monad.hs`. Expected values are written out by hand from the golden
files; where a golden file is not stored (kriti-lang's `test/data/eval/success/
source.json`), the source below stands in for it and the expected values are worked out
from kriti-lang's function definitions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svc.outbound.kriti import (
    CustomFunctionError,
    KritiError,
    KritiEvalError,
    KritiParseError,
    parse,
    render,
)

# Stands in for kriti-lang's `test/data/eval/success/source.json` (an array of generated
# people: guid, name, email, gender, balance, friends, tags, isActive, eyeColor).
SOURCE: list[dict[str, Any]] = [
    {
        "guid": "43A922DA-9665",
        "isActive": False,
        "balance": "$1,939.61",
        "eyeColor": "brown",
        "name": "Shepard Mccall",
        "gender": "male",
        "email": "shepard mccall@example.com",
        "tags": ["a", "b"],
        "friends": [{"id": 0}, {"id": 1}],
    },
    {
        "guid": "B0C1",
        "isActive": True,
        "balance": "$2,000.00",
        "eyeColor": "blue",
        "name": "Wanda Payne",
        "gender": "female",
        "email": "wanda@example.com",
        "tags": [],
        "friends": [],
    },
]


def run(template: str, **variables: Any) -> Any:
    return render(template, {"$": SOURCE, **variables})


# --- test/Spec.hs "JSON Parsing" -------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ('"\\u001c"', "\x1c"),  # "can handle unicode escape sequences"
        ('"\u03c3"', "\u03c3"),  # "can handle unicode keys" (a literal sigma)
        ('"{"', "{"),  # "can handle '{'"
        ('"\\{{"', "{{"),  # "can parse '\\{{' as '{{'"
        ('"\\u03C3"', "\u03c3"),  # "can parse 'U+03C3' as 'sigma'"
        ('"\\u0041"', "A"),  # "can parse 'U+0041' as 'A'"
    ],
)
def test_json_parsing_edge_cases(template: str, expected: Any) -> None:
    """test/Spec.hs, `jsonParse` "Edge Cases"."""
    assert render(template, {}) == expected


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -12,
        1.5,
        0.01,
        1e22,
        'text with "quotes", a \\ backslash,\n a newline and \u0007',
        [],
        {},
        [1, [2, [3, {"a": None}]]],
        {"key": {"nested": [True, False, None, "x"]}, "": "empty key", "\u03c3": 1},
    ],
)
def test_json_round_trips(value: Any) -> None:
    """test/Spec.hs, `jsonRoundTrip` and "can parse JSON as Kriti": JSON without `{{`
    evaluates to itself."""
    assert render(json.dumps(value), {}) == value
    assert render(json.dumps(value, ensure_ascii=False, indent=2), {}) == value


# --- test/data/eval/success ------------------------------------------------------------


def test_eval_example12_operators() -> None:
    """test/data/eval/success/examples/example12.kriti → golden/example12.json."""
    template = (
        "[\n  1 < 2,\n  1 > 2,\n  1 == 2,\n  true == true,\n  true && true,\n"
        "  true && false,\n  true || false,\n  false || false\n]\n"
    )
    assert run(template) == [True, False, False, True, True, False, True, False]


def test_eval_example19_if_statements() -> None:
    """test/data/eval/success/examples/example19.kriti (golden/example19.json has a 7th
    value for the `not` line the example now comments out with `#`)."""
    template = """# If Statement Examples
[
  {{ if ((1) != 3) }} true {{ else }} false {{ end }},
  #{{ if not ((1) != 3) }} true {{ else }} false {{ end }},
  {{ if ((1) >= 3) }} true {{ else }} false {{ end }},
  {{ if ((1) <= 3) }} true {{ else }} false {{ end }},
  {{ if "foo" in ["foo"] }} 1 {{ else }} 0 {{ end }},
  {{ if "foo" in { "foo": true } }} 1 {{ else }} 0 {{ end }},
  {{ if ("foo" in { "foo": true }) }} 1 {{ else }} 0 {{ end }}
]
"""
    assert run(template) == [True, False, True, 1, 1, 1]
    with_not = template.replace("#{{ if not", "{{ if not")
    assert run(with_not) == [True, False, False, True, 1, 1, 1]  # golden/example19.json


def test_eval_example22_optional_then_default() -> None:
    """test/data/eval/success/examples/example22.kriti: the optional chain swallows the
    failed required lookup of its target, and `??` replaces the null."""
    assert run("{{ $[0].foo?.bar ?? true }}") is True


@pytest.mark.parametrize("example", ["example16", "example17"])
def test_eval_examples16_17_escape_uri(example: str) -> None:
    """test/data/eval/success/examples/example16.kriti and example17.kriti."""
    template = "{{ escapeUri $[0].email }}"
    if example == "example17":
        template = f'"{template}"\n'
    assert run(template) == "shepard%20mccall%40example.com"


def test_eval_example23_functions_by_juxtaposition() -> None:
    """test/data/eval/success/examples/example23.kriti."""
    template = """{
    "agents":
    {{ range i, x := $ }}
        {
            "agent_id" : {{ toLower x.guid }},
            "friends" : {{ size x.friends }},
            "gender" : {{toUpper (head x.gender)}},
            "money" : {{tail x.balance}},
            "tags" : {{ not (empty x.tags) }},
            "agent_name" : {{ toTitle (inverse x.name) }}
        }
    {{ end }}
}"""
    assert run(template) == {
        "agents": [
            {
                "agent_id": "43a922da-9665",
                "friends": 2,
                "gender": "M",
                "money": "1,939.61",
                "tags": True,
                "agent_name": "Llaccm Drapehs",
            },
            {
                "agent_id": "b0c1",
                "friends": 0,
                "gender": "F",
                "money": "2,000.00",
                "tags": False,
                "agent_name": "Enyap Adnaw",
            },
        ]
    }


def test_eval_example24_remove_nulls_from_pairs() -> None:
    """test/data/eval/success/examples/example24.kriti (trimmed to two pairs)."""
    template = """{
    "agents":
    {{ removeNulls
        {{ range i, x := $ }}
            {{ if i > 0 }}
                {{ fromPairs [
                        ["agent_id", {{ toLower x.guid }}],
                        ["friends", {{ size x.friends }}]
                    ]
                }}
            {{ else }}
                null
            {{ end }}
        {{ end }}
    }}
}"""
    assert run(template) == {"agents": [{"agent_id": "b0c1", "friends": 0}]}


def test_eval_examples25_27_concat_to_pairs() -> None:
    """test/data/eval/success/examples/example25.kriti, example26.kriti, example27.kriti;
    golden/example29.json (`concat` of objects: the right-most wins)."""
    ranged = '{"arrays": {{ concat {{ range i, x := $ }} [ {{ i }}, {{ i }} ] {{ end }} }} }'
    assert run(ranged) == {"arrays": [0, 0, 1, 1]}
    pairs = '{"array": {{ toPairs { "a" : "b", "c" : "d" } }} }'
    assert run(pairs) == {"array": [["a", "b"], ["c", "d"]]}
    template = (
        '{"array1": {{ concat [ [1,2], [3,4] ] }},'
        ' "array2": {{ concat [ "hello", " ", "world" ] }}}'
    )
    assert run(template) == {"array1": [1, 2, 3, 4], "array2": "hello world"}
    objects = '{{ concat([{"a":1, "b":2}, {"b":3, "c":4}]) }}'
    assert run(objects) == {"a": 1, "b": 3, "c": 4}


def test_eval_example31_interpolating_json() -> None:
    """test/data/eval/success/golden/example31.json: non-strings interpolate as aeson's
    compact JSON (object keys in order)."""
    people = [{"name": "Shanna Emerson", "id": 0}, {"id": 1, "name": "Charmaine Tate"}]
    template = '["{{ $people[1] }}", "{{ $people }}", "{{ null }}", "is: {{ $people?[9] }}"]'
    assert render(template, {"$people": people}) == [
        '{"id":1,"name":"Charmaine Tate"}',
        '[{"id":0,"name":"Shanna Emerson"},{"id":1,"name":"Charmaine Tate"}]',
        "null",
        "is: null",
    ]


def test_readme_examples() -> None:
    """README.md "Transformation Examples" 1 and 2."""
    event = {
        "event": {
            "name": "Freddie Jones",
            "age": 27,
            "author": {
                "articles": [
                    {"id": 0, "title": "The Elements", "length": 150, "published": True},
                    {"id": 1, "title": "ARRL Handbook", "length": 1000, "published": True},
                    {"id": 2, "title": "The Mars Trilogy", "length": 500, "published": False},
                ]
            },
        }
    }
    template = """{
  "author": {
    "name": {{$.event.name}},
    "age": {{$.event.age}},
    "articles": [
{{ range _, x := $.event.author.articles }}
  {{ if x.published }}
      {
        "id": {{x.id}},
        "title": {{x.title}}
      }
  {{ else }}
      null
  {{ end }}
{{ end }}
    ]
  }
}"""
    assert render(template, {"$": event}) == {
        "author": {
            "name": "Freddie Jones",
            "age": 27,
            "articles": [
                [
                    {"id": 0, "title": "The Elements"},
                    {"id": 1, "title": "ARRL Handbook"},
                    None,
                ]
            ],
        }
    }


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        # README.md "Basic Functions Collection" (the table's examples and outputs)
        (
            '{"object": {{ empty({"a": 1}) }}, "string": {{ empty("") }}, '
            '"array": {{ empty([1]) }} }',
            {"array": False, "object": False, "string": True},
        ),
        (
            '{"object": {{ size({"a": 1}) }}, "string": {{ size("asdf") }}, '
            '"array": {{ size([1]) }} }',
            {"array": 1, "object": 1, "string": 4},
        ),
        (
            '{"string": {{ inverse("asdf") }}, "array": {{ inverse([1,2,3]) }}, '
            '"number": {{ inverse(4) }} }',
            {"array": [3, 2, 1], "number": 0.25, "string": "fdsa"},
        ),
        (
            '{"string": {{ head("asdf") }}, "array": {{ head([1,2,3]) }} }',
            {"array": 1, "string": "a"},
        ),
        (
            '{"string": {{ tail("asdf") }}, "array": {{ tail([1,2,3]) }} }',
            {"array": [2, 3], "string": "sdf"},
        ),
        ('{"string": {{toCaseFold("AbCd")}} }', {"string": "abcd"}),
        ('{"string": {{toLower("AbCd")}} }', {"string": "abcd"}),
        ('{"string": {{toUpper("AbCd")}} }', {"string": "ABCD"}),
        ('{"string": {{toTitle("AbCd")}} }', {"string": "Abcd"}),
        ('{"array": {{ fromPairs([["a",1],["b",2]]) }} }', {"array": {"a": 1, "b": 2}}),
        ('{"object": {{ toPairs({"a": 1, "b": 2}) }} }', {"object": [["a", 1], ["b", 2]]}),
        ('{"array": {{ removeNulls([1,null,3,null,5]) }} }', {"array": [1, 3, 5]}),
        (
            '{"arrays": {{ concat([[1,2],[3,4]]) }}, "strings": {{ concat(["abc", "def", "g"]) }},'
            ' "objects": {{ concat([{"a":1, "b":2},{"b":3, "c":4} ] ) }} }',
            {"arrays": [1, 2, 3, 4], "objects": {"a": 1, "b": 3, "c": 4}, "strings": "abcdefg"},
        ),
        # test/data/parser/success/examples/customFunctions.kriti, evaluated
        (
            '# function calls\n[ {{ head("foo") }},\n  {{ not (empty (tail("f"))) }},\n'
            "  {{ size($path[0]) }},\n  {{ inverse([1,2,3,4,5,6,7,8,9]) }},\n"
            '  {{ toUpper("hello world")}},\n  {{ toTitle("hELLO wORLD")}},\n'
            '  {{ toLower("HELLO WORLD")}}\n]',
            [
                "f",
                False,
                3,
                [9, 8, 7, 6, 5, 4, 3, 2, 1],
                "HELLO WORLD",
                "Hello World",
                "hello world",
            ],
        ),
        ("{{ not(true) }}", False),
        ("{{ size(null) }}", 0),
        ("{{ size(true) }}", 1),
        ("{{ size(2.5) }}", 2.5),
        ("{{ empty(null) }}", True),
        ("{{ empty(0) }}", True),
        ('{{ empty("  ") }}', True),
    ],
)
def test_basic_functions(template: str, expected: Any) -> None:
    """src/Kriti/CustomFunctions.hs `basicFuncMap`, through README.md's table."""
    assert render(template, {"$path": ["abc"]}) == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ empty(true) }}", "Cannot define emptiness for a boolean"),
        ("{{ head([]) }}", "Empty array"),
        ('{{ head("") }}', "Empty string"),
        ("{{ head(1) }}", "Expected an array or string"),
        ("{{ tail(null) }}", "Expected an array or string"),
        ("{{ toLower(1) }}", "parsing String failed, expected String, but encountered Number"),
        ("{{ toPairs([]) }}", "parsing Object failed, expected Object, but encountered Array"),
        (
            "{{ fromPairs({}) }}",
            "parsing Nested Arrays failed, expected Array, but encountered Object",
        ),
        (
            "{{ fromPairs([1]) }}",
            "parsing Array of Pair failed, expected Array, but encountered Number",
        ),
        (
            '{{ fromPairs([["a"]]) }}',
            "Expected an array of shape [ [k1,v1], [k2,v2] ... ] - With String keys.",
        ),
        ("{{ removeNulls(null) }}", "parsing Array failed, expected Array, but encountered Null"),
        (
            '{{ concat([[1], "a"]) }}',
            "parsing Nested Object failed, expected Object, but encountered Array",
        ),
        ("{{ not(1) }}", "parsing Bool failed, expected Boolean, but encountered Number"),
        ("{{ escapeUri(null) }}", "parsing String failed, expected String, but encountered Null"),
    ],
)
def test_basic_function_errors(template: str, message: str) -> None:
    """src/Kriti/CustomFunctions.hs failures: a `Function Error` at the argument's span
    (src/Kriti/Eval.hs `FunctionError src (locate t1)`)."""
    with pytest.raises(KritiEvalError) as info:
        render(template, {})
    assert info.value.error_code == "Function Error"
    assert info.value.message == message
    start = template.index("(") + 2
    assert info.value.span is not None and info.value.span[1] == start


def test_caller_functions_are_merged_over_the_basic_ones() -> None:
    """Hasura's `runKritiWith` adds functions (`getSessionVariable`); a caller's function
    fails by raising `CustomFunctionError`."""

    def get(name: Any) -> Any:
        if name != "x-hasura-role":
            raise CustomFunctionError(f'Session variable "{name}" not found')
        return "admin"

    functions = {"getSessionVariable": get, "size": lambda v: "mine"}
    assert render('{{ getSessionVariable("x-hasura-role") }}', {}, functions) == "admin"
    assert render("{{ size([1]) }}", {}, functions) == "mine"
    with pytest.raises(KritiEvalError) as info:
        render('{{ getSessionVariable("nope") }}', {}, functions)
    assert info.value.serialize() == {
        "error_code": "Function Error",
        "message": 'Session variable "nope" not found',
        "source_position": {"start_line": 0, "start_column": 23, "end_line": 0, "end_column": 29},
    }


# --- test/data/parser/success: templates that parse, evaluated ------------------------


def test_parser_example_if_statements() -> None:
    """test/data/parser/success/examples/ifStatements.kriti (comments, parentheses,
    `&&` binding tighter than `||`: golden/ifStatements.txt's `Or (And p q) q`)."""
    template = """# If Statement Examples
[ {{ if p }} true {{ else }} false {{ end }},
  {{ if (p) }} true {{ else }} false {{ end }},
  {{ if p && q }} true {{ else }} false {{ end }},
  {{ if (p && q) }} true {{ else }} false {{ end }}, # random comment
  {{ if (p && q) || q }} true {{ else }} false {{ end }},
  {{ if ((1) == 3) }} true {{ else }} false {{ end }},
  {{ if ((1) == 3) }} {{ $path['lookup']}} {{ else }} false {{ end }},
  {{ if $[0].isActive == false }} true {{ else }} false {{ end }},
  {{ if $[0].isActive }} true {{ else }} false {{ end }},
  {{ if ((1) != 3) }} true {{ else }} false {{ end }},
  {{ if ((1) >= 3) }} true {{ else }} false {{ end }},
  {{ if ((1) <= 3) }} true {{ else }} false {{ end }},
  {{ if "foo" in ["foo"] }} 1 {{ else }} 0 {{ end }},
  {{ if "foo" in { "foo": true } }} 1 {{ else }} 0 {{ end }},
  {{ if ("foo" in { "foo": true }) }} 1 {{ else }} 0 {{ end }}
]"""
    expected = [True, True, False, False, False, False, False, True, False, True]
    assert run(template, p=True, q=False) == [*expected, False, True, 1, 1, 1]
    node = parse("{{ if p && q || q }} 1 {{ else }} 2 {{ end }}")
    cond = node.cond  # type: ignore[attr-defined]
    assert (cond.op, cond.left.op) == ("||", "&&")


def test_parser_example_operators() -> None:
    """test/data/parser/success/examples/operators.kriti, evaluated (aeson's order puts
    Number before Boolean: `1 > true` is false)."""
    template = """[ {{ 1 > true }},
  {{ $foo > 1 }},
  {{ $foo >= 1 }},
  {{ $foo == 1 }},
  {{ $foo <= 1 }},
  {{ $foo ?? 1 }},
  {{ $foo != (not $bar) }},
  {{ $foo || (not true) }},
  {{ $foo && (not true) }},
  {{ $foo in {"foo": 1} }},
  {{ $foo in {"foo": {{ $bar }} } }}
]"""
    with pytest.raises(KritiEvalError) as info:  # `"foo" || …`: not a boolean
        render(template, {"$foo": "foo", "$bar": True})
    assert info.value.message == "Couldn't matche expected type 'Boolean' with actual type 'String'"
    first = template.split(",\n  {{ $foo || ")[0] + "]"
    assert render(first, {"$foo": "foo", "$bar": True}) == [
        False,
        False,
        False,
        False,
        True,
        "foo",
        True,
    ]


def test_parser_example_path_lookups() -> None:
    """test/data/parser/success/examples/pathLookups.kriti, evaluated."""
    template = """# Path Lookups
[ {{ $foo }},
  {{ $foo.bar.baz }},
  {{ $foo['bar baz'].qux }},
  {{ $foo.list[1][0][3].ok }},
  {{ $foo?.bar }},
  {{ $foo?.['bar'] }},
  {{ $foo?.[1] }},
  {{ $foo?.[1]?.baz }}
]"""
    foo = {"bar": {"baz": 1}, "bar baz": {"qux": 2}, "list": [0, [[0, 0, 0, {"ok": 3}]]]}
    assert render(template, {"$foo": foo}) == [foo, 1, 2, 3, {"baz": 1}, {"baz": 1}, None, None]


def test_parser_example_ranges() -> None:
    """test/data/parser/success/examples/ranges.kriti, evaluated."""
    template = """# Range tests
[ {{ range i, x := $foo.bar[0] }} {"hello": "world"} {{ end }},
  {{ range _, x := $foo.bar[0] }} {"hello": "world"} {{ end }},
  {{ range _, x := $foo.bar[0] }}
    {"hello": {{$foo.bar }}}
    # Random Comment
  {{ end }},
  [{{ range i, x := $.events }} { "name": {{ x.name }} } {{ end }}]
]"""
    foo = {"bar": [[1, 2]]}
    assert render(template, {"$foo": foo, "$": {"events": [{"name": "e"}]}}) == [
        [{"hello": "world"}] * 2,
        [{"hello": "world"}] * 2,
        [{"hello": [[1, 2]]}] * 2,
        [[{"name": "e"}]],
    ]


def test_parser_example_functions() -> None:
    """test/data/parser/success/examples/functions.kriti, evaluated."""
    template = """# function calls
[ {{ escapeUri "foo" }},
  {{ escapeUri "foo{{$bar}}" }},
  {{ escapeUri $path[0] }},
  {{ escapeUri "?foo=bar/baz" }},
  "http://www.google.com{{escapeUri $params}}"
]"""
    variables = {"$bar": "/x y", "$path": ["a&b"], "$params": "?q=1"}
    assert render(template, variables) == [
        "foo",
        "foo%2Fx%20y",
        "a%26b",
        "%3Ffoo%3Dbar%2Fbaz",
        "http://www.google.com%3Fq%3D1",
    ]


# --- test/data/parser/failure: errors and their spans ---------------------------------


@pytest.mark.parametrize(
    ("template", "code", "message", "span"),
    [
        # failure/examples/example3.json
        ("1True\n", "Parse Error", "Unexpected token 'True'.", (0, 6, 1, 1)),
        # failure/golden/trailingCommaInArray.txt (template reconstructed to its span)
        ("[1,2,3,]\n", "Parse Error", "Unexpected token ']'.", (0, 9, 1, 1)),
        # failure/golden/missingClosingBracket.txt (template reconstructed to its span)
        ('{"foo": [1}\n', "Parse Error", "Unexpected token '}'.", (0, 12, 1, 1)),
        # failure/golden/numAsKey.txt (template reconstructed to its span)
        ('{ 1: "foo"}\n', "Parse Error", "Unexpected token '1'.", (0, 12, 1, 1)),
        # src/Kriti/Parser/Monad.hs: the span the lexer ended on, no trailing whitespace
        ('{"a": 1', "Parse Error", "ParseError: Empty token stream.", (0, 7, 0, 8)),
        ("", "Parse Error", "ParseError: Empty token stream.", (0, 1, 0, 1)),
        ("{{ if true }} 1 {{ end }}", "Parse Error", "Unexpected token 'end'.", (0, 24, 0, 26)),
        ("{{ range x := $ }} 1 {{ end }}", "Parse Error", "Unexpected token ':='.", (0, 29, 0, 31)),
        ("{{ 1 == 2 == 3 }}", "Parse Error", "Unexpected token '=='.", (0, 16, 0, 18)),
        ('"abc', "Parse Error", "ParseError: Empty token stream.", (0, 2, 0, 5)),
        # Lexer.x: no rule matches; the message holds the rest of the input
        ("[1, @x]", "Lex Error", "Invalid Lexeme: '@x]'", (0, 5, 0, 8)),
        ("{{ 'a{b' }}", "Lex Error", "Invalid Lexeme: '{b' }}'", (0, 6, 0, 12)),
        ("[\n  -]", "Lex Error", "Invalid Lexeme: '-]'", (1, 3, 1, 5)),
    ],
)
def test_parse_errors(template: str, code: str, message: str, span: tuple[int, ...]) -> None:
    """src/Kriti/Parser/Monad.hs `serialize`: lines from 0, columns from 1."""
    with pytest.raises(KritiParseError) as info:
        parse(template)
    err = info.value
    assert (err.error_code, err.message, err.span) == (code, message, span)
    sl, sc, el, ec = span
    assert err.serialize() == {
        "error_code": code,
        "message": message,
        "source_position": {"start_line": sl, "start_column": sc, "end_line": el, "end_column": ec},
    }
    assert json.loads(json.dumps(err.serialize())) == err.serialize()


# --- src/Kriti/Eval.hs errors ------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "code", "message", "span"),
    [
        ("{{ $nope }}", "Name Error", "Variable '$nope' not in scope", (0, 4, 0, 9)),
        ("{{ nope(1) }}", "Name Error", "Variable 'nope' not in scope", (0, 4, 0, 11)),
        ("{{ $.a.b }}", "Attribute Error", "'Object' has no attritubte 'b'.", (0, 4, 0, 9)),
        ("{{ $['b'] }}", "Attribute Error", "'Object' has no attritubte 'b'.", (0, 4, 0, 10)),
        ("{{ $.list[5] }}", "Index Error", "Can only range over an array", (0, 4, 0, 13)),
        ("{{ $.list[-1] }}", "Index Error", "Can only range over an array", (0, 4, 0, 14)),
        (
            "{{ $.list[0.5] }}",
            "Type Error",
            "Couldn't matche expected type 'Integer' with actual type 'Number'",
            (0, 4, 0, 15),
        ),
        (
            "{{ $.a.a.x }}",
            "Type Error",
            "Couldn't matche expected type 'Object' with actual type 'Number'",
            (0, 4, 0, 9),
        ),
        (
            "{{ $.a[1] }}",
            "Type Error",
            "Couldn't matche expected type 'String' with actual type 'Number'",
            (0, 4, 0, 7),
        ),
        (
            "{{ 1 && true }}",
            "Type Error",
            "Couldn't matche expected type 'Boolean' with actual type 'Number'",
            (0, 4, 0, 13),
        ),
        (
            '{{ if "yes" }} 1 {{ else }} 2 {{ end }}',
            "Type Error",
            "Couldn't matche expected type 'Boolean' with actual type 'String'",
            (0, 1, 0, 40),
        ),
        (
            "{{ range _, x := $.a }} 1 {{ end }}",
            "Type Error",
            "Couldn't matche expected type 'Array' with actual type 'Object'",
            (0, 1, 0, 36),
        ),
        (
            "{{ 1 in $.a }}",
            "Type Error",
            "Couldn't matche expected type 'String' with actual type 'Number'",
            (0, 4, 0, 12),
        ),
        (
            "{{ 1 in 2 }}",
            "Type Error",
            "Couldn't matche expected type 'Array' with actual type 'Number'",
            (0, 4, 0, 10),
        ),
        (
            '{{ "s"?.x }}',
            "Type Error",
            "Couldn't matche expected type 'Object' with actual type 'String'",
            (0, 4, 0, 7),
        ),
    ],
)
def test_eval_errors(template: str, code: str, message: str, span: tuple[int, ...]) -> None:
    """src/Kriti/Eval.hs `serialize` (its typos kept: "attritubte", "matche")."""
    with pytest.raises(KritiEvalError) as info:
        render(template, {"$": {"a": {"a": 1}, "list": [1]}})
    assert (info.value.error_code, info.value.message, info.value.span) == (code, message, span)


# --- src/Kriti/Eval.hs semantics ---------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ $?.a.b.c }}", None),  # the chain short-circuits
        ("{{ $nope?.a }}", None),  # an optional chain swallows its target's error
        ("{{ $.list?[7] }}", None),
        ("{{ $.list?[0] }}", 1),
        ("{{ $?['a']?.a }}", 1),
        ("{{ null ?? 2 }}", 2),
        ("{{ false ?? 2 }}", False),
        ('{{ "a" in {"a": 1} }}', True),
        ("{{ 2 in [1, 2] }}", True),
        ("{{ 2.0 in [1, 2] }}", True),
        ("{{ true in [1] }}", False),
        ('{{ {"a": [1]} == {"a": [1.0]} }}', True),
        ("{{ 1 != true }}", True),
        ('{{ "b" > "a" }}', True),
        ('{{ "a" < 1 }}', True),  # String < Number in aeson's order
        ("{{ [1, 2] < [1, 3] }}", True),
        ("{{ null > true }}", True),
        ('{{ 1 < 2 ? "yes" : "no" }}', "yes"),
        ("{{ if false }} 1 {{ elif true }} 2 {{ else }} 3 {{ end }}", 2),
        ("{{ if false }} 1 {{ elif false }} 2 {{ else }} 3 {{ end }}", 3),
        ('{{ range i, x := ["a", "b"] }} [{{ i }}, {{ x }}] {{ end }}', [[0, "a"], [1, "b"]]),
        ('{{ range i, i := ["a"] }} {{ i }} {{ end }}', [0]),
        ('{"a": 1, "a": 2}', {"a": 1}),  # the first of a repeated key
        ('"{{ 1 }}-{{ 1.5 }}-{{ true }}-{{ [1, "x"] }}-{{ 0.01 }}"', '1-1.5-true-[1,"x"]-1.0e-2'),
        ("[1e2, 1.0, -0, 10E-1]", [100, 1.0, 0, 1.0]),
        ("{{ true }}", True),
        ('{"a": {{ $.a }} }', {"a": {"a": 1}}),
        ('"a{b{c"', "a{b{c"),
    ],
)
def test_eval_semantics(template: str, expected: Any) -> None:
    """src/Kriti/Eval.hs: optional chains, `??`, `in`, aeson's `==` and `Ord`, `elif`,
    ternaries, ranges, interpolation (aeson's encoding)."""
    assert render(template, {"$": {"a": {"a": 1}, "list": [1]}}) == expected


def test_ints_stay_ints() -> None:
    result = render("[{{ $.n }}, 2, {{ size([1, 2]) }}]", {"$": {"n": 7}})
    assert result == [7, 2, 2]
    assert all(type(v) is int for v in result)


def test_parse_is_cached_and_frozen() -> None:
    node = parse('{"a": [1, {{ $x }}]}')
    assert parse('{"a": [1, {{ $x }}]}') is node
    with pytest.raises(AttributeError):
        node.span = None  # type: ignore[misc]


def test_kriti_error_is_an_exception_with_str() -> None:
    with pytest.raises(KritiError) as info:
        render("{{ $x }}", {})
    assert "Name Error" in str(info.value)


# --- RFCs/*.md and README.md examples -------------------------------------------------


@pytest.mark.parametrize(
    ("template", "variables", "expected"),
    [
        # RFCs/OptionalChaining.md
        ("{{ $body?.bar }}", {"$body": {"foo": 1}}, None),
        ("{{ $body?.bar.baz }}", {"$body": {"foo": 1}}, None),
        # RFCs/DefaultingOperator.md, RFCs/NullishOperator.md
        ('{{ null ?? "foo" }}', {}, "foo"),
        ('{{ null ?? null ?? "goodbye" }}', {}, "goodbye"),
        ("{{ $body?.bar.baz ?? $bar }}", {"$body": {}, "$bar": 2}, 2),
        # RFCs/ExtendOperatorAvailability.md: operators and calls without `{{ }}`
        ("$x > $y", {"$x": 2, "$y": 1}, True),
        ('escapeUri "foo+!"', {}, "foo%2B%21"),
        ('{ "foo": $x > $y }', {"$x": 2, "$y": 1}, {"foo": True}),
        ("1 in [1, 2, 3]", {}, True),
        ('"a" in { "a": 1, "b": 2}', {}, True),
        # README.md: `foo?` looks a variable up optionally
        ("{{ $foo? }}", {}, None),
        ("[{{ $foo? ?? 1 }}, $bar?]", {"$bar": 2}, [1, 2]),
        # `$?[1000]` on an object: not a string key, so the chain gives null
        (
            '"http://www.{{$.domain}}.com/{{ $?[1000] }}"',
            {"$": {"domain": "d"}},
            "http://www.d.com/null",
        ),
    ],
)
def test_rfc_and_readme_examples(template: str, variables: dict[str, Any], expected: Any) -> None:
    """RFCs/OptionalChaining.md, RFCs/DefaultingOperator.md, RFCs/NullishOperator.md,
    RFCs/ExtendOperatorAvailability.md and README.md. (The RFCs' `??` also catching an
    unbound left operand was not implemented: `src/Kriti/Eval.hs` only replaces null.)"""
    assert render(template, variables) == expected


def test_defaulting_does_not_catch_unbound_variables() -> None:
    """src/Kriti/Eval.hs `Defaulting`: the left operand's errors propagate."""
    with pytest.raises(KritiEvalError) as info:
        render('{{ $foo ?? "goodbye" }}', {})
    assert info.value.error_code == "Name Error"
