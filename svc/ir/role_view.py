"""What one role may do with each table and function of an IR: the one place that decides.

Schema, planner, legacy DML and `svc compile` read a `RoleView` instead of the IR's
permission maps, so a rule (admin sees everything; updates and deletes need a select
permission; `backend_only` hides a write) is written once. `tests/test_role_view.py`
finds any other `== "admin"` or `*_permissions` access under `svc/`.

A view is made once per (IR, role) by `svc.api.state.State.role_view` (or `role_view`
for a one-off) and fills its per-table entries on first use, so a view of a
1,000-table IR costs nothing until a table is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from svc.ir.inherited import granted, inherited_remote, inherited_select, inherited_write
from svc.ir.model import Column, ComputedField, Function, Ir, Table
from svc.ir.permissions import SelectPermission
from svc.metadata.model import Metadata, QualifiedName, TableEntry
from svc.metadata.permission_model import Permission
from svc.metadata.remote_schemas import RemoteSchema, remote_sdls
from svc.session_vars import ADMIN_ROLE, is_admin

# Permission kinds in the metadata's order of `<kind>_permissions` lists.
PERMISSION_KINDS = ("insert", "select", "update", "delete")


@dataclass(frozen=True, slots=True)
class WriteAccess:
    """A role's insert, update or delete rule on one table.

    `columns`: the columns the role may give (insert) or set (update), presets excluded
    (admin: all; empty for delete). `presets`: column → static value or session variable
    name. `check`/`filter`: normalised boolean expressions (`svc.ir.permissions`), None
    when unrestricted (admin; `check` of delete, `filter` of insert). `validate`: the
    permission's `validate_input` webhook (`svc.ir.input_validation.ValidateInput`), None
    without one (admin).
    """

    columns: tuple[Column, ...]
    presets: dict[str, Any]
    check: Any
    filter: Any
    backend_only: bool
    validate: Any = None


@dataclass(frozen=True, slots=True)
class TableAccess:
    """What a role may do with one table (Hasura's rules, admin sees all).

    `readable`: admin, or the role has a select permission; `selectable`: readable and the
    table has a GraphQL name (so the schema shows it). `columns` and
    `computed_fields` are what it may select (`SETOF` computed fields only onto a
    selectable table; `cases`: an inherited role's column or computed field → the filter
    of the rows where its value shows, `svc.ir.inherited`). `filter` is the select filter
    (None: unrestricted), `limit` its row cap. `insert_columns`/`update_columns` are None
    when that write is not offered (no permission, `backend_only`, a view that cannot
    take it, or — for updates — no select permission). `root_fields` holds the kinds of
    root field the table gets:
    `select`, `select_stream` (a subscription root, `svc.schema.stream`), `select_by_pk`,
    `select_aggregate`, `insert`, `insert_one`, `update`, `update_by_pk`, `update_many`,
    `delete`, `delete_by_pk`. `query_roots` and `subscription_roots` are the select kinds
    (`select`, `select_by_pk`, `select_aggregate`; `select_stream` for subscriptions) the
    role gets in `query_root` and `subscription_root`: those of `root_fields` its select
    permission's `query_root_fields`/`subscription_root_fields` allow (absent or null:
    all; Hasura `server/src-lib/Hasura/GraphQL/Schema/Build.hs`,
    `buildTableQueryAndSubscriptionFields`). They hide root fields only: the table stays
    readable through relationships, functions and mutations' `returning`.
    """

    table: Table
    readable: bool
    selectable: bool
    columns: tuple[Column, ...]
    column_names: frozenset[str]
    computed_fields: tuple[ComputedField, ...]
    filter: Any
    limit: int | None
    aggregations: bool
    insert: WriteAccess | None
    update: WriteAccess | None
    delete: WriteAccess | None
    insert_columns: tuple[Column, ...] | None
    update_columns: tuple[Column, ...] | None
    can_delete: bool
    pk_visible: bool
    root_fields: frozenset[str]
    query_roots: frozenset[str] = frozenset()
    subscription_roots: frozenset[str] = frozenset()
    cases: Mapping[str, Any] = field(default_factory=dict)

    def write(self, kind: str) -> WriteAccess | None:
        """The rule of write `kind` (`insert`, `update`, `delete`); None without one."""
        return {"insert": self.insert, "update": self.update, "delete": self.delete}[kind]


@dataclass(frozen=True, slots=True)
class RoleView:
    """What `role` may do with `ir`'s tables and functions.

    `infer_functions` is `--infer-function-permissions`: a role may call a function
    returning a table it may select even without a function permission (spec 4.6).
    `backend_only`: the request may use `backend_only` writes (Hasura's
    `BOFAAllowed`: the admin secret and `X-Svc-Use-Backend-Only-Permissions: true`,
    `svc.server.session.header_session`); otherwise they are hidden. Entries are built
    on first use and kept (`_tables`), never changed after.
    """

    ir: Ir
    role: str
    infer_functions: bool = True
    backend_only: bool = False
    _tables: dict[QualifiedName, TableAccess] = field(
        default_factory=dict, compare=False, repr=False
    )
    _functions: dict[str, tuple[Function, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def admin(self) -> bool:
        """True when the view is admin's (every table, column and write)."""
        return is_admin(self.role)

    def selectable(self, name: QualifiedName) -> bool:
        """Whether the role may read table `name` (tracked, with a GraphQL name)."""
        table = self.ir.tables.get(name)
        return table is not None and bool(table.gql_name) and self._may_select(table)

    def _may_select(self, table: Table) -> bool:
        return self.admin or self.select_permission(table) is not None

    def select_permission(self, table: Table) -> SelectPermission | None:
        """The role's select permission on `table` (an inherited role's combined from its
        parents', `svc.ir.inherited`); None for admin or without one."""
        if self.admin:
            return None
        if self.role not in self.ir.inherited_roles:
            return table.select_permissions.get(self.role)
        return inherited_select(table, self.role, self.ir.inherited_roles)

    def _granted(self, roles: Iterable[str]) -> bool:
        """Whether a function or action permission listing `roles` is the role's (its own,
        or one of the roles it inherits from)."""
        return granted(self.role, roles, self.ir.inherited_roles)

    def write_candidates(self) -> Iterator[Table]:
        """The tracked tables the role may have a write on: every one for admin; else those
        with an insert, update or delete permission of the role or of a role it inherits
        from (cheap: no `TableAccess` made; `table(...).root_fields` decides)."""
        if self.admin:
            yield from (t for t in self.ir.tables.values() if t.gql_name)
            return
        roles = _ancestry(self.role, self.ir.inherited_roles)
        for t in self.ir.tables.values():
            if t.gql_name and any(
                r in t.insert_permissions or r in t.update_permissions or r in t.delete_permissions
                for r in roles
            ):
                yield t

    def tables(self) -> dict[QualifiedName, Table]:
        """The tables the role may read, in the IR's order."""
        return {n: t for n, t in self.ir.tables.items() if t.gql_name and self._may_select(t)}

    def table(self, name: QualifiedName) -> TableAccess:
        """The role's access to tracked table `name` (KeyError when it is not tracked)."""
        found = self._tables.get(name)
        if found is None:
            found = self._tables[name] = _table_access(self, self.ir.tables[name])
        return found

    def functions(self, exposed_as: str) -> tuple[Function, ...]:
        """Tracked functions exposed as `exposed_as` (`query`/`mutation`) that the role may
        call, by GraphQL name: admin all; another role those returning a table it may
        select, with a function permission or when permissions are inferred."""
        found = self._functions.get(exposed_as)
        if found is None:
            found = self._functions[exposed_as] = tuple(
                fn
                for fn in sorted(self.ir.functions.values(), key=lambda f: f.gql_name)
                if fn.exposed_as == exposed_as
                and self.selectable(fn.returns)
                and (self.admin or self.infer_functions or self._granted(fn.roles))
            )
        return found

    def actions(self) -> tuple[Any, ...]:
        """The actions (`svc.ir.actions.ResolvedAction`) the role may call, in document
        order: admin all, another role those with an action permission for it (spec 4.3)."""
        resolved = self.ir.actions
        if resolved is None:
            return ()
        return tuple(
            a for a in resolved.actions.values() if self.admin or self._granted(a.action.roles)
        )


def role_view(
    ir: Ir, role: str, *, infer_functions: bool = True, backend_only: bool = False
) -> RoleView:
    """A new view of `ir` for `role` (callers that serve many requests keep one:
    `State.role_view`); `backend_only` as `RoleView`'s."""
    return RoleView(ir, role, infer_functions, backend_only)


def _ancestry(role: str, parents: dict[str, tuple[str, ...]]) -> set[str]:
    """`role` and every role it inherits from, transitively."""
    out, todo = set(), [role]
    while todo:
        r = todo.pop()
        if r not in out:
            out.add(r)
            todo.extend(parents.get(r, ()))
    return out


def _table_access(view: RoleView, table: Table) -> TableAccess:
    admin = view.admin
    sp = view.select_permission(table)
    selectable = bool(table.gql_name) and (admin or sp is not None)
    if admin:
        columns = table.columns
    else:
        allowed = set(sp.columns) if sp is not None else set()
        # a column an inherited role shows in some rows only is nullable (`svc.ir.inherited`)
        cases = sp.cases if sp is not None else {}
        columns = tuple(
            replace(c, nullable=True) if c.name in cases else c
            for c in table.columns
            if c.name in allowed
        )
    names = frozenset(c.name for c in columns)
    insert, update, delete = (_write(view, table, kind) for kind in ("i", "u", "d"))
    backend = view.backend_only
    insert_cols = _offered(insert, table.insertable, backend)
    update_cols = _offered(update, table.updatable_rows and selectable, backend)
    can_delete = _offered(delete, table.deletable and selectable, backend) is not None
    pk_visible = bool(table.primary_key) and selectable and names.issuperset(table.primary_key)
    aggregations = admin or (sp is not None and sp.allow_aggregations)
    root_fields = frozenset(
        _root_fields(
            selectable,
            aggregations,
            pk_visible,
            insert_cols is not None,
            update_cols is not None,
            can_delete,
        )
        if table.gql_name
        else ()
    )
    return TableAccess(
        table=table,
        readable=admin or sp is not None,
        selectable=selectable,
        columns=columns,
        column_names=names,
        computed_fields=_computed(view, table, None if admin else sp),
        filter=None if sp is None else sp.filter,
        cases={} if sp is None else sp.cases,
        limit=None if sp is None else sp.limit,
        aggregations=aggregations,
        insert=insert,
        update=update,
        delete=delete,
        insert_columns=insert_cols,
        update_columns=update_cols,
        can_delete=can_delete,
        pk_visible=pk_visible,
        root_fields=root_fields,
        query_roots=_allowed(root_fields & QUERY_ROOTS, sp, "query_root_fields"),
        subscription_roots=_allowed(
            root_fields & SUBSCRIPTION_ROOTS, sp, "subscription_root_fields"
        ),
    )


#: The root field kinds a select permission's `query_root_fields` and
#: `subscription_root_fields` name (Hasura `Hasura.RQL.Types.Permission`,
#: `QueryRootFieldType`, `SubscriptionRootFieldType`).
QUERY_ROOTS = frozenset({"select", "select_by_pk", "select_aggregate"})
SUBSCRIPTION_ROOTS = QUERY_ROOTS | {"select_stream"}


def _allowed(kinds: frozenset[str], sp: Any, key: str) -> frozenset[str]:
    """`kinds` less those the select permission's `key` leaves out (None: admin, or the
    key absent or null, allows all)."""
    listed = None if sp is None else getattr(sp, key)
    return kinds if listed is None else kinds & listed


def _write(view: RoleView, table: Table, kind: str) -> WriteAccess | None:
    """The insert (`i`), update (`u`) or delete (`d`) rule of the view's role on `table`
    (an inherited role's from its parents when they agree, `svc.ir.inherited`)."""
    if view.admin:
        return WriteAccess(table.columns if kind != "d" else (), {}, None, None, False)
    perm, _ = inherited_write(table, kind, view.role, view.ir.inherited_roles)
    if kind == "d":
        if perm is None:
            return None
        return WriteAccess((), {}, None, perm.filter, perm.backend_only, perm.validate)
    if perm is None:
        return None
    given = tuple(c for c in table.columns if c.name in perm.columns and c.name not in perm.set)
    filter_ = getattr(perm, "filter", None)  # inserts have none
    return WriteAccess(given, perm.set, perm.check, filter_, perm.backend_only, perm.validate)


def _offered(write: WriteAccess | None, possible: bool, backend: bool) -> tuple[Column, ...] | None:
    """The columns of a write the schema offers, or None: Hasura hides a `backend_only`
    write from a request not allowed them (`backend`; `Hasura.GraphQL.Schema.Mutation`,
    the `Frontend` scenario)."""
    if not possible or write is None or (write.backend_only and not backend):
        return None
    return write.columns


def _computed(view: RoleView, table: Table, sp: Any) -> tuple[ComputedField, ...]:
    """Scalar computed fields the select permission lists (admin: all), `SETOF` ones onto
    a table the role may select (Hasura's rules)."""
    if not table.computed_fields or (sp is None and not view.admin):
        return ()
    allowed = None if sp is None else set(sp.computed_fields)
    return tuple(
        cf
        for cf in table.computed_fields
        if (
            view.selectable(cf.returns_table)
            if cf.returns_table is not None
            else allowed is None or cf.name in allowed
        )
    )


def _root_fields(
    select: bool, aggregate: bool, by_pk: bool, insert: bool, update: bool, delete: bool
) -> Iterator[str]:
    if select:
        yield "select"
        yield "select_stream"  # subscription_root only, when streaming is on
        if aggregate:
            yield "select_aggregate"
    if by_pk:
        yield "select_by_pk"
    if insert:
        yield "insert"
        if select:
            yield "insert_one"
    if update:
        yield from ("update", "update_many")
        if by_pk:
            yield "update_by_pk"
    if delete:
        yield "delete"
        if by_pk:
            yield "delete_by_pk"


# -- remote schemas -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RemoteAccess:
    """What a role may use of one remote schema (Hasura's remote schema permissions).

    `whole`: all of it (admin, or permissions not enforced); otherwise `sdl` is the SDL of
    the role's permission (the subset it sees, with `@preset` arguments), None when it
    has none (the remote is hidden from it).
    """

    whole: bool
    sdl: str | None = None


def any_input_validation(ir: Ir) -> bool:
    """Whether some role's insert, update or delete permission on some table has a
    `validate_input` webhook (the permission's `validate`): the cheap test before a
    mutation looks for its webhooks (`svc.api.input_validation`). Remembered on the IR."""
    memo: dict[str, Any] = ir.derived.setdefault(__name__, {})
    found = memo.get("any_input_validation")
    if found is None:
        found = memo["any_input_validation"] = any(
            getattr(p, "validate", None) is not None
            for t in ir.tables.values()
            for perms in (t.insert_permissions, t.update_permissions, t.delete_permissions)
            for p in perms.values()
        )
    return bool(found)


def remote_access(
    entry: RemoteSchema, role: str, *, enforced: bool, parents: Mapping[str, tuple[str, ...]]
) -> RemoteAccess:
    """`role`'s access to remote schema `entry`; `enforced` is the server setting
    (`SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS`): off, every role sees it whole.
    `parents`: the inherited roles (`Ir.inherited_roles`); an inherited role without a
    permission of its own has its parents' when they agree (`svc.ir.inherited`)."""
    if not enforced or is_admin(role):
        return RemoteAccess(whole=True)
    sdl, _ = inherited_remote(remote_sdls(entry), role, parents)
    return RemoteAccess(whole=False, sdl=sdl)


# -- the roles a metadata document names --------------------------------------------------
def metadata_permissions(entry: TableEntry, kind: str) -> tuple[Permission[Any], ...]:
    """The `<kind>_permissions` of a metadata table entry (for locating an entry in the
    document; decisions use `TableAccess`)."""
    found: tuple[Permission[Any], ...] = getattr(entry, f"{kind}_permissions", ())
    return found


def permission_index(perms: tuple[Permission[Any], ...], role: Any) -> int | None:
    """The index of `role`'s entry in a metadata permission list, None without one."""
    return next((i for i, p in enumerate(perms) if p.role == role), None)


def metadata_roles(md: Metadata) -> tuple[str, ...]:
    """`admin` and every role named in a table, function or action permission of `md` or
    inherited, sorted after admin (roles whose permissions do not resolve included)."""
    roles: set[str] = set()
    for entry in md.tables:
        for kind in PERMISSION_KINDS:
            roles.update(p.role for p in metadata_permissions(entry, kind))
    for fn in md.functions:
        roles.update(fn.roles)
    for action in md.actions:
        roles.update(action.roles)
    roles.update(str(r.get("role_name")) for r in md.inherited_roles)
    roles.discard(ADMIN_ROLE)
    return (ADMIN_ROLE, *sorted(roles))
