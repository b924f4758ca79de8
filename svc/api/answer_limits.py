"""Bounds on a query's answer for roles other than admin (svc's own: the
reference bounds depth, nodes, rate and time, none of which bounds what one query can
make Postgres build).

- **Rows, before running.** `check_rows`: the answer's rows estimated from the plan and
  Postgres's statistics (`svc.plan.answer_size`) may not exceed
  `SVC_GRAPHQL_MAX_ANSWER_ROWS` (default 100,000; 0: no bound). A refused query never
  reaches Postgres.
- **Bytes, after running.** `check_bytes`: the JSON Postgres answered may not exceed
  `SVC_GRAPHQL_MAX_RESPONSE_BYTES` (default 64 MiB; 0: no bound), so an answer the
  estimate missed (a skewed distribution) still never reaches the client or the
  response cache.

Both answer the GraphQL error `answer-limit-exceeded` (HTTP 200, as the other limits).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from svc.errors import ErrorCode, SvcError
from svc.plan.answer_size import SizeStats, estimate_rows
from svc.plan.nodes import QueryPlan


def check_rows(
    plan: QueryPlan, stats: SizeStats, variables: Mapping[str, Any], limit: int, role: str
) -> None:
    """Refuse `plan` when its estimated rows exceed `limit` (0: none): `SvcError`
    `answer-limit-exceeded`."""
    if limit <= 0:
        return
    rows = estimate_rows(plan, stats, variables)
    if rows > limit:
        raise SvcError(
            ErrorCode.ANSWER_LIMIT_EXCEEDED,
            f"the query would answer about {rows:,.0f} rows, more than the limit of "
            f"{limit:,} for role {role!r} (SVC_GRAPHQL_MAX_ANSWER_ROWS): add limits to its "
            "lists or select fewer nested lists",
            path="$",
        )


def check_bytes(size: int, limit: int, role: str) -> None:
    """Refuse an answer of `size` bytes above `limit` (0: none): `SvcError`
    `answer-limit-exceeded`."""
    if 0 < limit < size:
        raise SvcError(
            ErrorCode.ANSWER_LIMIT_EXCEEDED,
            f"the answer is {size:,} bytes, more than the limit of {limit:,} for role "
            f"{role!r} (SVC_GRAPHQL_MAX_RESPONSE_BYTES)",
            path="$",
        )
