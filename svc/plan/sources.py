"""Which source a planned operation runs on (`DatabaseStep.source`).

Every table and function of the IR names the metadata source it is tracked in, and a
relationship can only reach a table of its owner's source, so the source of a root field
is its root table's. An operation's database step runs on one source: a step whose root
fields name two sources is refused until steps can be split per source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from svc.errors import ErrorCode, SvcError
from svc.ir.model import Table
from svc.metadata.model import DEFAULT_SOURCE, QualifiedName
from svc.plan.mutation import MutationRoot
from svc.plan.nodes import Aggregate, QueryPlan, Select


def query_source(plan: QueryPlan, tables: Mapping[QualifiedName, Table]) -> str:
    """The source of a query or subscription plan's root tables (`tables`: the IR's);
    `DEFAULT_SOURCE` when no root reads a table (`__typename`, introspection). Raises
    `SvcError` 400 `not-supported` when the roots name two sources."""
    names = (
        root.select.rows.table for root in plan.roots if isinstance(root.select, Select | Aggregate)
    )
    return _one(tables[name].source for name in names)


def mutation_source(roots: Sequence[tuple[str, MutationRoot | None]]) -> str:
    """The source of a mutation's root tables (as `query_source`)."""
    return _one(root.table.source for _, root in roots if root is not None)


def _one(sources: Iterable[str]) -> str:
    found = set(sources)
    if len(found) > 1:
        raise SvcError(
            ErrorCode.NOT_SUPPORTED,
            "an operation may read the tables of one source only, not " + ", ".join(sorted(found)),
        )
    return found.pop() if found else DEFAULT_SOURCE
