"""Pure transitions `(Metadata, args) -> Metadata` of actions and custom types (spec 4.3,
4.4), and their argument shapes.

Whether a document's actions and custom types resolve (types exist, relationships reach
tracked columns) is decided by the IR (`svc.ir.actions`), so a write that breaks them is
refused by `Context.commit` with the inconsistency's own error, as the reference does.
Here only what the operation itself names is checked: 400 `already-exists` for a second
action of a name, 400 `not-exists` for a missing action or permission.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from svc.errors import ErrorCode, SvcError
from svc.metadata.action_model import Action, ActionDefinition, ActionPermission, CustomTypes
from svc.metadata.model import Metadata
from svc.metadata.names import check_name
from svc.outbound.headers import check_header


class CreateAction(msgspec.Struct, frozen=True):
    """`create_action` / `update_action` args: `{name, definition, comment?}`."""

    name: str
    definition: ActionDefinition
    comment: str | UnsetType | None = UNSET


class DropAction(msgspec.Struct, frozen=True):
    """`drop_action` args: `{name, clear_data?}` (`clear_data` default true)."""

    name: str
    clear_data: bool | None = None


class ActionPermissionArgs(msgspec.Struct, frozen=True):
    """`create_action_permission` / `drop_action_permission` args (the action is keyed
    `action`, or `name` as the spec's argument table has it)."""

    role: str
    action: str | None = None
    name: str | None = None
    comment: str | UnsetType | None = UNSET
    definition: Any = UNSET

    @property
    def action_name(self) -> str:
        """The action the permission is on (`action`, else `name`)."""
        return self.action if self.action is not None else (self.name or "")


def check_definition(definition: ActionDefinition, path: str = "$.definition") -> None:
    """`output_type` is required (400 `parse-failed` at `$.args.definition`); configured
    headers must be well formed (`svc.outbound.headers.check_header`: 400 `parse-failed`
    at `<path>.headers[i]`)."""
    if definition.output_type is UNSET:
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "Object missing required field `output_type`",
            path="$.args.definition",
        )
    for i, header in enumerate(definition.headers or ()):
        check_header(header, f"{path}.headers[{i}]")


def names_of(
    action: Action | None = None, types: CustomTypes | None = None
) -> list[tuple[str, str]]:
    """Every `(name, JSON path)` an action or the custom types give the schema: action
    and argument names; type, field, relationship and enum value names."""
    out: list[tuple[str, str]] = []
    if action is not None:
        out.append((action.name, "$.args.name"))
        for i, arg in enumerate(action.definition.args):
            out.append((arg.name, f"$.args.definition.arguments[{i}].name"))
    if types is not None:
        for kind in ("input_objects", "objects", "scalars", "enums"):
            for i, item in enumerate(getattr(types, kind) or ()):
                base = f"$.args.{kind}[{i}]"
                out.append((item.name, f"{base}.name"))
                for j, f in enumerate(getattr(item, "fields", ())):
                    out.append((f.name, f"{base}.fields[{j}].name"))
                for j, r in enumerate(getattr(item, "relationships", None) or ()):
                    out.append((r.name, f"{base}.relationships[{j}].name"))
                for j, v in enumerate(getattr(item, "values", ())):
                    out.append((v.value, f"{base}.values[{j}].value"))
    return out


def check_names(action: Action | None = None, types: CustomTypes | None = None) -> None:
    """400 `parse-failed` `<name> is not valid GraphQL name` at the first name that is not
    one (the reference parses them as GraphQL names)."""
    for name, path in names_of(action, types):
        check_name(name, path)


def find_action(md: Metadata, name: str) -> Action | None:
    """The action called `name`, if any."""
    return next((a for a in md.actions if a.name == name), None)


def _missing(name: str) -> SvcError:
    return SvcError(
        ErrorCode.NOT_EXISTS, f'action with name "{name}" does not exist', path="$.args"
    )


def set_custom_types(md: Metadata, types: CustomTypes) -> Metadata:
    """Replace the custom types (an empty set is stored as absent)."""
    check_names(types=types)
    stored: CustomTypes | UnsetType = UNSET if types == CustomTypes() else types
    return msgspec.structs.replace(md, custom_types=stored)


def create_action(md: Metadata, args: CreateAction) -> Metadata:
    """Add an action; 400 `already-exists` when one of that name exists."""
    if find_action(md, args.name) is not None:
        raise SvcError(
            ErrorCode.ALREADY_EXISTS,
            f'action with name "{args.name}" already exists',
            path="$.args",
        )
    check_definition(args.definition)
    action = Action(args.name, args.definition, args.comment)
    check_names(action)
    return msgspec.structs.replace(md, actions=(*md.actions, action))


def update_action(md: Metadata, args: CreateAction) -> Metadata:
    """Replace an action's definition (permissions kept; `comment` when given);
    400 `not-exists` when there is no such action."""
    old = find_action(md, args.name)
    if old is None:
        raise _missing(args.name)
    check_definition(args.definition)
    comment = old.comment if args.comment is UNSET else args.comment
    new = msgspec.structs.replace(old, definition=args.definition, comment=comment)
    check_names(new)
    return _replace(md, args.name, new)


def drop_action(md: Metadata, name: str) -> Metadata:
    """Remove an action and its permissions; 400 `not-exists` when absent."""
    if find_action(md, name) is None:
        raise _missing(name)
    return msgspec.structs.replace(md, actions=tuple(a for a in md.actions if a.name != name))


def create_action_permission(md: Metadata, args: ActionPermissionArgs) -> Metadata:
    """Let `args.role` see the action; 400 `not-exists` (no action), 400 `already-exists`
    (the role has one)."""
    name = args.action_name
    action = find_action(md, name)
    if action is None:
        raise _missing(name)
    if args.role in action.roles:
        raise SvcError(
            ErrorCode.ALREADY_EXISTS,
            f'permission for role "{args.role}" is already defined on "{name}"',
            path="$.args",
        )
    perm = ActionPermission(args.role, args.comment, args.definition)
    new = msgspec.structs.replace(action, permissions=(*(action.permissions or ()), perm))
    return _replace(md, name, new)


def drop_action_permission(md: Metadata, args: ActionPermissionArgs) -> Metadata:
    """Remove a role's permission; 400 `not-exists` when the action or permission is
    absent."""
    name = args.action_name
    action = find_action(md, name)
    if action is None:
        raise _missing(name)
    if args.role not in action.roles:
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f'permission for role "{args.role}" is not defined on "{name}"',
            path="$.args",
        )
    kept = tuple(p for p in action.permissions or () if p.role != args.role)
    new = msgspec.structs.replace(action, permissions=kept if kept else UNSET)
    return _replace(md, name, new)


def _replace(md: Metadata, name: str, action: Action) -> Metadata:
    return msgspec.structs.replace(
        md, actions=tuple(action if a.name == name else a for a in md.actions)
    )


def drop_action_object(md: Metadata, kind: str, name: str | None) -> Metadata:
    """`md` without the object an action or custom-types inconsistency names
    (`svc.metadata.drop`: `cascade`, `drop_inconsistent_metadata`): the action `name`, or
    the custom object relationship `name` (`<object>.<relationship>`); unchanged when
    absent or unnamed."""
    if name is None:
        return md
    if kind == "action":
        kept = tuple(a for a in md.actions if a.name != name)
        return msgspec.structs.replace(md, actions=kept) if len(kept) != len(md.actions) else md
    types = md.custom_types
    if kind != "custom_types" or not isinstance(types, CustomTypes) or "." not in name:
        return md
    obj_name, rel_name = name.split(".", 1)
    objects = []
    for obj in types.objects or ():
        if obj.name == obj_name and obj.relationships:
            rels = tuple(r for r in obj.relationships if r.name != rel_name)
            obj = msgspec.structs.replace(obj, relationships=rels)
        objects.append(obj)
    return msgspec.structs.replace(
        md, custom_types=msgspec.structs.replace(types, objects=tuple(objects))
    )
