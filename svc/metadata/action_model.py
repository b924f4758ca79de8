"""Actions and custom types as the metadata document stores them (spec 2.2, 2.3;
Hasura v2 export: `actions: [{name, definition, permissions?, comment?}]`,
`custom_types: {input_objects, objects, scalars, enums}`).

Frozen msgspec structs; optional keys default to `UNSET`, so a document exports exactly
the keys it was given, and keys the reference does not know are ignored. GraphQL types
(`output_type`, argument and field `type`) stay their text (`"[UserId!]!"`), parsed where
they are resolved (`svc.ir.actions`). `request_transform`/`response_transform` are kept
as JSON (svc does not apply them yet: README "Not yet").
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from svc.metadata.qualified import JSON
from svc.outbound.headers import HeaderConf

DEFAULT_TIMEOUT_S = 30  # spec 2.2: `timeout` default


class InputArgument(msgspec.Struct, frozen=True, omit_defaults=True):
    """An action argument `{name, type, description?}` (`type`: GraphQL type text)."""

    name: str
    type: str
    description: str | UnsetType | None = UNSET


KINDS = ("synchronous", "asynchronous")  # a mutation action's `kind`


class ActionDefinition(msgspec.Struct, frozen=True, omit_defaults=True):
    """`definition` of an action (spec 2.2). `type`: `query` or `mutation` (absent:
    mutation); `kind`: `synchronous` or `asynchronous` (absent: synchronous), read for a
    mutation only: a query action's `kind`, whatever its value (`""` in real projects), is
    ignored and not exported, as the reference's parser does (`ActionDefinition`'s
    `FromJSON`: `"query" -> pure ActionQuery`); `timeout` in seconds (absent: 30)."""

    handler: str
    # Required by `create_action`/`update_action`; a document stored before actions were
    # typed may lack it (the action is then inconsistent, `svc.ir.actions`).
    output_type: str | UnsetType = UNSET
    arguments: tuple[InputArgument, ...] | UnsetType | None = UNSET
    type: Literal["query", "mutation"] | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    headers: tuple[HeaderConf, ...] | UnsetType | None = UNSET
    forward_client_headers: bool | UnsetType = UNSET
    timeout: int | UnsetType | None = UNSET
    request_transform: JSON | UnsetType | None = UNSET
    response_transform: JSON | UnsetType | None = UNSET

    def __post_init__(self) -> None:
        """Drop a query action's `kind`; refuse a mutation's that is neither kind (msgspec
        reports the ValueError at `…definition` as a validation error)."""
        if self.type == "query":
            if self.kind is not UNSET:
                msgspec.structs.force_setattr(self, "kind", UNSET)
        elif self.kind is not UNSET and self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {self.kind!r}")

    @property
    def operation(self) -> str:
        """`query` or `mutation` (the root type the action's field is on)."""
        return "query" if self.type == "query" else "mutation"

    @property
    def asynchronous(self) -> bool:
        """True for an asynchronous action (a mutation answering the call's id)."""
        return self.kind == "asynchronous" and self.operation == "mutation"

    @property
    def args(self) -> tuple[InputArgument, ...]:
        """The arguments (empty when absent or null)."""
        return self.arguments or ()

    @property
    def timeout_s(self) -> float:
        """The handler's timeout in seconds."""
        return float(self.timeout) if isinstance(self.timeout, int) else DEFAULT_TIMEOUT_S


class ActionPermission(msgspec.Struct, frozen=True, omit_defaults=True):
    """`{role, comment?}`: the role sees the action (spec 4.3)."""

    role: str
    comment: str | UnsetType | None = UNSET
    definition: JSON | UnsetType | None = UNSET


class Action(msgspec.Struct, frozen=True, omit_defaults=True):
    """One action `{name, definition, permissions?, comment?}`."""

    name: str
    definition: ActionDefinition
    comment: str | UnsetType | None = UNSET
    permissions: tuple[ActionPermission, ...] | UnsetType = UNSET

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles with a permission on the action."""
        return tuple(p.role for p in self.permissions or ())


class TypeField(msgspec.Struct, frozen=True, omit_defaults=True):
    """A field of a custom object or input object `{name, type, description?}`."""

    name: str
    type: str
    description: str | UnsetType | None = UNSET
    arguments: Any = UNSET


class TypeRelationship(msgspec.Struct, frozen=True, omit_defaults=True):
    """`relationships[]` of a custom object type: from the object's fields to a table's
    columns (`field_mapping`), `type` `object` or `array` (spec 2.3)."""

    name: str
    type: Literal["object", "array"]
    remote_table: Any
    field_mapping: dict[str, str]
    source: str | UnsetType = UNSET


class ObjectType(msgspec.Struct, frozen=True, omit_defaults=True):
    """A custom output object type."""

    name: str
    fields: tuple[TypeField, ...]
    description: str | UnsetType | None = UNSET
    relationships: tuple[TypeRelationship, ...] | UnsetType | None = UNSET


class InputObjectType(msgspec.Struct, frozen=True, omit_defaults=True):
    """A custom input object type."""

    name: str
    fields: tuple[TypeField, ...]
    description: str | UnsetType | None = UNSET


class ScalarType(msgspec.Struct, frozen=True, omit_defaults=True):
    """A custom scalar (its values pass through as JSON)."""

    name: str
    description: str | UnsetType | None = UNSET


class EnumValue(msgspec.Struct, frozen=True, omit_defaults=True):
    """A value of a custom enum."""

    value: str
    description: str | UnsetType | None = UNSET
    is_deprecated: bool | UnsetType | None = UNSET


class EnumType(msgspec.Struct, frozen=True, omit_defaults=True):
    """A custom enum type."""

    name: str
    values: tuple[EnumValue, ...]
    description: str | UnsetType | None = UNSET


class CustomTypes(msgspec.Struct, frozen=True, omit_defaults=True):
    """`set_custom_types` arguments, as stored (spec 2.3); every list optional."""

    input_objects: tuple[InputObjectType, ...] | UnsetType | None = UNSET
    objects: tuple[ObjectType, ...] | UnsetType | None = UNSET
    scalars: tuple[ScalarType, ...] | UnsetType | None = UNSET
    enums: tuple[EnumType, ...] | UnsetType | None = UNSET

    def type_names(self) -> dict[str, str]:
        """Every custom type name → its kind (`input_object`, `object`, `scalar`, `enum`)."""
        out: dict[str, str] = {}
        for kind, items in (
            ("input_object", self.input_objects),
            ("object", self.objects),
            ("scalar", self.scalars),
            ("enum", self.enums),
        ):
            for item in items or ():
                out[item.name] = kind
        return out
