"""How action and custom-types inconsistencies show their object (the reference's
`get_inconsistent_metadata` and error `internal` shapes: every key present, defaults
filled in) and where `svc compile` points at it in a metadata directory."""

from __future__ import annotations

from typing import Any

from svc.ir.model import Inconsistency
from svc.metadata.action_model import Action, CustomTypes, ObjectType
from svc.metadata.model import Metadata, plain, qualify


def action_definition(action: Action) -> dict[str, Any]:
    """The action as the reference shows it in an inconsistency (defaults filled in)."""
    d = action.definition
    out: dict[str, Any] = {
        "kind": d.kind or "synchronous",
        "output_type": d.output_type or None,
        "arguments": [
            {"name": a.name, "type": a.type, "description": a.description or None} for a in d.args
        ],
        "headers": plain(d.headers or ()),
        "handler": d.handler,
        "type": d.operation,
        "timeout": int(d.timeout_s),
        "forward_client_headers": bool(d.forward_client_headers),
    }
    return {"definition": out, "name": action.name, "comment": action.comment or None}


def custom_types_definition(types: CustomTypes) -> dict[str, Any]:
    """The custom types as the reference shows them in an inconsistency (every key
    present, `description`/`arguments` null, relationship tables qualified)."""

    def fields(items: Any, with_args: bool) -> list[dict[str, Any]]:
        out = []
        for f in items:
            entry = {"name": f.name, "type": f.type, "description": f.description or None}
            if with_args:
                entry["arguments"] = None
            out.append(entry)
        return out

    def rels(obj: ObjectType) -> list[dict[str, Any]]:
        out = []
        for r in obj.relationships or ():
            q = qualify(r.remote_table)
            out.append(
                {
                    "remote_table": {"schema": q.schema, "name": q.name},
                    "name": r.name,
                    "source": r.source or "default",
                    "type": r.type,
                    "field_mapping": dict(r.field_mapping),
                }
            )
        return out

    return {
        "input_objects": [
            {
                "name": i.name,
                "description": i.description or None,
                "fields": fields(i.fields, False),
            }
            for i in types.input_objects or ()
        ],
        "objects": [
            {
                "name": o.name,
                "relationships": rels(o),
                "description": o.description or None,
                "fields": fields(o.fields, True),
            }
            for o in types.objects or ()
        ],
        "scalars": plain(types.scalars or ()),
        "enums": plain(types.enums or ()),
    }


def locate_action(md: Metadata, issue: Inconsistency) -> tuple[str, str] | None:
    """`(file, JSON path)` in the metadata directory of an action or custom-types
    inconsistency (`svc compile`); None for other inconsistencies."""
    if issue.type == "custom_types":
        return "actions.yaml", "$.custom_types"
    if issue.type != "action":
        return None
    name = issue.name.removeprefix("action ")
    i = next((i for i, a in enumerate(md.actions) if a.name == name), None)
    return "actions.yaml", "$.actions" if i is None else f"$.actions[{i}]"
