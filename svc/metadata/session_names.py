"""Metadata naming a session variable in the spelling this process does not read is refused.

A process reads one spelling of session variables (`svc.session_vars`: `x-svc-*`, or
`x-hasura-*` under the Hasura names compatibility switch), as the reference reads one.
Where metadata names a session variable — a permission's `filter` and `check`, its `set`
presets, a remote schema permission's `@preset(value: …)` — a string of the *other*
spelling would be taken as a literal: a permission comparing user ids with the text
"X-Hasura-User-Id" matches nothing and says nothing. So it is refused where the metadata is
parsed, 400 `parse-failed` at the value's JSON path, with a hint naming the switch:

    "X-Hasura-User-Id" names a session variable in Hasura's spelling, which svc reads only
    with --hasura-compat (SVC_GRAPHQL_HASURA_COMPAT=true): change that setting, or write
    "x-svc-user-id"

Called from each entry point that parses such a value: `metadata_from_obj` (the whole
document: `replace_metadata`, metadata directories, `svc compile`, `svc metadata apply`),
`create_permission` (`pg_create_*_permission`, `create_*_permission`) and
`add_remote_schema_permissions`; `unique_params` of API limits name session variables only,
so `svc.metadata.limits` asks `other_spelling` for its hint. Values the reference reads as
literals in both spellings (action and event-trigger header values, `value_from_env`
names, payloads) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from graphql import GraphQLError, parse, value_from_ast_untyped
from graphql.language import DirectiveNode, InputValueDefinitionNode, Node
from msgspec import UNSET

from svc.errors import ErrorCode, SvcError
from svc.session_vars import Names, other_names, process_names

_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The parts of a permission body that hold session variables.
_RULE_PARTS = ("filter", "check", "set")
_PERMISSION_KINDS = ("select", "insert", "update", "delete")


def other_spelling(value: object, names: Names | None = None) -> str | None:
    """The refusal message when `value` is a string naming a session variable in the
    spelling a process with `names` (default: this process's) does not read; else None."""
    names = names or process_names()
    other = other_names(names)
    if not isinstance(value, str) or not other.is_session_variable(value):
        return None
    mine = names.prefix + value[len(other.prefix) :].lower()
    return (
        f'"{value}" names a session variable in {other.spelling} spelling, which svc reads '
        f'only {other.switch}: change that setting, or write "{mine}"'
    )


def check_value(value: Any, path: str, names: Names | None = None) -> None:
    """Refuse (400 `parse-failed` at the string's path under `path`) the first string of
    the JSON `value` naming a session variable in the other spelling (`other_spelling`)."""
    names = names or process_names()
    for where, text in _strings(value, path):
        message = other_spelling(text, names)
        if message is not None:
            raise SvcError(ErrorCode.PARSE_FAILED, message, path=where)


def check_rule(rule: Any, path: str, names: Names | None = None) -> None:
    """`check_value` over a permission body's `filter`, `check` and `set` (a typed rule of
    `svc.metadata.permission_model`, `path` its JSON path)."""
    for part in _RULE_PARTS:
        value = getattr(rule, part, UNSET)
        if value is not UNSET and value is not None:
            check_value(value, f"{path}.{part}", names)


def check_remote_sdl(sdl: Any, path: str, names: Names | None = None) -> None:
    """Refuse a remote schema permission's SDL (`path`: of its `definition.schema`) whose
    `@preset(value: …)` names a session variable in the other spelling. An SDL that does
    not parse is left to the permission's own checks."""
    if not isinstance(sdl, str):
        return
    try:
        doc = parse(sdl, no_location=True)
    except GraphQLError:
        return
    names = names or process_names()
    for node in _preset_directives(doc):
        value = next((a.value for a in node.arguments or () if a.name.value == "value"), None)
        if value is None:
            continue
        for _, text in _strings(value_from_ast_untyped(value), path):
            message = other_spelling(text, names)
            if message is not None:
                raise SvcError(ErrorCode.PARSE_FAILED, f"@preset: {message}", path=path)


def check_metadata(md: Any, path: str, tables_path: str, names: Names | None = None) -> None:
    """Refuse a whole document (`svc.metadata.model.Metadata`, read at `path`, its tables
    at `tables_path`) naming a session variable in the other spelling in a permission or
    a remote schema permission preset."""
    names = names or process_names()
    for i, table in enumerate(md.tables or ()):
        for kind in _PERMISSION_KINDS:
            for j, permission in enumerate(getattr(table, f"{kind}_permissions", None) or ()):
                where = f"{tables_path}[{i}].{kind}_permissions[{j}].permission"
                check_rule(permission.permission, where, names)
    for i, remote in enumerate(md.remote_schemas or ()):  # kept as JSON in the document
        for j, permission in enumerate(_field(remote, "permissions") or ()):
            definition = _field(permission, "definition")
            sdl = definition.get("schema") if isinstance(definition, dict) else None
            where = f"{path}.remote_schemas[{i}].permissions[{j}].definition.schema"
            check_remote_sdl(sdl, where, names)


def _field(value: Any, name: str) -> Any:
    """`value[name]` of a JSON object, `value.name` of a typed struct, else None."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """`(path, string)` of every string value inside the JSON `value` (keys are names, not
    values: not visited)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            step = f".{key}" if _SIMPLE_KEY.fullmatch(str(key)) else f"[{str(key)!r}]"
            yield from _strings(item, path + step)
    elif isinstance(value, list | tuple):
        for k, item in enumerate(value):
            yield from _strings(item, f"{path}[{k}]")


def _preset_directives(node: Node) -> Iterator[DirectiveNode]:
    """Every `@preset` directive on an argument or input field definition under `node`."""
    if isinstance(node, InputValueDefinitionNode):
        yield from (d for d in node.directives or () if d.name.value == "preset")
    for key in node.keys:
        child = getattr(node, key, None)
        children = child if isinstance(child, tuple | list) else (child,)
        for item in children:
            if isinstance(item, Node):
                yield from _preset_directives(item)
