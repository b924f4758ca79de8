"""Older shapes of the metadata document that `replace_metadata` accepts (every
document the reference's `export_metadata` has produced).

- Version 1 (the reference's first export format, also a document without `version` but
  with `tables`): read as version 2; its `query_templates` (long removed) are ignored.
- A function entry as a plain name (`"search_articles"`), as `{schema, name}` (version 1),
  or as `{function: …}` with the function a plain name or `{schema, name}` (version 2):
  all become `{function: {schema, name}, …}` (schema `public` when not given).
- Table entries as a plain name or `{schema, name}` are qualified by `model._normalise_table`.
"""

from __future__ import annotations

from typing import Any

VERSIONS = (1, 2, 3)


def normalise_functions(entries: Any) -> Any:
    """The `functions` list with every entry in the version-2 shape (anything else is
    left for the model's parser to refuse at its path)."""
    if not isinstance(entries, list):
        return entries
    return [_function_entry(e) for e in entries]


def _function_entry(entry: Any) -> Any:
    if isinstance(entry, str):
        return {"function": {"schema": "public", "name": entry}}
    if isinstance(entry, dict) and "function" not in entry and isinstance(entry.get("name"), str):
        rest = {k: v for k, v in entry.items() if k not in ("name", "schema")}
        schema = entry.get("schema") if isinstance(entry.get("schema"), str) else "public"
        return {**rest, "function": {"schema": schema, "name": entry["name"]}}
    return entry


def upgrade(obj: dict[str, Any]) -> dict[str, Any]:
    """A version 1 or 2 document as svc reads it (version 2, functions normalised)."""
    out = {k: v for k, v in obj.items() if k != "query_templates"}
    if out.get("version") == 1:
        out["version"] = 2
    if "functions" in out:
        out["functions"] = normalise_functions(out["functions"])
    return out
