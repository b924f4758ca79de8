"""Pure transitions `(Metadata, args) -> Metadata` of tracked functions and their
permissions (spec 4.6; see `svc.metadata.apply` for the rules all transitions follow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import UNSET
from msgspec.structs import replace

from svc.errors import ErrorCode, SvcError, already_exists, not_exists
from svc.metadata.args import FunctionPermission as FunctionPermissionArgs
from svc.metadata.function_model import FunctionPermission, TrackedFunction
from svc.metadata.model import Metadata, QualifiedName, qualify


def find_function(md: Metadata, name: QualifiedName) -> TrackedFunction | None:
    """The `functions` entry of `name`, if tracked."""
    return next((f for f in md.functions if f.name == name), None)


def track_function(md: Metadata, entry: TrackedFunction, in_catalog: bool) -> Metadata:
    """Add a tracked function. Raises 400 `already-tracked` when it is tracked, then
    `not-supported` when a table has its name, then `not-exists` unless `in_catalog` (it
    exists in Postgres; the caller looked)."""
    name = entry.name
    if find_function(md, name) is not None:
        raise SvcError(
            ErrorCode.ALREADY_TRACKED, f"function already tracked : {name.quoted()}", path="$.args"
        )
    if md.table(name) is not None:
        raise SvcError(
            ErrorCode.NOT_SUPPORTED,
            f"table with name {name.quoted()} already exists",
            path="$.args",
        )
    if not in_catalog:
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"no such function exists in postgres : {name.quoted()}",
            path="$.args",
        )
    return replace(md, functions=(*md.functions, entry))


def untrack_function(md: Metadata, name: QualifiedName) -> Metadata:
    """Remove a tracked function; 400 `not-exists` when it is not tracked."""
    if find_function(md, name) is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS, f"function not found in cache : {name.quoted()}", path="$.args"
        )
    return without_functions(md, lambda n: n == name)


def without_functions(md: Metadata, drop: Callable[[QualifiedName], bool]) -> Metadata:
    """`md` without the tracked functions whose name `drop` holds for."""
    return replace(md, functions=tuple(f for f in md.functions if not drop(f.name)))


def _edit_function(
    md: Metadata, raw: Any, edit: Callable[[TrackedFunction], TrackedFunction]
) -> Metadata:
    """`md` with the entry of function `raw` replaced by `edit(entry)`; 400 `parse-failed`
    for a bad name, `not-exists` when the function is not tracked."""
    name = qualify(raw, "$.args.function")
    if find_function(md, name) is None:
        raise not_exists(f"function {name.quoted()} is not tracked", "$.args.function")
    index = next(i for i, f in enumerate(md.functions) if f.name == name)
    functions = (*md.functions[:index], edit(md.functions[index]), *md.functions[index + 1 :])
    return replace(md, functions=functions)


def create_function_permission(md: Metadata, args: FunctionPermissionArgs) -> Metadata:
    """Let `role` call a tracked function (spec 4.6 rule 5); 400 `already-exists` when it
    may already. Whether the role may select the function's table is checked by the IR."""

    def add(entry: TrackedFunction) -> TrackedFunction:
        if args.role in entry.roles:
            raise already_exists(
                f'permission of role "{args.role}" already exists for function', "$.args"
            )
        current = () if entry.permissions is UNSET else entry.permissions
        return replace(entry, permissions=(*current, FunctionPermission(role=args.role)))

    return _edit_function(md, args.function, add)


def drop_function_permission(md: Metadata, args: FunctionPermissionArgs) -> Metadata:
    """Remove a role's function permission; 400 `not-exists` when there is none. A
    function left without permissions has no `permissions` key (as svc stores it)."""

    def drop(entry: TrackedFunction) -> TrackedFunction:
        if args.role not in entry.roles:
            raise not_exists(f'permission of role "{args.role}" does not exist', "$.args")
        assert entry.permissions is not UNSET  # it holds the role
        kept = tuple(p for p in entry.permissions if p.role != args.role)
        return replace(entry, permissions=kept or UNSET)

    return _edit_function(md, args.function, drop)
