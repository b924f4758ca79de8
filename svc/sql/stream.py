"""The multiplexed statement of a streaming subscription (the reference's
`Hasura.Backends.Postgres.Translate.Select.Streaming` and its streaming poller).

Like a live query's (`svc.sql.live`), one statement answers a batch of cohorts, `$1`
their ids and `$2` their variables; each cohort's variables also hold `cursor`, `{column:
text}`, the last cursor value its subscribers were sent (the initial value at first). The
statement answers one row of three arrays: the cohort ids, each cohort's result
`{"alias": [rows]}` and each cohort's new cursor value (text; NULL when no row came after
the cursor, and then nothing is sent and the cursor stays):

    SELECT array_agg("_subs"."cohort_id"::text), array_agg("_fld"."result"),
           array_agg("_fld"."cursor")
    FROM unnest($1::text[]::uuid[], $2::text[]::json[]) AS "_subs"("cohort_id", "vars")
    LEFT OUTER JOIN LATERAL (SELECT json_build_object('alias', "_str"."v") AS "result",
                                    "_str"."c" AS "cursor"
                             FROM (<batch>) AS "_str") AS "_fld" ON true

`<batch>` selects, from the rows after `("_subs"."vars"->'cursor'->>'col')::text::<type>`
in cursor order (at most the batch size), their JSON array and the last row's cursor
value, in one pass over the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.errors import ErrorCode, SvcError
from svc.plan.nodes import CursorRef, Param, QueryPlan
from svc.plan.stream import StreamCursor, StreamSelect
from svc.sql.live import _SUBS, _VARS, LiveStatement, _CohortRenderer, root_object
from svc.sql.render import _needs_row, ident, literal

#: The error for a streaming field beside other root fields (the reference streams one).
ONE_ROOT = "exactly one root field is allowed for streaming subscriptions"


@dataclass(frozen=True, slots=True)
class StreamStatement(LiveStatement):
    """The multiplexed statement of a streaming subscription (see the module docstring):
    `sql` takes `[cohort ids, cohort variables]` and answers `(ids, results, cursors)`.
    `cursor`: the stream's cursor (column, type, direction, initial value); `batch_size`:
    the parameter of its batch size (checked when a subscriber starts). Both are always
    set; the defaults only satisfy the dataclass order of fields."""

    cursor: StreamCursor | None = None
    batch_size: Param | None = None


@dataclass
class _StreamRenderer(_CohortRenderer):
    """A cohort renderer that also reads the cursor from the cohort's variables."""

    def ref(self, p: Param) -> str:
        """`CursorRef(col)`: `vars.cursor.<col>` as text; anything else as for live
        queries."""
        if isinstance(p.source, CursorRef):
            self.params.append(p)
            return f"({_VARS}->'cursor'->>{literal(p.source.column)})"
        return super().ref(p)

    def batch(self, sel: StreamSelect, cursor: StreamCursor) -> str:
        """`SELECT <json array> AS "v", <last cursor value text> AS "c"` of one batch."""
        b = self.alias("_b")
        base, outer_order = self.base(sel.rows, b, None, _needs_row(sel))
        joins: list[str] = []
        obj = self.row_json(sel.fields, b, joins)
        order = f" ORDER BY {', '.join(outer_order)}"
        col = f"{b}.{ident(cursor.column)}"
        # The last row sent, whatever the column's type (`max` does not exist for all).
        back = "ASC" if cursor.descending else "DESC"
        last = f"(array_agg({col}::text ORDER BY {col} {back}))[1]"
        return (
            f"SELECT coalesce(json_agg({obj}{order}), '[]') AS {ident('v')}, "
            f"{last} AS {ident('c')} FROM ({base}) AS {b}" + "".join(" " + j for j in joins)
        )


def is_stream(plan: QueryPlan) -> bool:
    """Whether `plan` has a streaming root field (`x_stream`)."""
    return any(isinstance(r.select, StreamSelect) for r in plan.roots)


def render_stream(plan: QueryPlan) -> StreamStatement:
    """The multiplexed statement of a subscription whose root is `x_stream`. Raises
    `SvcError` `validation-failed` when the subscription has other root fields too."""
    root = plan.roots[0]
    sel = root.select
    if len(plan.roots) != 1 or not isinstance(sel, StreamSelect) or sel.cursor is None:
        raise SvcError(ErrorCode.VALIDATION_FAILED, ONE_ROOT)
    r = _StreamRenderer()
    inner = r.batch(sel, sel.cursor)
    fld, s = ident("_fld"), ident("_str")
    sql = (
        f"SELECT array_agg({_SUBS}.{ident('cohort_id')}::text), "
        f"array_agg({fld}.{ident('result')}), array_agg({fld}.{ident('cursor')}) "
        f"FROM unnest($1::text[]::uuid[], $2::text[]::json[]) "
        f"AS {_SUBS}({ident('cohort_id')}, {ident('vars')}) "
        f"LEFT OUTER JOIN LATERAL (SELECT {root_object([(root.alias, f'{s}.' + ident('v'))])}"
        f" AS {ident('result')}, {s}.{ident('c')} AS {ident('cursor')} "
        f"FROM ({inner}) AS {s}) AS {fld} ON true"
    )
    return StreamStatement(
        sql,
        tuple(r.session_refs),
        r.whole_session,
        tuple(r.synthetic),
        sel.cursor,
        sel.rows.limit,
    )
