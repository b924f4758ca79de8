"""A source's root field namespace (`customization.root_fields.namespace`): its root
fields are inside one field `<namespace>` of the root type, whose type is
`<namespace>_query` (`_mutation_frontend`, `_subscription`), with the source's type name
prefix and suffix around it, as the reference builds it (`customizeNamespace`,
`Hasura.GraphQL.Namespace`; its `pg_source_namespace_query` tests).

The planner flattens a namespace field into ordinary root fields under aliases that
say both names (`flat_alias`), so statements, steps and limits see plain roots; the
answer is nested back where it is written (`nested_body`: queries and mutations;
`svc.sql.live.root_object`: live queries and streams, in SQL).
"""

from __future__ import annotations

import msgspec

from svc.plan.nodes import NAMESPACE_ALIAS_PREFIX
from svc.schema.namespaces import NAMESPACE_EXTENSION

__all__ = [
    "NAMESPACE_EXTENSION",
    "flat_alias",
    "is_flat",
    "nested_body",
    "split_alias",
]

_PREFIX = NAMESPACE_ALIAS_PREFIX  # one rule: `QueryPlan.namespaced` reads it too


def flat_alias(namespace_alias: str, alias: str) -> str:
    """The root alias of field `alias` inside the namespace field `namespace_alias`
    (`__svc_ns_<length>_<namespace alias><alias>`: a GraphQL name, never a client's)."""
    return f"{_PREFIX}{len(namespace_alias)}_{namespace_alias}{alias}"


def split_alias(alias: str) -> tuple[str | None, str]:
    """`(namespace alias, alias)` of a root alias (`None` outside a namespace)."""
    if not alias.startswith(_PREFIX):
        return None, alias
    rest = alias[len(_PREFIX) :]
    length, _, tail = rest.partition("_")
    n = int(length)
    return tail[:n], tail[n:]


def is_flat(alias: str) -> bool:
    """Whether `alias` is a field inside a namespace (`flat_alias`)."""
    return alias.startswith(_PREFIX)


def nested_body(aliases: list[str], answers: list[bytes]) -> bytes:
    """`{"data":{…}}` from each root's alias and JSON answer, the fields of a namespace
    (flattened aliases, consecutive by construction) inside their namespace's object."""
    parts = [b'{"data":{']
    current: str | None = None
    first = True
    for alias, answer in zip(aliases, answers, strict=True):
        space, name = split_alias(alias)
        if space != current and current is not None:
            parts.append(b"}")
        if space is not None and space != current:
            parts += (b"" if first else b",", _encode(space), b":{")
            first, inner_first = False, True
        if space is None:
            parts += (b"" if first else b",", _encode(name), b":", answer)
            first = False
        else:
            parts += (b"" if inner_first else b",", _encode(name), b":", answer)
            inner_first = False
        current = space
    if current is not None:
        parts.append(b"}")
    parts.append(b"}}")
    return b"".join(parts)


_encode = msgspec.json.Encoder().encode
