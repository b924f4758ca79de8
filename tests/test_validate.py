"""svc's document validation (`svc.api.validate`) reports exactly what graphql-core's
`validate` with all of svc's rules reports, on valid and invalid documents of every kind
the pruning in `select_rules` looks at."""

from __future__ import annotations

import pytest
from graphql import build_schema, parse, validate

from svc.api.validate import RULES, select_rules, validate_document

SCHEMA = build_schema(
    """
    type Query {
      artist(id: Int!): Artist
      artists(where: ArtistFilter, limit: Int, ids: [Int!]): [Artist!]!
      node: Node
    }
    type Subscription { artists: [Artist!]! tick: Int }
    interface Node { id: Int! }
    type Artist implements Node { id: Int! name: String albums(limit: Int): [Album!]! }
    type Album implements Node { id: Int! title: String! }
    input ArtistFilter { name: String id: Int and: [ArtistFilter!] }
    """
)

DOCUMENTS = [
    # valid
    "{ artist(id: 1) { id name albums { title } } }",
    'query Q { artists(where: {name: "a$b...@c"}, limit: 2) { id } }',
    "query Q($id: Int!) { artist(id: $id) { name } }",
    "query Q($id: Int!, $x: Boolean!) { artist(id: $id) { name @skip(if: $x) } }",
    "query { node { id ... on Artist { name } } }",
    "query { node { ...F } } fragment F on Album { title }",
    "{ __schema { types { name } } }",
    '{ __type(name: "Artist") { fields { name } } }',
    "subscription S { artists { id } }",
    "query A { artists { id } } query B { artist(id: 2) { id } }",
    # invalid: fields, arguments, values
    "{ artist(id: 1) { id nope } }",
    "{ artist { id } }",
    '{ artist(id: "x") { id } }',
    "{ artist(id: 1, id: 2) { id } }",
    "{ artist(id: 1, bogus: 2) { id } }",
    "{ artists(where: {name: 1, name: 2}) { id } }",
    "{ artists(where: {nope: 1}) { id } }",
    "{ artist(id: 1) }",
    "{ artist(id: 1) { albums { title { x } } } }",
    "{ a: artist(id: 1) { id } a: artist(id: 2) { name } }",
    "{ artists(limit: 99999999999) { id } }",
    # invalid: variables
    "query Q($id: Int) { artist(id: $id) { id } }",
    "query Q { artist(id: $id) { id } }",
    "query Q($id: Int!, $id: Int!) { artist(id: $id) { id } }",
    "query Q($f: Artist) { artists { id } }",
    "query Q($f: Unknown) { artists { id } }",
    '{ artists(where: {name: "$"}) { id } }',
    # invalid: fragments
    "{ node { ... on Nope { id } } }",
    "{ node { ...Missing } }",
    "{ artists { id } } fragment Unused on Artist { id }",
    "{ node { ...F } } fragment F on Node { ...G } fragment G on Node { ...F }",
    "{ artist(id: 1) { ... on Album { title } } }",
    "{ node { ...F } } fragment F on Node { id } fragment F on Node { id }",
    "{ node { ...F } } fragment F on Int { id }",
    # invalid: directives
    "{ artists @nope { id } }",
    "{ artists @skip(if: true) @skip(if: false) { id } }",
    "query @skip(if: true) { artists { id } }",
    # invalid: documents, subscriptions, introspection
    "{ artists { id } } { artist(id: 1) { id } }",
    "query A { artists { id } } query A { artists { id } }",
    "type Foo { a: Bar } { artists { id } }",
    "subscription { artists { id } tick }",
    "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }",
]


@pytest.mark.parametrize("source", DOCUMENTS)
def test_same_errors_as_graphql_core(source: str) -> None:
    document = parse(source)
    expected = [e.formatted for e in validate(SCHEMA, document, RULES)]
    got = [e.formatted for e in validate_document(SCHEMA, document, select_rules(document, source))]
    assert got == expected


def test_pruning_happens() -> None:
    """A plain query runs far fewer rules than the full set (the point of the module)."""
    source = "{ artist(id: 1) { id albums { title } } }"
    assert len(select_rules(parse(source), source)) < len(RULES) // 2


def test_invalid_documents_are_reported() -> None:
    """The corpus's invalid half really is invalid (the comparison is not vacuous)."""
    invalid = [s for s in DOCUMENTS if validate(SCHEMA, parse(s), RULES)]
    assert len(invalid) >= 30
