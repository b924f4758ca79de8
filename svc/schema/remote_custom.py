"""Customization of a remote schema's names (Hasura's `customization`:
`root_fields_namespace`, `type_names {prefix, suffix, mapping}`, `field_names [{parent_type,
prefix, suffix, mapping}]`).

`Customization.of(entry)` reads it; `customize(data)` renames the introspection before the
schema is built (`svc.schema.remote_merge`), and execution maps names back
(`svc.api.remote_translate`). Built-in scalars and introspection types keep their names,
as in the reference; `__typename` is a type name, not a field, so field rules skip it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from svc.metadata.remote_schemas import RemoteSchema

BUILTIN = frozenset({"String", "Int", "Float", "Boolean", "ID"})


@dataclass(frozen=True)
class FieldRule:
    """How the fields of one type are renamed."""

    prefix: str = ""
    suffix: str = ""
    mapping: dict[str, str] = field(default_factory=dict)

    def apply(self, name: str) -> str:
        """The customized name of field `name`."""
        return self.mapping.get(name) or f"{self.prefix}{name}{self.suffix}"


@dataclass(frozen=True)
class Customization:
    """A remote's name customization; `namespace` None when its root fields stay at the
    root. Type rules take original names; field rules are keyed by original type."""

    namespace: str | None = None
    type_rule: FieldRule = field(default_factory=FieldRule)
    field_rules: dict[str, FieldRule] = field(default_factory=dict)

    @classmethod
    def of(cls, entry: RemoteSchema) -> Customization | None:
        """`entry`'s customization, None when it has none."""
        raw = entry.definition.customization
        if not isinstance(raw, dict) or not raw:
            return None
        types = raw.get("type_names") or {}
        rules = {
            str(r["parent_type"]): FieldRule(
                r.get("prefix") or "", r.get("suffix") or "", dict(r.get("mapping") or {})
            )
            for r in raw.get("field_names") or ()
            if isinstance(r, dict) and "parent_type" in r
        }
        return cls(
            raw.get("root_fields_namespace"),
            FieldRule(
                types.get("prefix") or "",
                types.get("suffix") or "",
                dict(types.get("mapping") or {}),
            ),
            rules,
        )

    def type_name(self, name: str) -> str:
        """The customized name of original type `name`."""
        if name in BUILTIN or name.startswith("__"):
            return name
        return self.type_rule.apply(name)

    def field_name(self, parent: str, name: str) -> str:
        """The customized name of field `name` of original type `parent`."""
        rule = self.field_rules.get(parent)
        return name if rule is None or name.startswith("__") else rule.apply(name)

    def original_types(self, names: list[str]) -> dict[str, str]:
        """Customized → original, for the original type `names`."""
        return {self.type_name(n): n for n in names}

    def field_path(self, spec: Any, data: dict[str, Any]) -> Any:
        """A remote relationship's `remote_field` (`{name: {arguments, field: {…}}}`, in the
        remote's own names, as the reference reads it: `lookupNestedFieldType` over the
        role's original introspection) with each field name customized, walking the
        original introspection `data` from its query type. A level the remote lacks keeps
        its name, and so do the levels below it (the merge reports it unresolved)."""
        schema = data.get("__schema") or {}
        types = {t.get("name"): t for t in schema.get("types") or () if isinstance(t, dict)}
        parent: str | None = (schema.get("queryType") or {}).get("name")
        return self._path(spec, parent, types)

    def _path(self, spec: Any, parent: str | None, types: dict[Any, Any]) -> Any:
        if not isinstance(spec, dict) or not spec:
            return spec
        name, inner = next(iter(spec.items()))
        fields = (types.get(parent) or {}).get("fields") or ()
        found = next((f for f in fields if isinstance(f, dict) and f.get("name") == name), None)
        if found is None or parent is None:
            return spec
        inner = dict(inner) if isinstance(inner, dict) else {}
        if "field" in inner:
            inner["field"] = self._path(inner["field"], _base_name(found.get("type")), types)
        return {self.field_name(parent, name): inner}

    def customize(self, data: dict[str, Any]) -> dict[str, Any]:
        """A renamed copy of an introspection answer (`{"__schema": …}`)."""
        out = copy.deepcopy(data)
        schema = out["__schema"]
        for t in schema.get("types") or ():
            parent = t.get("name")
            for f in t.get("fields") or ():
                f["name"] = self.field_name(parent, f["name"])
        self._rename_types(schema)
        return out

    def _rename_types(self, value: Any) -> None:
        if isinstance(value, dict):
            if "kind" in value and isinstance(value.get("name"), str):
                value["name"] = self.type_name(value["name"])
            for key in ("queryType", "mutationType", "subscriptionType"):
                root = value.get(key)
                if (
                    isinstance(root, dict)
                    and "kind" not in root
                    and isinstance(root.get("name"), str)
                ):
                    root["name"] = self.type_name(root["name"])
            for child in value.values():
                self._rename_types(child)
        elif isinstance(value, list):
            for child in value:
                self._rename_types(child)


def _base_name(t: Any) -> str | None:
    """The named type inside an introspection type reference (`ofType` unwrapped)."""
    while isinstance(t, dict) and t.get("ofType") is not None:
        t = t["ofType"]
    return t.get("name") if isinstance(t, dict) else None
