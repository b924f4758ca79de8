"""The multiplexed statement of a live query (reference notes "Subscriptions").

One statement answers a batch of cohorts. Its two parameters are arrays, one element per
cohort: `$1` the cohort ids (text of uuids), `$2` the cohort variables (JSON texts):

    SELECT array_agg("_subs"."cohort_id"::text), array_agg("_fld"."result")
    FROM unnest($1::text[]::uuid[], $2::text[]::json[]) AS "_subs"("cohort_id", "vars")
    LEFT OUTER JOIN LATERAL (SELECT json_build_object('alias', (<root>), …) AS "result")
      AS "_fld" ON true

(the reference returns one row per cohort; svc aggregates them into one row, since its read
path fetches one row per statement). Each parameter of the query's own statement is read
from the cohort's variables instead of `$n`, then cast exactly as `Renderer.param` casts
`$n`: a GraphQL variable or literal from `vars.synthetic[i]`, a session variable from
`vars.session.<name>`, the whole session (a function's session argument) from
`vars.session`. `svc.api.live.cohort.cohort_vars` computes them for one subscriber.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from svc.errors import ErrorCode, SvcError
from svc.plan.namespaces import split_alias
from svc.plan.nodes import (
    Aggregate,
    Connection,
    Param,
    QueryPlan,
    Select,
    SessionJson,
    SessionRef,
    Typename,
)
from svc.sql.render import Renderer, ident, literal

_SUBS = ident("_subs")
_VARS = f"{_SUBS}.{ident('vars')}"


@dataclass
class _CohortRenderer(Renderer):
    """A renderer whose parameters read the current cohort's variables (`"_subs"."vars"`)."""

    session_refs: list[SessionRef] = field(default_factory=list)
    whole_session: bool = False
    synthetic: list[Param] = field(default_factory=list)

    def ref(self, p: Param) -> str:
        """The text of `p` in the cohort's variables (a JSON path read as text)."""
        self.params.append(p)
        src = p.source
        if isinstance(src, SessionJson):
            self.whole_session = True
            return f"({_VARS}->>'session')"
        if isinstance(src, SessionRef):
            self.session_refs.append(src)
            # A session variable's name comes from metadata, never from a request; it is
            # a quoted literal as Hasura's `'{session,x-hasura-user-id}'` path is.
            return f"({_VARS}->'session'->>{literal(src.name)})"
        self.synthetic.append(p)
        return f"({_VARS}->'synthetic'->>{len(self.synthetic) - 1})"


@dataclass(frozen=True, slots=True)
class LiveStatement:
    """The multiplexed statement of one live query (see the module docstring).

    `sql` takes `[cohort ids, cohort variables]` and answers one row of two arrays:
    the ids (text) and each cohort's `json` result (`{"alias": …}` over every root).
    `session_refs`: the session variables the statement reads (lower-case names);
    `whole_session`: whether it reads the whole session; `synthetic`: the parameters read
    from `vars.synthetic`, in order."""

    sql: str
    session_refs: tuple[SessionRef, ...]
    whole_session: bool
    synthetic: tuple[Param, ...]


def root_object(parts: list[tuple[str, str]]) -> str:
    """`json_build_object(…)` of each root's alias and SQL value, the roots of a source's
    namespace (flattened aliases, `svc.plan.namespaces`) inside an object of their own."""
    items: list[str] = []
    group: list[str] = []
    space: str | None = None
    for alias, value in parts:
        outer, name = split_alias(alias)
        if outer != space and space is not None:
            items.append(f"{literal(space)}, json_build_object({', '.join(group)})")
            group = []
        space = outer
        if outer is None:
            items.append(f"{literal(name)}, {value}")
        else:
            group.append(f"{literal(name)}, {value}")
    if space is not None:
        items.append(f"{literal(space)}, json_build_object({', '.join(group)})")
    return f"json_build_object({', '.join(items)})"


def render_live(plan: QueryPlan) -> LiveStatement:
    """The multiplexed statement answering every root of a subscription `plan`. Raises
    `SvcError` `validation-failed` for an introspection root (`__schema`, `__type`),
    which a live query cannot poll. A streaming root (`x_stream`) gets its own statement
    (`svc.sql.stream.StreamStatement`)."""
    from svc.sql.stream import is_stream, render_stream  # it builds on this module

    if is_stream(plan):
        return render_stream(plan)
    r = _CohortRenderer()
    parts: list[tuple[str, str]] = []
    for root in plan.roots:
        sel = root.select
        if isinstance(sel, Typename):
            value = literal(sel.name)
        elif isinstance(sel, Select | Aggregate | Connection):
            value = f"({r.selection(sel, None)})"
        else:
            raise SvcError(
                ErrorCode.VALIDATION_FAILED, "introspection is not supported in subscriptions"
            )
        parts.append((root.alias, value))
    result = root_object(parts)
    fld = ident("_fld")
    sql = (
        f"SELECT array_agg({_SUBS}.{ident('cohort_id')}::text), "
        f"array_agg({fld}.{ident('result')}) "
        f"FROM unnest($1::text[]::uuid[], $2::text[]::json[]) "
        f"AS {_SUBS}({ident('cohort_id')}, {ident('vars')}) "
        f"LEFT OUTER JOIN LATERAL (SELECT {result} AS {ident('result')}) AS {fld} ON true"
    )
    return LiveStatement(sql, tuple(r.session_refs), r.whole_session, tuple(r.synthetic))
