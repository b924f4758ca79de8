"""Which source a planned operation runs on (`DatabaseStep.source`).

Every table and function of the IR names the metadata source it is tracked in, and a
relationship can only reach a table of its owner's source, so the source of a root field
is its root table's. A query whose root fields read two sources is one step per source
(`query_steps`: each one statement, run together, their answers merged in field order);
a mutation's is one step per root field, run in order, each in its own transaction
(`mutation_steps`), as the reference runs them (`runGQ`: one transaction only when every
root field is one source's). A subscription reads one source (400 `not-supported`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from svc.errors import ErrorCode, SvcError
from svc.ir.model import Table
from svc.metadata.model import DEFAULT_SOURCE, QualifiedName
from svc.plan.mutation import MutationRoot
from svc.plan.nodes import Aggregate, Connection, QueryPlan, RootField, Select


def query_source(plan: QueryPlan, tables: Mapping[QualifiedName, Table]) -> str:
    """The source of a query or subscription plan's root tables (`tables`: the IR's);
    `DEFAULT_SOURCE` when no root reads a table (`__typename`, introspection). Raises
    `SvcError` 400 `not-supported` when the roots name two sources."""
    names = (
        root.select.rows.table
        for root in plan.roots
        if isinstance(root.select, Select | Aggregate | Connection)
    )
    return _one(tables[name].source for name in names)


def query_steps(
    plan: QueryPlan, tables: Mapping[QualifiedName, Table]
) -> list[tuple[str, QueryPlan]]:
    """`(source, plan)` per source `plan`'s roots read, in the order each first appears;
    roots reading no table go with the first. Raises 400 `not-supported` for a
    subscription over two sources."""
    groups: dict[str, list[RootField]] = {}
    loose: list[RootField] = []
    for root in plan.roots:
        if isinstance(root.select, Select | Aggregate | Connection):
            groups.setdefault(tables[root.select.rows.table].source, []).append(root)
        else:
            loose.append(root)
    if not groups:
        return [(DEFAULT_SOURCE, plan)]
    if len(groups) > 1 and plan.kind != "query":
        _one(groups)  # raises
    first = next(iter(groups))
    groups[first] = [*loose, *groups[first]]
    return [(source, QueryPlan(plan.kind, tuple(roots))) for source, roots in groups.items()]


def mutation_steps(
    roots: Sequence[tuple[str, MutationRoot | str | None]],
) -> list[tuple[str, tuple[tuple[str, MutationRoot | str | None], ...]]]:
    """`(source, roots)` of a mutation: all of `roots` when they write one source, else
    one entry per root field in order (`__typename` with the first)."""
    sources = {root.table.source for _, root in roots if isinstance(root, MutationRoot)}
    if len(sources) <= 1:
        return [(sources.pop() if sources else DEFAULT_SOURCE, tuple(roots))]
    out: list[tuple[str, tuple[tuple[str, MutationRoot | str | None], ...]]] = []
    loose = [(alias, root) for alias, root in roots if not isinstance(root, MutationRoot)]
    for alias, root in roots:
        if isinstance(root, MutationRoot):
            out.append((root.table.source, ((alias, root),)))
    first_source, first_roots = out[0]
    out[0] = (first_source, (*loose, *first_roots))
    return out


def _one(sources: Iterable[str]) -> str:
    found = set(sources)
    if len(found) > 1:
        raise SvcError(
            ErrorCode.NOT_SUPPORTED,
            "an operation may read the tables of one source only, not " + ", ".join(sorted(found)),
        )
    return found.pop() if found else DEFAULT_SOURCE
