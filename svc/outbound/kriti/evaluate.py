"""Kriti's evaluator, after kriti-lang's `src/Kriti/Eval.hs`.

Semantics kept from kriti-lang: an unbound variable is a `Name Error`; a missing key a
`Attribute Error` and an index past the end an `Index Error` (optional chains, `?.` and
`?[`, give null instead, swallowing even errors of their target); `&&`/`||` evaluate both
sides and need booleans; comparisons order any two values (aeson's `Ord Value`); `in`
tests an object's keys or an array's elements; `??` replaces null; a function's argument
is evaluated before the function is looked up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from svc.outbound.kriti import nodes as n
from svc.outbound.kriti.errors import (
    ATTRIBUTE_ERROR,
    FUNCTION_ERROR,
    INDEX_ERROR,
    NAME_ERROR,
    TYPE_ERROR,
    CustomFunctionError,
    KritiError,
    KritiEvalError,
    Span,
)
from svc.outbound.kriti.functions import KritiFunction
from svc.outbound.kriti.jsonvalue import compare, encode, equal, is_number, type_of

_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def _type_error(span: Span, value: Any, expected: str) -> KritiEvalError:
    return KritiEvalError(
        TYPE_ERROR,
        f"Couldn't matche expected type '{expected}' with actual type '{type_of(value)}'",
        span,
    )


def _as_index(value: Any) -> int | None:
    """Scientific's `toBoundedInteger @Int`: an integral number within Int's range."""
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    return value if _INT_MIN <= value <= _INT_MAX else None


def _step(value: Any, key: Any) -> tuple[bool, Any]:
    """One optional-chain step (`evalFieldChain`): (found, value)."""
    if isinstance(value, dict) and isinstance(key, str):
        return (key in value, value.get(key))
    if isinstance(value, list) and is_number(key):
        i = _as_index(key)
        if i is not None and 0 <= i < len(value):
            return (True, value[i])
    return (False, None)


class _Evaluator:
    def __init__(self, functions: Mapping[str, KritiFunction]) -> None:
        self.functions = functions

    def eval(self, node: n.Node, scope: Mapping[str, Any]) -> Any:
        method = getattr(self, "eval_" + type(node).__name__)
        return method(node, scope)

    def eval_Literal(self, node: n.Literal, scope: Mapping[str, Any]) -> Any:
        return node.value

    def eval_StringTemplate(self, node: n.StringTemplate, scope: Mapping[str, Any]) -> Any:
        out: list[str] = []
        for part in node.parts:
            value = self.eval(part, scope)
            out.append(value if isinstance(value, str) else encode(value))
        return "".join(out)

    def eval_Array(self, node: n.Array, scope: Mapping[str, Any]) -> Any:
        return [self.eval(item, scope) for item in node.items]

    def eval_Object(self, node: n.Object, scope: Mapping[str, Any]) -> Any:
        out: dict[str, Any] = {}
        for key, value in node.fields:
            result = self.eval(value, scope)
            if key not in out:
                out[key] = result
        return out

    def eval_Var(self, node: n.Var, scope: Mapping[str, Any]) -> Any:
        if node.name not in scope:
            raise KritiEvalError(NAME_ERROR, f"Variable '{node.name}' not in scope", node.span)
        return scope[node.name]

    def eval_Field(self, node: n.Field, scope: Mapping[str, Any]) -> Any:
        target = self.eval(node.target, scope)
        if isinstance(node.key, str) or isinstance(target, dict):
            if not isinstance(target, dict):
                raise _type_error(node.target.span, target, "Object")
            key = node.key if isinstance(node.key, str) else self.eval(node.key, scope)
            if not isinstance(key, str):
                raise _type_error(node.target.span, key, "String")
            if key not in target:
                message = f"'Object' has no attritubte '{key}'."
                raise KritiEvalError(ATTRIBUTE_ERROR, message, node.span)
            return target[key]
        if isinstance(target, list):
            key = self.eval(node.key, scope)
            i = _as_index(key) if is_number(key) else None
            if i is None:
                raise _type_error(node.span, key, "Integer")
            if not 0 <= i < len(target):
                raise KritiEvalError(INDEX_ERROR, "Can only range over an array", node.span)
            return target[i]
        raise _type_error(node.target.span, target, "Object")

    def eval_OptionalFields(self, node: n.OptionalFields, scope: Mapping[str, Any]) -> Any:
        try:
            value = self.eval(node.target, scope)
        except KritiError:
            value = None
        keys = [k if isinstance(k, str) else self.eval(k, scope) for k in node.keys]
        if not keys:
            return value
        if value is None:
            return None
        if not isinstance(value, dict | list):
            raise _type_error(node.target.span, value, "Object")
        for key in keys:
            found, value = _step(value, key)
            if not found:
                return None
        return value

    def eval_Binary(self, node: n.Binary, scope: Mapping[str, Any]) -> Any:
        op = node.op
        left = self.eval(node.left, scope)
        if op == "??":
            return self.eval(node.right, scope) if left is None else left
        right = self.eval(node.right, scope)
        if op == "==":
            return equal(left, right)
        if op == "!=":
            return not equal(left, right)
        if op in (">", "<", ">=", "<="):
            c = compare(left, right)
            return {">": c > 0, "<": c < 0, ">=": c >= 0, "<=": c <= 0}[op]
        if op in ("&&", "||"):
            if isinstance(left, bool) and isinstance(right, bool):
                return (left and right) if op == "&&" else (left or right)
            bad = left if isinstance(right, bool) else right
            raise _type_error(node.span, bad, "Boolean")
        # `in`
        if isinstance(right, dict):
            if not isinstance(left, str):
                raise _type_error(node.span, left, "String")
            return left in right
        if isinstance(right, list):
            return any(equal(left, item) for item in right)
        raise _type_error(node.span, right, "Array")

    def _test(self, cond: n.Node, span: Span, scope: Mapping[str, Any]) -> bool:
        value = self.eval(cond, scope)
        if not isinstance(value, bool):
            raise _type_error(span, value, "Boolean")
        return value

    def eval_If(self, node: n.If, scope: Mapping[str, Any]) -> Any:
        if self._test(node.cond, node.span, scope):
            return self.eval(node.then, scope)
        for branch in node.elifs:
            if self._test(branch.cond, branch.span, scope):
                return self.eval(branch.body, scope)
        return self.eval(node.other, scope)

    def eval_Ternary(self, node: n.Ternary, scope: Mapping[str, Any]) -> Any:
        chosen = node.then if self._test(node.cond, node.span, scope) else node.other
        return self.eval(chosen, scope)

    def eval_Range(self, node: n.Range, scope: Mapping[str, Any]) -> Any:
        items = self.eval(node.source, scope)
        if not isinstance(items, list):
            raise _type_error(node.span, items, "Array")
        out = []
        for i, item in enumerate(items):
            inner = {**scope, node.binder: item}
            if node.index is not None:
                inner[node.index] = i
            out.append(self.eval(node.body, inner))
        return out

    def eval_Call(self, node: n.Call, scope: Mapping[str, Any]) -> Any:
        arg = self.eval(node.arg, scope)
        function = self.functions.get(node.name)
        if function is None:
            raise KritiEvalError(NAME_ERROR, f"Variable '{node.name}' not in scope", node.span)
        try:
            return function(arg)
        except CustomFunctionError as exc:
            raise KritiEvalError(FUNCTION_ERROR, exc.message, node.arg.span) from None


def evaluate(
    node: n.Node, variables: Mapping[str, Any], functions: Mapping[str, KritiFunction]
) -> Any:
    """The JSON value of `node` with `variables` in scope and `functions` callable;
    raises `KritiEvalError`."""
    return _Evaluator(functions).eval(node, variables)
