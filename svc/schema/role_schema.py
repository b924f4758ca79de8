"""A role's schema, and the objects it could not be built with.

A role's schema is built from the IR (`svc.schema.build`), merged with the remote schemas
it sees (`svc.schema.remote_merge`) and validated by graphql-core. Metadata writes refuse
what they can foresee would break it (`svc.schema.names`), but not everything: a document
stored before a rule existed, a database changed outside svc, a combination no rule
foresaw (a table custom-named like a scalar another table's column has). A role whose
schema fails must not answer `unexpected` to every request while
`get_inconsistent_metadata` and `/healthz` say all is well, so `role_schema`:

1. builds the role's schema as the metadata says; on success that is all;
2. otherwise finds objects whose absence lets it build: the candidates are what the role's
   schema is made of (another role: its permissions, then relationships, computed fields,
   remote relationships, functions, actions, remote schemas; admin: the same but tables
   instead of permissions), those on tables the error names first; a binary search finds
   the first candidate whose removal (with those before it) is enough, and repeats with
   the candidates before it until the rest builds, so only objects needed for the fix are
   blamed;
3. serves the schema without them, each an `Inconsistency` of its own type (the
   permission, relationship, …, `svc.metadata.drop` removes it), whose reason is the
   build's error; when even removing every candidate does not help, the role's schema is
   None and one `role_schema` inconsistency says why (requests of that role then answer
   500 `unexpected` with it).

Results are remembered on the IR (`Ir.derived`) per role, settings and remote
introspections, so the state serving requests, `get_inconsistent_metadata` and
`replace_metadata` build each role once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLSchema, validate_schema

from svc.errors import ErrorCode
from svc.ir.leave_out import Candidate, candidates, definition, leave_out
from svc.ir.model import Inconsistency, Ir
from svc.ir.role_view import role_view
from svc.ir.source_tables import namespaces
from svc.ir.unsupported_issues import type_relationship_issue
from svc.metadata.model import Metadata
from svc.metadata.remote_schemas import RemoteType, remote_schemas
from svc.schema.build import build_schema
from svc.schema.namespaces import apply_namespaces
from svc.schema.relay import build_relay_schema
from svc.schema.remote_merge import add_source_joins, merge_remotes
from svc.schema.remote_registry import RemoteRegistry
from svc.session_vars import is_admin


@dataclass(frozen=True, slots=True)
class RoleSchema:
    """`schema`: the role's schema without the objects of `issues` (None when it could
    not be built at all); `issues`: one inconsistency per object left out."""

    role: str
    schema: GraphQLSchema | None
    issues: tuple[Inconsistency, ...] = ()


def role_schema(
    ir: Ir,
    md: Metadata,
    role: str,
    remotes: RemoteRegistry,
    *,
    infer_functions: bool = True,
    streaming: bool | None = None,
    backend_only: bool = False,
    relay: bool = False,
    fresh: bool = False,
) -> RoleSchema:
    """The schema of `role` over `ir` and `md`'s remote schemas as introspected in
    `remotes`, with the objects it could not be built with left out (see the module);
    `backend_only`: with the role's `backend_only` writes (`RoleView.backend_only`);
    `relay`: the role's Relay API schema (`svc.schema.relay`, no remote schemas), left
    out of the same way; remembered on `ir` for these inputs, unless `fresh` (a new
    build, not remembered: its objects are the caller's alone). Never raises for bad
    metadata."""
    memo: dict[Any, Any] = ir.derived.setdefault(__name__, {})
    key = (role, infer_functions, streaming, backend_only, relay)
    snapshot = _snapshot(md, remotes)
    found = None if fresh else memo.get(key)
    if found is not None and found[0] is md and found[1] == snapshot:
        result: RoleSchema = found[2]
        return result
    build = _RoleBuild(ir, md, role, remotes, infer_functions, streaming, backend_only, relay)
    result = build.run()
    if not fresh:
        memo[key] = (md, snapshot, result)
    return result


def known_issues(ir: Ir, md: Metadata, remotes: RemoteRegistry) -> list[Inconsistency]:
    """The inconsistencies of the role schemas already built over `ir` for `md` and the
    current introspections (`role_schema`'s memory; builds nothing)."""
    memo: dict[Any, Any] = ir.derived.get(__name__, {})
    snapshot = _snapshot(md, remotes)
    out: list[Inconsistency] = []
    for found_md, found_snapshot, result in list(memo.values()):
        if found_md is md and found_snapshot == snapshot:
            out.extend(result.issues)
    return _unique(out)


def schema_roles(md: Metadata) -> tuple[str, ...]:
    """Every role whose schema the document shapes: admin, the roles of table, function
    and action permissions (`svc.ir.role_view.metadata_roles`) and of remote schema
    permissions."""
    from svc.ir.role_view import metadata_roles

    roles = set(metadata_roles(md))
    for entry in remote_schemas(md):
        roles.update(p.role for p in entry.permissions or ())
    first = metadata_roles(md)[0]  # admin
    return (first, *sorted(roles - {first}))


def all_issues(
    ir: Ir,
    md: Metadata,
    remotes: RemoteRegistry,
    *,
    infer_functions: bool = True,
) -> list[Inconsistency]:
    """The inconsistencies of every role's schema (`schema_roles`), building those not
    built yet."""
    out: list[Inconsistency] = []
    for role in schema_roles(md):
        out.extend(role_schema(ir, md, role, remotes, infer_functions=infer_functions).issues)
    return _unique(out)


def _unique(issues: Iterable[Inconsistency]) -> list[Inconsistency]:
    seen: set[tuple[str, str]] = set()
    out = []
    for issue in issues:
        if issue.key not in seen:
            seen.add(issue.key)
            out.append(issue)
    return out


def _snapshot(md: Metadata, remotes: RemoteRegistry) -> tuple[Any, ...]:
    """What the merge reads of `remotes` for `md`: each remote's introspection."""
    if not md.remote_schemas:
        return ()
    return tuple(remotes.lookup(entry) for entry in remote_schemas(md))


def _white_lie(message: str) -> bool:
    """An object or input type without fields: what a role sees of a table whose select
    permission lists no columns (`columns: []`, for aggregates or relationships only). The
    GraphQL specification forbids it; the reference serves it anyway ("a white lie",
    `Hasura.GraphQL.Schema.Select`, Note [Selectability of tables]): a query can still
    select nothing from it, since a selection set may not be empty."""
    return message.endswith("must define one or more fields.")


# Names a graphql-core error quotes: types, fields, arguments.
_QUOTED = re.compile(r"""['"]([_A-Za-z][_0-9A-Za-z]*)['"]""")


class _RoleBuild:
    """One role's build with the search for the objects it fails with."""

    def __init__(
        self,
        ir: Ir,
        md: Metadata,
        role: str,
        remotes: RemoteRegistry,
        infer_functions: bool,
        streaming: bool | None,
        backend_only: bool = False,
        relay: bool = False,
    ) -> None:
        self.ir, self.md, self.role, self.remotes = ir, md, role, remotes
        self.infer, self.streaming = infer_functions, streaming
        self.backend_only = backend_only
        self.relay = relay
        self.unresolved: list[tuple[Any, str]] = []  # of the last build that succeeded

    def run(self) -> RoleSchema:
        schema, error = self.attempt(())
        if schema is not None:
            return RoleSchema(self.role, schema, self.unresolved_issues())
        assert error is not None
        candidates = self.candidates(error)
        blamed = self.search(candidates)
        if blamed is None:
            issue = Inconsistency(
                "role_schema",
                {"role": self.role},
                f'Inconsistent object: the GraphQL schema of role "{self.role}" cannot be '
                f"built: {error}",
                name=f"role_schema {self.role}",
            )
            return RoleSchema(self.role, None, (issue,))
        schema, _ = self.attempt(blamed)
        issues = tuple(self.issue(c, error) for c in blamed)
        return RoleSchema(self.role, schema, issues + self.unresolved_issues())

    def unresolved_issues(self) -> tuple[Inconsistency, ...]:
        """Admin sees every remote field: a remote relationship whose remote field the
        remote schema lacks is an inconsistency of that relationship (another role may
        just not be allowed the field)."""
        return tuple(self.unresolved_issue(rel, reason) for rel, reason in self.unresolved)

    def unresolved_issue(self, rel: Any, reason: str) -> Inconsistency:
        if isinstance(rel.table, RemoteType):  # a relationship of a remote schema's type
            return type_relationship_issue(rel.table, rel.name, reason)
        c = Candidate("remote_relationship", rel.table, rel.name)
        return Inconsistency(
            c.kind,
            self.definition(c),
            f"Inconsistent object: in table {rel.table.quoted()}: in remote relationship "
            f'"{rel.name}": {reason}',
            ErrorCode.REMOTE_SCHEMA_ERROR,
            f"remote_relationship {rel.name} in table {rel.table} in source default",
            rel.table,
            rel.name,
        )

    # -- building -----------------------------------------------------------------------
    def attempt(self, without: Iterable[Candidate]) -> tuple[GraphQLSchema | None, str | None]:
        """The role's schema without the objects `without`, or the first error."""
        ir, md = leave_out(self.ir, self.md, tuple(without))
        unresolved: list[tuple[Any, str]] = []
        try:
            view = role_view(
                ir, self.role, infer_functions=self.infer, backend_only=self.backend_only
            )
            if self.relay:  # the Relay API's: no remote schema, no namespace
                built = build_relay_schema(ir, view)
                errors = [e for e in validate_schema(built) if not _white_lie(e.message)]
                if errors:
                    return None, errors[0].message
                built._validation_errors = []
                return built, None
            built = build_schema(ir, self.role, view=view, streaming=self.streaming)
            built = merge_remotes(built, md, self.role, self.remotes, unresolved)
            add_source_joins(built, ir.source_joins)  # relationships to other sources
            built = apply_namespaces(built, namespaces(md))  # last: the roots move
            errors = [e for e in validate_schema(built) if not _white_lie(e.message)]
        except Exception as exc:  # graphql-core: TypeError, ValueError, GraphQLError, …
            return None, str(exc) or type(exc).__name__
        if errors:
            return None, errors[0].message
        built._validation_errors = []  # valid but for white lies
        self.unresolved = unresolved if is_admin(self.role) else []
        return built, None

    def search(self, candidates: list[Candidate]) -> list[Candidate] | None:
        """The candidates to leave out (see the module), None when leaving all out does
        not help."""
        if not candidates or self.attempt(candidates)[0] is None:
            return None
        blamed: list[Candidate] = []
        rest = candidates
        while self.attempt(blamed)[0] is None and rest:
            lo, hi = 1, len(rest)
            while lo < hi:  # the shortest prefix of `rest` that is enough with `blamed`
                mid = (lo + hi) // 2
                if self.attempt((*blamed, *rest[:mid]))[0] is not None:
                    hi = mid
                else:
                    lo = mid + 1
            blamed.append(rest[lo - 1])
            rest = rest[: lo - 1]
        return blamed

    def candidates(self, error: str) -> list[Candidate]:
        """The objects the role's schema is made of, those on tables `error` names first."""
        return candidates(self.ir, self.md, self.role, is_admin(self.role), _QUOTED.findall(error))

    # -- reporting ----------------------------------------------------------------------
    def issue(self, c: Candidate, error: str) -> Inconsistency:
        """The inconsistency of leaving `c` out of the role's schema."""
        role = self.role
        where = f"in table {c.table.quoted()}: " if c.table is not None else ""
        if c.kind.endswith("_permission"):
            perm_role, kind = c.name.rsplit(".", 1)
            what = f'the {kind} permission of role "{perm_role}"'
        else:
            what = ""
        what = what or {
            "function": f"function {c.name}",
            "action": f"action {c.name}",
            "remote_schema": f"remote schema {c.name}",
            "table": "the table",
        }.get(c.kind, f"{c.kind.replace('_', ' ')} {c.name}")
        reason = (
            f"Inconsistent object: {where}{what} is left out of the GraphQL schema of role "
            f'"{role}", which cannot be built with it: {error}'
        )
        in_table = f" in table {c.table}" if c.table is not None else ""
        name = f"{c.kind} {c.name}{in_table} in source default (schema of role {role})"
        relationship = None if c.kind == "table" else c.name
        if c.kind == "function":
            return Inconsistency(c.kind, self.definition(c), reason, name=name)
        return Inconsistency(
            c.kind, self.definition(c), reason, name=name, table=c.table, relationship=relationship
        )

    def definition(self, c: Candidate) -> Any:
        return definition(self.md, c)
