"""Kriti, the JSON templating language of Hasura's request and response transforms
(`template_engine: Kriti`), after kriti-lang (github.com/hasura/kriti-lang): the lexer
(`lexer.py`, `src/Kriti/Parser/Lexer.x`), the parser (`parser.py`,
`src/Kriti/Parser/Grammar.y`), the evaluator (`evaluate.py`, `src/Kriti/Eval.hs`), the
basic functions (`functions.py`, `src/Kriti/CustomFunctions.hs`) and the errors
(`errors.py`, `src/Kriti/Error.hs`).

    render('{"name": {{ $body.user?.name ?? "anon" }}}', {"$body": body})

Written here because no Python library reads Kriti; a hand-written lexer because
Kriti's is modal (string templates nest `{{ }}` which nest strings)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from svc.outbound.kriti.errors import (
    CustomFunctionError,
    KritiError,
    KritiEvalError,
    KritiParseError,
)
from svc.outbound.kriti.evaluate import evaluate
from svc.outbound.kriti.functions import BASIC_FUNCTIONS
from svc.outbound.kriti.parser import MAX_DEPTH, parse

__all__ = [
    "BASIC_FUNCTIONS",
    "MAX_DEPTH",
    "CustomFunctionError",
    "KritiError",
    "KritiEvalError",
    "KritiParseError",
    "parse",
    "render",
]


def render(
    template: str,
    variables: Mapping[str, Any],
    functions: Mapping[str, Callable[[Any], Any]] | None = None,
) -> Any:
    """The JSON value (dict, list, str, int, float, bool, None) `template` gives with
    `variables` (`{"$body": …, "$session_variables": …}`) in scope and kriti-lang's basic
    functions plus `functions` (the caller's win on a name clash) callable; a function
    fails by raising `CustomFunctionError`. Raises `KritiParseError` or `KritiEvalError`
    (kriti-lang's `runKritiWith`, `src/Kriti.hs`)."""
    node = parse(template)
    table = {**BASIC_FUNCTIONS, **functions} if functions else BASIC_FUNCTIONS
    return evaluate(node, variables, table)
