"""The GraphQL request pipeline: parse and validate (cached), plan (cached), execute.

A warm request (same role, query text and operation name, same shape of variables) skips
parsing, validation, planning and rendering: it resolves parameters and runs one statement
whose JSON text is written into the response without being decoded (design brief 3).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from graphql import (
    ArgumentNode,
    DirectiveNode,
    DocumentNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLSchema,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    SingleFieldSubscriptionsRule,
    StringValueNode,
    VariableNode,
    Visitor,
    parse,
    visit,
)
from graphql.execution.collect_fields import collect_fields

from svc.api.actions.run import uses_actions
from svc.api.allowlist import check_allowed
from svc.api.answer_limits import check_bytes, check_rows
from svc.api.input_validation import validate_mutation
from svc.api.limits import (
    UNMEASURED,
    Defaults,
    Measure,
    RateCounter,
    RoleLimits,
    measure,
    rate_key,
    rate_limited,
    role_limits,
)
from svc.api.mutation import execute_mutation
from svc.api.packed_answers import Packed, kept_bytes, kept_form, packs, unpack
from svc.api.remote_exec import NOT_SUPPORTED

# Re-exported: the pipeline's callers (engine, REST, websockets, tests) import them here.
from svc.api.request import GraphQLRequest as GraphQLRequest
from svc.api.request import coerce_variables as coerce_variables
from svc.api.request import decode_json as decode_json
from svc.api.request import decode_request as decode_request
from svc.api.request import errors_body as errors_body
from svc.api.state import ENTRY_BYTES, State, document_bytes, plan_bytes, text_bytes
from svc.api.steps import calls_remote, run_steps
from svc.api.validate import select_rules, validate_document
from svc.errors import ErrorCode, SvcError, TransportError, validation_failed
from svc.execute.db import Database, Sources
from svc.execute.params import resolve
from svc.execute.replicas import ON_PRIMARY
from svc.execute.table_stats import StatsCache
from svc.gc_pause import collect_soon, gc_paused
from svc.metadata.model import DEFAULT_SOURCE
from svc.metadata.remote_schemas import remote_schemas
from svc.plan.namespaces import nested_body
from svc.plan.nodes import Param, QueryPlan, SessionJson, SessionRef
from svc.plan.operation import PlanInput, plan_operation
from svc.plan.steps import OperationPlan, StepKind
from svc.schema.introspection import introspect
from svc.session_vars import is_admin
from svc.sql.live import LiveStatement, render_live
from svc.sql.render import Statement, render_query

_encode = msgspec.json.encode


@dataclass(slots=True)
class Prepared:
    """A parsed and validated document for one role, and its plans by variable shape."""

    document: DocumentNode
    operation: OperationDefinitionNode
    fragments: dict[str, FragmentDefinitionNode]
    structural: frozenset[str] = frozenset()
    leaf_vars: frozenset[str] = frozenset()
    compiled: dict[Any, Compiled] = field(default_factory=dict)
    measured: Measure = UNMEASURED  # depth, nodes, introspection (svc.api.limits)
    # A subscription marked `@_multiple_top_level_fields` (may select several root
    # fields), and its multiplexed statements by the identity of their compiled plan
    # (two shapes can give one SQL text with different constants).
    multiple_roots: bool = False
    live: dict[int, tuple[Compiled, LiveStatement]] = field(default_factory=dict)
    # Operations with remote or action fields: their steps by variable shape; True once
    # the document was planned with database fields only (and no `@skip`/`@include`
    # variable can change that), so later requests skip the look.
    steps: dict[Any, OperationPlan] = field(default_factory=dict)
    database_only: bool = False
    key: Any = None  # its plan-cache key, `(role, query, operationName)`, once cached


@dataclass(frozen=True, slots=True)
class Compiled:
    """A rendered operation: the statement, its root aliases, the plan, and the database
    of the plan's source that runs it (taken when the plan is made, not per request)."""

    plan: QueryPlan
    statement: Statement
    aliases: tuple[str, ...]
    db: Database


def introspects(plan: QueryPlan) -> bool:
    """Whether `plan` has an introspection root (`__schema`, `__type`)."""
    return any(r.select is None for r in plan.roots)


def _key(alias: str) -> bytes:
    """`"alias":`, the start of a root field in the answer."""
    return _encode(alias) + b":"


def _data_body(keys: Sequence[bytes], answers: Sequence[bytes]) -> bytes:
    """`{"data":{…}}` from each root's `_key` and JSON answer, in one copy (answers can be
    megabytes)."""
    if len(keys) == 1:  # the common case, without the loop
        return b"".join((b'{"data":{', keys[0], answers[0], b"}}"))
    parts = [b'{"data":{']
    for i, (key, answer) in enumerate(zip(keys, answers, strict=True)):
        parts += (b"," + key if i else key, answer)
    parts.append(b"}}")
    return b"".join(parts)


_errors_body = errors_body


def _not_explainable(op: OperationDefinitionNode, planned: OperationPlan) -> SvcError:
    """The refusal of an operation only the database step path can answer (a subscription,
    explain) that has other steps: 400 `not-supported` "subscription to remote server is
    not supported" for a subscription; for explain, 400 `invalid-params` with the
    reference's messages (`Hasura.GraphQL.Explain.explainQueryField`: `throw400
    InvalidParams`)."""
    kinds = {step.kind for step in planned.steps}
    if kinds == {StepKind.DATABASE}:  # roots of several sources (`svc.plan.sources`)
        return SvcError(
            ErrorCode.NOT_SUPPORTED,
            "an operation reading several sources cannot be compiled into one statement: "
            "explain or subscribe to each source's fields alone",
        )
    if op.operation == OperationType.SUBSCRIPTION:
        return SvcError(ErrorCode.NOT_SUPPORTED, NOT_SUPPORTED)
    if StepKind.REMOTE_SCHEMA in kinds:
        message = "only hasura queries can be explained"
    elif StepKind.ACTION in kinds or StepKind.ACTION_LOG in kinds:
        message = "query actions cannot be explained"
    else:
        message = "queries with remote relationships cannot be explained"
    return SvcError(ErrorCode.INVALID_PARAMS, message)


_SEEN = object()  # plan-cache keys `(_SEEN, role, request bytes)` → `Seen`
# plan-cache keys `(_INTROSPECTION, prepared.key, variables' JSON)` → introspection answers
_INTROSPECTION = object()
_NO_ANSWERS: dict[str, bytes] = {}  # of a plan without introspection roots (never written)


async def _given_back(kept: dict[str, bytes] | Packed) -> dict[str, bytes]:
    """Kept introspection answers as JSON bytes: a compressed entry is given back in a
    worker thread (~75 ms for 55 MB), the event loop serving meanwhile."""
    return await asyncio.to_thread(unpack, kept) if isinstance(kept, Packed) else kept


@dataclass(frozen=True, slots=True)
class Seen:
    """What answers a query request seen before: its statement, the arguments when no
    parameter reads the session (else the variables to resolve them with), and the
    `"alias":` prefix of each root field, in order (every root is a database root), and
    the database of the query's source."""

    sql: str
    params: tuple[Param, ...]
    variables: dict[str, Any]
    args: list[Any] | None
    keys: tuple[bytes, ...]
    limits: RoleLimits  # the role's limits under the same `State` (rate and time)
    db: Database
    max_bytes: int = 0  # the answer's byte bound (`svc.api.answer_limits`; 0: none)

    @classmethod
    def of(
        cls,
        compiled: Compiled,
        variables: dict[str, Any],
        limits: RoleLimits,
        max_bytes: int = 0,
    ) -> Seen:
        """The entry for a compiled query run with `variables` by a role with `limits`
        (`max_bytes`: its answers' bound)."""
        params = compiled.statement.params
        by_session = any(isinstance(p.source, SessionRef | SessionJson) for p in params)
        args = None if by_session else resolve(params, variables, {})
        keys = tuple(_key(alias) for alias in compiled.aliases)
        kept = variables if by_session else {}  # only to resolve session parameters with
        return cls(compiled.statement.sql, params, kept, args, keys, limits, compiled.db, max_bytes)

    def footprint(self, body: bytes) -> int:
        """Estimated bytes of this entry under the request bytes `body` (`PlanCache`): the
        key, the arguments' texts, and the variables when kept (up to 24 bytes of Python
        objects per byte of JSON, as `[[],[],…]` takes)."""
        kept = 24 * len(body) if self.args is None else 0
        return ENTRY_BYTES + len(body) + text_bytes(self.args) + kept


_FIELD_NOT_FOUND = re.compile(r"Cannot query field '([^']+)' on type '([^']+)'")


def _validation_error(err: GraphQLError) -> SvcError:
    """graphql-core's message in the reference's words where they differ; an integer literal
    out of range is `parse-failed`, as the reference reports it."""
    message = err.message
    if "cannot represent non 32-bit signed integer" in message:
        return SvcError("parse-failed", message, path="$")
    if message.endswith("must select only one top level field."):
        return validation_failed("subscriptions must select one top level field", "$")
    m = _FIELD_NOT_FOUND.match(message)
    if m:
        message = f"field \"{m.group(1)}\" not found in type: '{m.group(2)}'"
    return validation_failed(message, "$")


_INTEGER = re.compile(r"-?[0-9]+")


def _integer_offsets(document: DocumentNode) -> DocumentNode:
    """`offset: "1"` read as `offset: 1`: the reference's `offset` argument accepts an
    integer in a string literal (conformance `graphql_query/offset`). Only the `offset`
    argument of a field (every one in svc's schema is a select's `Int`) is rewritten."""

    class Offsets(Visitor):
        def enter_argument(self, node: ArgumentNode, *_: Any) -> ArgumentNode | None:
            value = node.value
            if (
                node.name.value == "offset"
                and isinstance(value, StringValueNode)
                and _INTEGER.fullmatch(value.value)
            ):
                return ArgumentNode(name=node.name, value=IntValueNode(value=value.value))
            return None

    rewritten: DocumentNode = visit(document, Offsets())
    return rewritten


# Query texts longer than this are parsed and validated in a thread, so a multi-megabyte
# document (seconds of graphql-core's pure-Python parser) does not stall the event loop.
LARGE_QUERY = 64 * 1024


def prepare(schema: GraphQLSchema, query: str, operation_name: str | None) -> Prepared:
    """Parse, validate, pick the operation and measure it for the API limits
    (`svc.api.limits.measure`); raises `validation-failed`."""
    try:
        document = parse(query, no_location=True)  # svc reports paths, not locations
    except GraphQLError as exc:
        raise validation_failed(f"not a valid graphql query: {exc.message}", "$.query") from None
    if "offset" in query:
        document = _integer_offsets(document)
    multiple = MULTIPLE_ROOTS in query and _has_multiple_roots(document)
    if multiple:
        document = _without_multiple_roots(document)
    rules = select_rules(document, query)
    if multiple:  # the directive lifts graphql-core's one-field rule
        rules = tuple(r for r in rules if r is not SingleFieldSubscriptionsRule)
    errors = validate_document(schema, document, rules)
    if errors:
        raise _validation_error(errors[0])
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    if operation_name is not None:
        chosen = [o for o in ops if o.name is not None and o.name.value == operation_name]
        if not chosen:
            raise validation_failed(f'no such operation found in the document: "{operation_name}"')
    elif len(ops) != 1:
        raise validation_failed(
            "exactly one operation has to be present in the document "
            "when operationName is not specified"
        )
    else:
        chosen = ops
    op = chosen[0]
    if op.operation == OperationType.MUTATION and schema.mutation_type is None:
        raise validation_failed("no mutations exist", "$")
    structural = _directive_variables(document) if "@" in query else frozenset()
    measured = measure(op, fragments)
    return Prepared(
        document, op, fragments, structural=structural, measured=measured, multiple_roots=multiple
    )


MULTIPLE_ROOTS = "_multiple_top_level_fields"


def _has_multiple_roots(document: DocumentNode) -> bool:
    """Whether a subscription of `document` carries `@_multiple_top_level_fields`."""
    return any(
        isinstance(d, OperationDefinitionNode)
        and d.operation == OperationType.SUBSCRIPTION
        and any(x.name.value == MULTIPLE_ROOTS for x in d.directives or ())
        for d in document.definitions
    )


def _without_multiple_roots(document: DocumentNode) -> DocumentNode:
    """`document` without `@_multiple_top_level_fields` on its subscriptions: the
    reference's internal directive (its test suite sends it) that lets a subscription
    select several root fields; no schema declares it, so validation must not see it."""
    definitions = []
    for d in document.definitions:
        if isinstance(d, OperationDefinitionNode) and d.operation == OperationType.SUBSCRIPTION:
            kept = tuple(x for x in d.directives or () if x.name.value != MULTIPLE_ROOTS)
            d = OperationDefinitionNode(
                operation=d.operation,
                name=d.name,
                variable_definitions=d.variable_definitions,
                directives=kept,
                selection_set=d.selection_set,
            )
        definitions.append(d)
    return DocumentNode(definitions=tuple(definitions))


def _directive_variables(document: DocumentNode) -> frozenset[str]:
    """Variables used by `@skip`/`@include`: they decide which fields exist, so the plan
    cache must key on their values."""
    found: set[str] = set()

    class Finder(Visitor):
        def enter_directive(self, node: DirectiveNode, *_: Any) -> None:
            for arg in node.arguments or ():
                if isinstance(arg.value, VariableNode):
                    found.add(arg.value.name.value)

    visit(document, Finder())
    return frozenset(found)


def _shape_key(prepared: Prepared, variables: dict[str, Any]) -> Any:
    if not prepared.structural and not prepared.leaf_vars:
        return ()
    return (
        tuple((n, _encode(variables.get(n))) for n in sorted(prepared.structural)),
        tuple((n, variables.get(n) is None) for n in sorted(prepared.leaf_vars)),
    )


class GraphQLService:
    """Runs GraphQL requests against the current `State`."""

    def __init__(
        self,
        db: Database,
        *,
        stringify: bool,
        allowlist: bool = False,
        defaults: Defaults | None = None,
        rate_file: str | None = None,
        sources: Sources | None = None,
    ) -> None:
        self.db = db
        # Each plan runs on its source's database (`DatabaseStep.source`); `db` is the
        # default source's.
        self.sources = sources or Sources({DEFAULT_SOURCE: db})
        self.stringify = stringify
        self.allowlist = allowlist  # `--enable-allowlist`: non-admin queries must be listed
        self.defaults = defaults or Defaults()  # server-wide limits (svc.api.limits)
        # Each database's size statistics for the answer estimate (`check_answer`).
        self._stats: dict[int, tuple[Database, StatsCache]] = {}
        self.rate = RateCounter(rate_file)  # shared by the workers when `rate_file` is set
        self._limits_of: State | None = None
        self._limits: dict[str, RoleLimits] = {}
        # Introspection answers made one at a time per worker: each may build a role's
        # whole schema (~300 MB at 10,000 tables), and the same request waiting behind
        # another takes its answer from the cache.
        self._introspecting = asyncio.Semaphore(1)

    def limits(self, state: State, role: str) -> RoleLimits:
        """The API limits of `role` under `state` (resolved once per state and role)."""
        if state is not self._limits_of:
            self._limits_of, self._limits = state, {}
        found = self._limits.get(role)
        if found is None:
            md = state.metadata
            found = role_limits(role, md.api_limits, md.graphql_schema_introspection, self.defaults)
            self._limits[role] = found
        return found

    def count(
        self, role: str, limits: RoleLimits, session: dict[str, str], client: str | None
    ) -> None:
        """Count one operation against the role's rate limit; raises `rate-limit-exceeded`
        when it is over (the operation is then not counted)."""
        rule = limits.rate
        if rule is not None:
            key = rate_key(role, rule, session, client)
            if not self.rate.hit(key, rule.max_reqs_per_min):
                raise rate_limited(role, rule)

    def compile(
        self, state: State, role: str, req: GraphQLRequest
    ) -> tuple[Prepared, Compiled, dict[str, Any]]:
        """Prepared document, compiled statement and coerced variables (all cached). The
        role's depth, node and introspection limits apply first (`RoleLimits.check`), so a
        refused document is never planned."""
        prepared = self._prepared(state, role, req)
        self.limits(state, role).check(prepared.measured, role)
        return self._compile(state, role, req, prepared)

    def _compile(
        self, state: State, role: str, req: GraphQLRequest, prepared: Prepared
    ) -> tuple[Prepared, Compiled, dict[str, Any]]:
        schema = state.schema(role)
        if prepared.operation.operation == OperationType.MUTATION:
            raise validation_failed("explain is available for queries and subscriptions only")
        variables = coerce_variables(schema, prepared, req.variables, self.defaults.list_items)
        shape = _shape_key(prepared, variables)
        compiled = prepared.compiled.get(shape)
        if compiled is None:
            planned = plan_operation(self._input(state, role, prepared, variables))
            if not planned.database_only:
                raise _not_explainable(prepared.operation, planned)
            plan = planned.query
            statement, aliases = render_query(plan)
            db = self.sources.database(planned.database.source)
            compiled = Compiled(plan, statement, aliases, db)
            prepared.structural = prepared.structural | planned.structural
            prepared.leaf_vars = prepared.leaf_vars | planned.leaf_vars
            shape = _shape_key(prepared, variables)
            prepared.compiled[shape] = compiled
            key = (role, req.query, req.operationName)
            state.plans.grow(key, plan_bytes(statement.sql, shape))
        return prepared, compiled, variables

    async def execute(
        self,
        state: State,
        role: str,
        session: dict[str, str],
        raw: Any,
        *,
        body: bytes | None = None,
        client: str | None = None,
        batch: bool = False,
    ) -> bytes:
        """The response body (`{"data": …}` or `{"errors": […]}`) for one request object.
        `body`, the request's bytes when `raw` is the whole request, lets a query be
        answered again from those bytes alone (`answer_again`); `client` is the client's
        address, for rate limits per IP. A `TransportError` (a subscription) is raised
        for the server to answer with its status, except in a `batch` (Hasura answers a
        batch's items one by one)."""
        try:
            req = decode_request(raw)
            return await self.run(state, role, session, req, body=body, client=client)
        except SvcError as exc:
            if isinstance(exc, TransportError) and not batch:
                raise
            return _errors_body(exc, role)

    def answer_bytes(self, role: str) -> int:
        """The byte bound of `role`'s answers (0: none; admin has none)."""
        return 0 if is_admin(role) else self.defaults.answer_bytes

    async def check_answer(
        self, db: Database, plan: QueryPlan, variables: dict[str, Any], role: str
    ) -> int:
        """Refuse a query of a role other than admin whose estimated answer is over
        `answer_rows` (`svc.api.answer_limits.check_rows`, with the statistics of `db`,
        its source's database); the byte bound its answer must then keep."""
        if is_admin(role):
            return 0
        if self.defaults.answer_rows > 0:
            found = self._stats.get(id(db))
            if found is None:  # one per database, made once (not per request)
                found = self._stats[id(db)] = (db, StatsCache())
            cache = found[1]
            stats = await cache.current(db)
            check_rows(plan, stats, variables, self.defaults.answer_rows, role)
        return self.defaults.answer_bytes

    async def answer_again(
        self,
        state: State,
        role: str,
        session: dict[str, str],
        body: bytes,
        client: str | None = None,
    ) -> bytes | None:
        """The response to request bytes `body` that `role` sent before under `state`, with
        no decoding, lookups or planning: the statement and its arguments are known (only
        session variables are read again); its depth and node count passed the same limits
        before, so only the rate limit is counted. None when `body` was not answered
        before."""
        seen: Seen | None = state.plans.get((_SEEN, role, body))
        if seen is None:
            return None
        try:
            if seen.limits.rate is not None:
                self.count(role, seen.limits, session, client)
            args = seen.args
            if args is None:
                args = resolve(seen.params, seen.variables, session)
            timeout = seen.limits.timeout
            texts = await seen.db.query_json(seen.sql, args, len(seen.keys), timeout)
            check_bytes(sum(map(len, texts)), seen.max_bytes, role)
        except SvcError as exc:
            return _errors_body(exc, role)
        return _data_body(seen.keys, texts)

    async def run(
        self,
        state: State,
        role: str,
        session: dict[str, str],
        req: GraphQLRequest,
        *,
        allow_text: str | None = None,
        body: bytes | None = None,
        client: str | None = None,
        counted: bool = False,
        internal: bool = False,
    ) -> bytes:
        """The `{"data": …}` body of one request; raises `SvcError`. With the allow-list
        enabled a non-admin request must be listed (`allow_text`, default the query, is
        the text compared: a REST endpoint's stored text). A query whose request bytes
        `body` are given is remembered for `answer_again`. The role's API limits apply
        (`svc.api.limits`: rate first, unless the request was `counted` already, then
        depth, nodes and introspection of the cached document), all before any database
        round trip. An `internal` request (svc's own, joining a relationship of a request
        that passed these checks) is not held to the allow-list nor to depth and node
        limits (its root fields are one per parent object: the request's own count
        is what was measured)."""
        if not internal:  # a new request: reads go to replicas unless it writes (below)
            ON_PRIMARY.set(False)
        limits = self.limits(state, role)
        if limits.rate is not None and not counted:
            self.count(role, limits, session, client)
        if self.allowlist and not is_admin(role) and not internal:
            check_allowed(state, role, req.query if allow_text is None else allow_text)
        key = (role, req.query, req.operationName)
        prepared: Prepared | None = state.plans.get(key)
        if prepared is None:
            prepared = await self._prepare(state, role, req, key)
        if not internal:  # the request it joins for was measured whole
            limits.check(prepared.measured, role)
        kind = prepared.operation.operation
        if kind == OperationType.MUTATION:  # its reads must see its writes
            ON_PRIMARY.set(True)
        planned: OperationPlan | None = None
        if not prepared.database_only and (
            state.metadata.remote_schemas
            or state.ir.sources  # roots of two sources are two steps
            or (kind != OperationType.SUBSCRIPTION and uses_actions(state, prepared))
        ):
            variables = coerce_variables(
                state.schema(role), prepared, req.variables, self.defaults.list_items
            )
            planned = self.plan_steps(state, role, req, prepared, variables)
            if not planned.database_only:
                if kind != OperationType.SUBSCRIPTION or calls_remote(planned):
                    return await run_steps(
                        self,
                        state,
                        role,
                        session,
                        req,
                        prepared,
                        planned,
                        variables,
                        limits.timeout,
                    )
            elif "@" not in req.query:
                prepared.database_only = True
        if kind != OperationType.QUERY:
            if kind == OperationType.SUBSCRIPTION:  # Hasura's runGQ refuses them alike
                raise TransportError(
                    ErrorCode.UNEXPECTED_PAYLOAD,
                    "subscriptions are not supported over HTTP, use websockets instead",
                )
            return await self._mutate(state, role, session, req, prepared, limits.timeout, planned)
        _, compiled, variables = self._compile(state, role, req, prepared)
        values: dict[str, bytes] = {}
        if compiled.aliases:
            bound = await self.check_answer(compiled.db, compiled.plan, variables, role)
            args = resolve(compiled.statement.params, variables, session)
            sql, columns = compiled.statement.sql, len(compiled.aliases)
            texts = await compiled.db.query_json(sql, args, columns, limits.timeout)
            check_bytes(sum(map(len, texts)), bound, role)
            values = dict(zip(compiled.aliases, texts, strict=True))
        plan = compiled.plan
        if body is not None and len(compiled.aliases) == len(plan.roots) and not plan.namespaced:
            seen = Seen.of(compiled, variables, limits, self.answer_bytes(role))
            state.remember((_SEEN, role, body), seen, seen.footprint(body))
        answers = await self.introspection(state, role, prepared, plan, variables)
        return self._assemble(plan, values, answers)

    async def prepared(self, state: State, role: str, req: GraphQLRequest) -> Prepared:
        """`req`'s document for `role`, parsed and validated (cached; a large one in a
        thread) and within the role's depth, node and introspection limits. Raises
        `validation-failed` and the limits' errors; counts nothing (`admit` does)."""
        key = (role, req.query, req.operationName)
        prepared: Prepared | None = state.plans.get(key)
        if prepared is None:
            prepared = await self._prepare(state, role, req, key)
        self.limits(state, role).check(prepared.measured, role)
        return prepared

    def admit(
        self,
        state: State,
        role: str,
        session: dict[str, str],
        req: GraphQLRequest,
        client: str | None = None,
    ) -> None:
        """Count an operation that does not go through `run` (a subscription) against the
        role's rate limit, and check the allow-list, as `run` does; raises
        `rate-limit-exceeded`, `validation-failed` (not allowed)."""
        limits = self.limits(state, role)
        if limits.rate is not None:
            self.count(role, limits, session, client)
        if self.allowlist and not is_admin(role):
            check_allowed(state, role, req.query)

    def compile_live(
        self, state: State, role: str, req: GraphQLRequest, prepared: Prepared
    ) -> tuple[Compiled, dict[str, Any], LiveStatement]:
        """A subscription's compiled plan, coerced variables and multiplexed statement
        (`svc.sql.live`; cached in `prepared` beside its compiled plan). Raises
        `validation-failed` (variables, introspection roots) and the planner's errors."""
        _, compiled, variables = self._compile(state, role, req, prepared)
        found = prepared.live.get(id(compiled))
        if found is not None and found[0] is compiled:
            return compiled, variables, found[1]
        live = render_live(compiled.plan)
        prepared.live[id(compiled)] = (compiled, live)
        state.plans.grow((role, req.query, req.operationName), plan_bytes(live.sql))
        return compiled, variables, live

    @staticmethod
    async def _prepare(state: State, role: str, req: GraphQLRequest, key: Any) -> Prepared:
        """Prepare a document not in the cache (a large one in a thread) and cache it."""
        schema = state.schema(role)
        if len(req.query) > LARGE_QUERY:
            prepared = await asyncio.to_thread(prepare, schema, req.query, req.operationName)
        else:
            prepared = prepare(schema, req.query, req.operationName)
        prepared.key = key
        state.remember(key, prepared, ENTRY_BYTES + document_bytes(req.query))
        return prepared

    def _prepared(self, state: State, role: str, req: GraphQLRequest) -> Prepared:
        key = (role, req.query, req.operationName)
        prepared: Prepared | None = state.plans.get(key)
        if prepared is None:
            prepared = prepare(state.schema(role), req.query, req.operationName)
            prepared.key = key
            state.remember(key, prepared, ENTRY_BYTES + document_bytes(req.query))
        return prepared

    async def _mutate(
        self,
        state: State,
        role: str,
        session: dict[str, str],
        req: GraphQLRequest,
        prepared: Prepared,
        timeout: float | None = None,
        planned: OperationPlan | None = None,
    ) -> bytes:
        """Mutations are planned per request (their inputs shape the statements; `planned`
        when the caller planned it already), their input validation webhooks called
        (`svc.api.input_validation`), and run in one transaction, each statement within
        `timeout` seconds (None: the server's statement timeout; 0: none)."""
        schema = state.schema(role)
        variables = coerce_variables(schema, prepared, req.variables, self.defaults.list_items)
        if planned is None:
            planned = plan_operation(self._input(state, role, prepared, variables))
        await validate_mutation(schema, prepared, variables, role, session, timeout)
        roots = planned.mutation.roots
        db = self.sources.database(planned.database.source)
        return await execute_mutation(
            db, state.ir.tables, roots, variables, session, timeout, self.defaults.list_items
        )

    def _input(
        self, state: State, role: str, prepared: Prepared, variables: dict[str, Any]
    ) -> PlanInput:
        """What planning `prepared` for `role` under `state` reads."""
        md = state.metadata
        return PlanInput(
            state.schema(role),
            state.ir.tables,
            prepared.operation,
            prepared.fragments,
            variables,
            self.stringify,
            role,
            tuple(remote_schemas(md)) if md.remote_schemas else (),
            0 if is_admin(role) else self.defaults.pattern_length,
            bool(state.ir.source_joins),
        )

    def plan_steps(
        self,
        state: State,
        role: str,
        req: GraphQLRequest,
        prepared: Prepared,
        variables: dict[str, Any],
    ) -> OperationPlan:
        """The steps of `prepared` with coerced `variables`: a query's or subscription's
        cached per variable shape in `prepared`, a mutation's planned per request (its
        inputs shape the statements). Raises the planner's `SvcError`s."""
        if prepared.operation.operation == OperationType.MUTATION:
            return plan_operation(self._input(state, role, prepared, variables))
        found = prepared.steps.get(_shape_key(prepared, variables))
        if found is None:
            found = plan_operation(self._input(state, role, prepared, variables))
            prepared.structural = prepared.structural | found.structural
            prepared.leaf_vars = prepared.leaf_vars | found.leaf_vars
            prepared.steps[_shape_key(prepared, variables)] = found
            state.plans.grow((role, req.query, req.operationName), ENTRY_BYTES)
        return found

    @staticmethod
    def _assemble(
        plan: QueryPlan, values: dict[str, bytes], introspection: dict[str, bytes]
    ) -> bytes:
        """The `{"data": …}` body of `plan`'s roots from the database's JSON `values` and
        the `introspection` answers (`GraphQLService.introspection`), by alias."""
        answers: list[bytes] = []
        for root in plan.roots:
            if root.select is None:
                answers.append(introspection.get(root.alias, b"null"))
            elif root.alias in values:
                answers.append(values[root.alias])
            else:
                answers.append(_encode(getattr(root.select, "name", None)))
        if plan.namespaced:  # a source's namespace (`svc.plan.namespaces`)
            return nested_body([root.alias for root in plan.roots], answers)
        return _data_body([_key(root.alias) for root in plan.roots], answers)

    async def introspection(
        self,
        state: State,
        role: str,
        prepared: Prepared,
        plan: QueryPlan,
        variables: dict[str, Any],
    ) -> dict[str, bytes]:
        """The answers of `plan`'s introspection roots by alias (none without one), kept in
        the state's plan cache per document and variables: the schema they describe is
        the state's, so a metadata change (a new state) drops them, as the reference keeps
        one until the schema changes; answers from 1 MB are kept compressed (55 MB in
        1.1 MB at 10,000 tables, `svc.api.packed_answers`); one that still exceeds the
        cache's entry bound (1/8 of `plan_cache_bytes`) is made anew each time. Made in a
        worker thread (seconds for a big schema: the event loop keeps serving meanwhile),
        one request at a time per worker (the memory of a whole schema is taken once).
        Raises `validation-failed`."""
        if not introspects(plan):
            return _NO_ANSWERS
        key = None
        if prepared.key is not None:
            try:
                key = (_INTROSPECTION, prepared.key, _encode(variables))
            except TypeError:  # a coerced value without JSON (none reaches introspection)
                key = None
        found = None if key is None else state.plans.get(key)
        if found is not None:
            return await _given_back(found)
        async with self._introspecting:
            again = None if key is None else state.plans.get(key)
            if again is not None:  # made while this one waited
                return await _given_back(again)
            made, fresh = await asyncio.to_thread(
                self._introspect_role, state, role, prepared, variables
            )
            if key is not None:
                kept = (  # compressing a large one takes a while (`svc.api.packed_answers`)
                    await asyncio.to_thread(kept_form, made) if packs(made) else made
                )
                state.remember(key, kept, ENTRY_BYTES + text_bytes(key) + kept_bytes(kept))
        if fresh:  # its cycles, once the answer is handed over (`svc.gc_pause`)
            collect_soon()
        return made

    @classmethod
    def _introspect_role(
        cls, state: State, role: str, prepared: Prepared, variables: dict[str, Any]
    ) -> tuple[dict[str, bytes], bool]:
        """`_introspect` over `role`'s served schema, listing every type from
        `State.whole_schema`; and whether a fresh schema was made for that (dropped now:
        a garbage of cycles, which only a collection frees)."""
        served, made = state.schema(role), []

        def whole() -> GraphQLSchema:
            made.append(state.whole_schema(role))
            return made[-1]

        answers = cls._introspect(served, prepared, variables, whole)
        return answers, bool(made) and made[0] is not served

    @staticmethod
    def _introspect(
        schema: GraphQLSchema,
        prepared: Prepared,
        variables: dict[str, Any],
        whole: Callable[[], GraphQLSchema] | None = None,
    ) -> dict[str, bytes]:
        """The JSON answers of the introspection root fields (`__schema`, `__type`) by response
        key (`svc.schema.introspection`); a type that cannot be made raises
        `validation-failed` with graphql-core's message."""
        op = prepared.operation
        root = (
            schema.subscription_type
            if op.operation == OperationType.SUBSCRIPTION
            else (schema.query_type)
        )
        assert root is not None
        fields = collect_fields(schema, prepared.fragments, variables, root, op.selection_set)
        try:
            with gc_paused():  # an answer of millions of new dicts (`svc.gc_pause`)
                return introspect(schema, fields, prepared.fragments, variables, whole)
        except (GraphQLError, TypeError) as error:
            raise validation_failed(str(error)) from error
