"""The allow-list check of GraphQL requests (`--enable-allowlist`).

With the allow-list enabled, a non-admin request must be one of the queries of an
allow-listed collection: globally listed, or listed with a `scope` naming the request's
role. Queries are compared as documents, not text: both sides are parsed, `__typename`
fields are removed (Hasura's `normalizeQuery`: from operation, fragment-definition and
field selection sets, not inside inline fragments) and the results printed with
graphql-core, so whitespace and comments do not matter.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    OperationDefinitionNode,
    SelectionNode,
    SelectionSetNode,
    parse,
    print_ast,
)

from svc.api.state import State
from svc.errors import ErrorCode, SvcError
from svc.metadata.collections import find_collection

_INDEX = object()  # plan-cache key of the allow-list index of a state
_VERDICT = object()  # plan-cache key prefix of a (role, query) verdict


def _strip_selections(selection_set: SelectionSetNode | None) -> SelectionSetNode | None:
    if selection_set is None:
        return None
    kept: list[SelectionNode] = []
    for sel in selection_set.selections:
        if isinstance(sel, FieldNode):
            if sel.name.value == "__typename":
                continue
            if sel.selection_set is not None:
                sel = copy.copy(sel)
                sel.selection_set = _strip_selections(sel.selection_set)
        kept.append(sel)
    out = copy.copy(selection_set)
    out.selections = tuple(kept)
    return out


def normalise(document: DocumentNode) -> str:
    """The printed document without `__typename` fields (the comparison key)."""
    definitions = []
    for d in document.definitions:
        if isinstance(d, OperationDefinitionNode | FragmentDefinitionNode):
            d = copy.copy(d)
            d.selection_set = _strip_selections(d.selection_set)  # type: ignore[assignment]
        definitions.append(d)
    out = copy.copy(document)
    out.definitions = tuple(definitions)
    return print_ast(out)


@dataclass(frozen=True, slots=True)
class Allowlist:
    """Normalised queries allowed for every role, and per role (scoped entries)."""

    everyone: frozenset[str]
    per_role: dict[str, frozenset[str]]

    def allows(self, role: str, key: str) -> bool:
        """Whether the normalised query `key` may run as `role`."""
        return key in self.everyone or key in self.per_role.get(role, frozenset())


def build_allowlist(state: State) -> Allowlist:
    """The allow-list of the state's metadata (unparsable stored queries are skipped)."""
    everyone: set[str] = set()
    per_role: dict[str, set[str]] = {}
    md = state.metadata
    for entry in md.allowlist:
        collection = find_collection(md, entry.collection)
        if collection is None:
            continue
        keys: set[str] = set()
        for q in collection.definition.queries:
            try:
                keys.add(normalise(parse(q.query)))
            except GraphQLError:
                continue
        roles = entry.roles()
        if roles is None:
            everyone |= keys
        else:
            for role in roles:
                per_role.setdefault(role, set()).update(keys)
    return Allowlist(frozenset(everyone), {r: frozenset(k) for r, k in per_role.items()})


def allowlist_of(state: State) -> Allowlist:
    """The state's allow-list, built once per state."""
    found = state.plans.get(_INDEX)
    if not isinstance(found, Allowlist):
        found = build_allowlist(state)
        state.remember(_INDEX, found)
    return found


NOT_ALLOWED = "query is not allowed"


def check_allowed(state: State, role: str, query: str) -> None:
    """Raise `validation-failed` "query is not allowed" unless `query` is allow-listed for
    `role` (the caller skips admin, who is never restricted). A query that does not parse is
    left to the pipeline, which reports the parse error (Hasura parses first)."""
    key = (_VERDICT, role, query)
    verdict = state.plans.get(key)
    if verdict is None:
        try:
            document = parse(query)
        except GraphQLError:
            return
        verdict = allowlist_of(state).allows(role, normalise(document))
        state.remember(key, verdict)
    if not verdict:
        raise SvcError(
            ErrorCode.VALIDATION_FAILED,
            NOT_ALLOWED,
            path="$",
            internal={"message": "query is not in any of the allowlists"},
        )
