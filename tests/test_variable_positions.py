"""Where a variable may be used: the reference's `isVariableUsageAllowed`
(`server/lib/schema-parsers/src/Hasura/GraphQL/Parser/Internal/TypeChecking.hs`), not
graphql-core's stricter spec rule: the outer nullability as the spec says, list
elements' nullability never compared, named types equal."""

from __future__ import annotations

import pytest
from graphql import build_schema, parse

from svc.api.validate import RULES, validate_document

SCHEMA = build_schema(
    """
    type Query {
      strict(arg: [String!]): Int
      loose(arg: [String]): Int
      required(arg: [String!]!): Int
      defaulted(arg: Int! = 3): Int
      one(arg: Int): Int
      ratio(arg: Float): Int
    }
    """
)


def errors(query: str) -> list[str]:
    return [e.message for e in validate_document(SCHEMA, parse(query), RULES)]


@pytest.mark.parametrize(
    "query",
    [
        "query ($v: [String]) { strict(arg: $v) }",  # the corpus's textArray case
        "query ($v: [String!]) { loose(arg: $v) }",
        "query ($v: [String!]!) { required(arg: $v) }",
        "query ($v: [String]!) { required(arg: $v) }",  # outer non-null: elements free
        'query ($v: [String] = ["a"]) { required(arg: $v) }',  # a non-null default
        "query ($v: Int) { defaulted(arg: $v) }",  # the location has a default
        "query ($v: Int!) { one(arg: $v) }",
    ],
)
def test_allowed_as_the_reference_allows(query: str) -> None:
    assert errors(query) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "query ($v: [String]) { required(arg: $v) }",
            "Variable '$v' of type '[String]' used in position expecting type '[String!]!'.",
        ),
        (
            "query ($v: String) { strict(arg: $v) }",
            "Variable '$v' of type 'String' used in position expecting type '[String!]'.",
        ),
        (
            "query ($v: Float) { one(arg: $v) }",
            "Variable '$v' of type 'Float' used in position expecting type 'Int'.",
        ),
        (
            "query ($v: [String] = null) { required(arg: $v) }",
            "Variable '$v' of type '[String]' used in position expecting type '[String!]!'.",
        ),
    ],
)
def test_refused_as_the_reference_refuses(query: str, message: str) -> None:
    assert errors(query) == [message]
