"""Names of tables and functions in the metadata document (`{schema, name}`), and `JSON`.

Kept apart from `svc.metadata.model` so that the typed parts of the document (functions,
computed fields: `svc.metadata.function_model`) can name functions without importing the
whole document model.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError

JSON = dict[str, Any]


class QualifiedName(msgspec.Struct, frozen=True, order=True):
    """`{schema, name}` of a table, view or function; `schema` defaults to `public` and is
    always exported (as the reference does; msgspec's `omit_defaults` would compare the
    default by identity and export it only sometimes)."""

    name: str
    schema: str = "public"

    def __str__(self) -> str:
        return self.name if self.schema == "public" else f"{self.schema}.{self.name}"

    def quoted(self) -> str:
        """`"author"` or `"s"."author"`: the form the reference's messages use."""
        return f'"{self.name}"' if self.schema == "public" else f'"{self.schema}"."{self.name}"'


class SourcedName(QualifiedName, frozen=True, order=True):
    """The name of a table or function of a source other than `default`, as the IR keys it:
    never equal to the `QualifiedName` of the same `{schema, name}` in another source, so
    one IR holds every source's tables (`svc.ir.source_tables`). SQL and messages read
    `schema` and `name` only; metadata documents never hold one (a source's tables are
    listed under it)."""

    source: str = "default"


def in_source(name: QualifiedName, source: str) -> QualifiedName:
    """`name` as the IR keys it in `source`: itself in `default`, else a `SourcedName`."""
    if source == "default":
        return QualifiedName(name.name, name.schema) if type(name) is not QualifiedName else name
    return SourcedName(name.name, name.schema, source)


TableName = QualifiedName | str


def qualify(value: Any, path: str = "$") -> QualifiedName:
    """Normalise a TableName (`"author"`, `"s.author"` is a name, or `{schema, name}`).

    Raises `SvcError` `parse-failed` when the value is neither a string nor an object with a
    string `name`.
    """
    if isinstance(value, QualifiedName):
        return value
    if isinstance(value, str):
        return QualifiedName(name=value)
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        schema = value.get("schema", "public")
        if not isinstance(schema, str):
            raise SvcError(
                ErrorCode.PARSE_FAILED, "expected a string for schema", path=path + ".schema"
            )
        return QualifiedName(name=value["name"], schema=schema)
    raise SvcError(ErrorCode.PARSE_FAILED, "expecting a table name or {schema, name}", path=path)


_encoder = msgspec.json.Encoder()


def plain(value: Any) -> Any:
    """`value` (structs, tuples, …) as plain JSON values: dicts, lists, strings, numbers,
    booleans and None, as a client reads it back (`msgspec.to_builtins` keeps tuples)."""
    return msgspec.json.decode(_encoder.encode(value))
