"""Tracked functions and computed fields as the metadata document stores them (spec 2.5,
4.6; Hasura v2 export).

Frozen structs; optional keys default to `UNSET` so a document exports the keys it was
given, and keys the reference does not know are ignored (its parsers ignore them). A
function name is a string or `{schema, name}` (exported as given; an object always with
its `schema`, as the reference exports it).
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from svc.metadata.qualified import QualifiedName, qualify

FunctionName = QualifiedName | str


class ComputedFieldDefinition(msgspec.Struct, frozen=True, omit_defaults=True):
    """`definition` of a computed field: the function, which argument takes the row
    (absent: the first) and which takes the session as JSON (absent: none)."""

    function: FunctionName
    table_argument: str | UnsetType | None = UNSET
    session_argument: str | UnsetType | None = UNSET

    @property
    def function_name(self) -> QualifiedName:
        """The function as `{schema, name}`."""
        return qualify(self.function)


class ComputedField(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of a table's `computed_fields`: `{name, definition, comment?}`."""

    name: str
    definition: ComputedFieldDefinition
    comment: str | UnsetType | None = UNSET


class FunctionRootFields(msgspec.Struct, frozen=True, omit_defaults=True):
    """`custom_root_fields` of a tracked function."""

    function: str | UnsetType | None = UNSET
    function_aggregate: str | UnsetType | None = UNSET


class FunctionConfiguration(msgspec.Struct, frozen=True, omit_defaults=True):
    """`configuration` of a tracked function: GraphQL names, the session argument and
    whether it is a query or a mutation field (absent: by its volatility)."""

    custom_name: str | UnsetType | None = UNSET
    custom_root_fields: FunctionRootFields | UnsetType = UNSET
    session_argument: str | UnsetType | None = UNSET
    exposed_as: Literal["query", "mutation"] | UnsetType | None = UNSET


class FunctionPermission(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of a function's `permissions`: a role that may call it."""

    role: str
    comment: str | UnsetType | None = UNSET


class TrackedFunction(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of the document's `functions`: `{function, configuration?, permissions?,
    comment?}`; `permissions` is absent rather than empty (as svc stores it)."""

    function: FunctionName
    configuration: FunctionConfiguration | UnsetType = UNSET
    permissions: tuple[FunctionPermission, ...] | UnsetType = UNSET
    comment: str | UnsetType | None = UNSET

    @property
    def name(self) -> QualifiedName:
        """The function as `{schema, name}`."""
        return qualify(self.function)

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles given a function permission, in document order."""
        return () if self.permissions is UNSET else tuple(p.role for p in self.permissions)
