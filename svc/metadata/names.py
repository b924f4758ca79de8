"""The GraphQL name rule, and the checks of the names a metadata document gives the schema.

One rule for every layer (the schema builder imports it from here): a name is
`/^[_A-Za-z][_0-9A-Za-z]*$/` (GraphQL spec, section 2.1.9 "Names") and does not start with
`__`, which the spec reserves for introspection (graphql-core's schema validation refuses
such names; the reference's own check, `G.mkName`, tests only the pattern).

Where the reference reads a value as a GraphQL name while parsing the request (a table's
`custom_name`, its `custom_root_fields`, `custom_column_names` and `column_config.*.
custom_name`; a function's `custom_name` and `custom_root_fields`), a bad value is 400
`parse-failed` at the value's JSON path, message `<value> is not valid GraphQL name`
(graphql-parser-hs `parseName`), and duplicate custom root fields of one table are
`the following custom root field names are duplicated: <names>` at the object
(`TableCustomRootFields`'s parser). Relationship names are plain text there and refused
when the schema is built: 400 `validation-failed`, `cannot include "<name>" in the GraphQL
schema because  it is not a valid GraphQL identifier` (the reference's `textToName`, its
double space included). A computed field with a bad name is 400 `not-supported`,
`the computed field "<name>" cannot be added to table "<table>" because "<name>" is not
valid GraphQL name` (the reference's `buildComputedFieldInfo`).
"""

from __future__ import annotations

import re
from typing import TypeGuard

from msgspec import UNSET, UnsetType

from svc.errors import ErrorCode, SvcError
from svc.metadata.function_model import FunctionConfiguration
from svc.metadata.model import CustomRootFields, Metadata, QualifiedName, TableConfiguration

GRAPHQL_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*")
PLAIN_NAME = re.compile(r"(?!__)[_A-Za-z][_0-9A-Za-z]*")  # GRAPHQL_NAME, not `__…`


def is_graphql_name(name: object) -> TypeGuard[str]:
    """True when `name` is a string usable as a GraphQL name: the spec's pattern, and not
    starting with `__` (reserved for introspection)."""
    return isinstance(name, str) and PLAIN_NAME.fullmatch(name) is not None


def name_message(name: object) -> str:
    """`<name> is not valid GraphQL name` (the reference's parse error), with the reason
    when only the `__` prefix is wrong."""
    text = name if isinstance(name, str) else repr(name)
    if isinstance(name, str) and GRAPHQL_NAME.fullmatch(name):
        return f"{text} is not valid GraphQL name: names starting with __ are reserved"
    return f"{text} is not valid GraphQL name"


def check_name(name: object, path: str) -> None:
    """Raise 400 `parse-failed` `<name> is not valid GraphQL name` at `path` unless `name`
    is a GraphQL name (`is_graphql_name`)."""
    if not is_graphql_name(name):
        raise SvcError(ErrorCode.PARSE_FAILED, name_message(name), path=path)


def identifier_error(name: str, path: str = "$.args") -> SvcError:
    """400 `validation-failed`: `name` cannot be in the schema (the reference's
    `textToName`, raised while it builds the schema; its message has two spaces)."""
    return SvcError(
        ErrorCode.VALIDATION_FAILED,
        f'cannot include "{name}" in the GraphQL schema because '
        " it is not a valid GraphQL identifier",
        path=path,
    )


def check_relationship_name(name: str, path: str = "$.args") -> None:
    """Raise `identifier_error` unless the relationship name is a GraphQL name."""
    if not is_graphql_name(name):
        raise identifier_error(name, path)


def check_computed_field_name(name: object, table: QualifiedName, path: str = "$.args") -> None:
    """Raise 400 `not-supported` (the reference's message) unless the computed field's name
    is a GraphQL name."""
    if not is_graphql_name(name):
        raise SvcError(
            ErrorCode.NOT_SUPPORTED,
            f'the computed field "{name}" cannot be added to table {table.quoted()} '
            f'because "{name}" is not valid GraphQL name',
            path=path,
        )


_ROOT_FIELD_KEYS = tuple(CustomRootFields.__struct_fields__)


def check_custom_root_fields(fields: CustomRootFields, path: str) -> None:
    """Every set custom root field is a GraphQL name (`parse-failed` at
    `<path>.<field>`), and no two are equal (`parse-failed` at `path`)."""
    names: list[str] = []
    for key in _ROOT_FIELD_KEYS:
        value = getattr(fields, key)
        if value is None:
            continue
        check_name(value, f"{path}.{key}")
        names.append(value)
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "the following custom root field names are duplicated: " + _english(duplicated),
            path=path,
        )


def _english(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def check_custom_column_names(names: dict[str, str], path: str) -> None:
    """Every value of `custom_column_names` is a GraphQL name (`parse-failed` at
    `<path>.<column>`)."""
    for column, name in names.items():
        check_name(name, f"{path}.{column}")


def check_table_configuration(config: TableConfiguration | None, path: str) -> None:
    """The names of a table `configuration` (`custom_name`, `custom_root_fields`,
    `custom_column_names`, `column_config.*.custom_name`); raises 400 `parse-failed` at the
    first bad value's path under `path`."""
    if config is None:
        return
    if config.custom_name is not None:
        check_name(config.custom_name, f"{path}.custom_name")
    check_custom_root_fields(config.custom_root_fields, f"{path}.custom_root_fields")
    check_custom_column_names(config.custom_column_names, f"{path}.custom_column_names")
    for column, conf in config.column_config.items():
        if isinstance(conf, dict) and conf.get("custom_name") is not None:
            check_name(conf["custom_name"], f"{path}.column_config.{column}.custom_name")


def check_function_configuration(config: FunctionConfiguration | UnsetType, path: str) -> None:
    """The names of a function `configuration` (`custom_name`, `custom_root_fields.
    function` / `.function_aggregate`); raises 400 `parse-failed` at the bad value."""
    if config is UNSET:
        return
    if isinstance(config.custom_name, str):
        check_name(config.custom_name, f"{path}.custom_name")
    roots = config.custom_root_fields
    if roots is UNSET:
        return
    function, aggregate = roots.function, roots.function_aggregate
    for key, value in (("function", function), ("function_aggregate", aggregate)):
        if isinstance(value, str):
            check_name(value, f"{path}.custom_root_fields.{key}")
    if isinstance(function, str) and function == aggregate:
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            f'the following custom root field names are duplicated: "{function}" and "{aggregate}"',
            path=f"{path}.custom_root_fields",
        )


def check_metadata_names(
    md: Metadata, tables_path: str = "$.args.tables", functions_path: str = "$.args.functions"
) -> None:
    """Every name a whole document gives the schema (`replace_metadata`, a metadata
    directory): table configurations, relationship and computed field names, function
    configurations. Raises the first problem's error (see the module docstring) at its
    path: `<tables_path>[i].configuration.custom_name`, … (relationship errors at
    `<tables_path>[i].<kind>_relationships[j].name`)."""
    for i, entry in enumerate(md.tables):
        base = f"{tables_path}[{i}]"
        check_table_configuration(entry.configuration, f"{base}.configuration")
        for kind in ("object", "array"):
            for j, rel in enumerate(getattr(entry, f"{kind}_relationships")):
                check_relationship_name(rel.name, f"{base}.{kind}_relationships[{j}].name")
        for j, cf in enumerate(entry.computed_fields):
            check_computed_field_name(cf.name, entry.table, f"{base}.computed_fields[{j}]")
    for i, fn in enumerate(md.functions):
        check_function_configuration(fn.configuration, f"{functions_path}[{i}].configuration")
