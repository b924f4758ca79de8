"""The metadata directory (config v2, spec 2.1): `Metadata` ⇄ `{file name: YAML text}`.

Pure: no file system access (the CLI reads and writes the files). Writing is canonical, so
the same document always gives the same bytes and two documents that differ only in the
order of their entries or keys give the same files:

- entries of a list are sorted by their identity (tables and functions by `(schema, name)`,
  relationships, computed fields, triggers, collections, … by `name`, permissions by
  `role`, allow-list entries by `collection`); lists whose order is meaningful (the queries
  of a collection, headers, fields and arguments of custom types) keep it;
- the keys of an object come in the order `KEY_ORDER` gives for the key the object sits
  under (Hasura's export order where the spec or the reference shows one), then any other
  keys alphabetically; user expressions (`filter`, `check`, `set`, `column_mapping`,
  `payload`, …) are written as they are;
- table and function names are always `{name, schema}`;
- YAML is block style, sequences indented under their key, multi-line strings as literal
  blocks, no anchors, UTF-8, one trailing newline.

Actions and custom types are split between `actions.graphql` (their GraphQL: types,
arguments, fields, descriptions) and `actions.yaml` (handlers, headers, permissions,
relationships): `svc.metadata.actions_sdl`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import yaml

from svc.errors import SvcError
from svc.metadata.actions_sdl import SdlError, join_actions, split_actions
from svc.metadata.model import Metadata, metadata_from_obj, metadata_to_obj
from svc.metadata.unsupported import KEPT_FILES

VERSION = 2

# Every file of the directory, in the order they are written and compared.
FILES: tuple[str, ...] = (
    "version.yaml",
    "tables.yaml",
    "functions.yaml",
    "actions.yaml",
    "actions.graphql",
    "allow_list.yaml",
    "cron_triggers.yaml",
    "query_collections.yaml",
    "remote_schemas.yaml",
    "rest_endpoints.yaml",
    "api_limits.yaml",
    "graphql_schema_introspection.yaml",
)
# `FILES` and the files of the sections svc keeps but does not apply
# (`svc.metadata.unsupported.KEPT`), written only when the document has them.
ALL_FILES: tuple[str, ...] = (*FILES, *KEPT_FILES.values())

# File holding each list of the metadata document (the key in `export_metadata`).
LIST_FILES: dict[str, str] = {
    "tables": "tables.yaml",
    "functions": "functions.yaml",
    "allowlist": "allow_list.yaml",
    "cron_triggers": "cron_triggers.yaml",
    "query_collections": "query_collections.yaml",
    "remote_schemas": "remote_schemas.yaml",
    "rest_endpoints": "rest_endpoints.yaml",
}
# Files holding one object of the document, whole (JSON paths inside start at `$`).
OBJECT_FILES: dict[str, str] = {
    "api_limits": "api_limits.yaml",
    "graphql_schema_introspection": "graphql_schema_introspection.yaml",
}
FILE_OF_KEY: dict[str, str] = {
    **LIST_FILES,
    **OBJECT_FILES,
    **KEPT_FILES,
    "version": "version.yaml",
    "actions": "actions.yaml",
    "custom_types": "actions.yaml",
}
CUSTOM_TYPE_KINDS = ("enums", "input_objects", "objects", "scalars")

_PERMISSION_KINDS = ("insert", "select", "update", "delete")

# Key order of an object, by the key it sits under (list elements: the list's key).
# One list serves every object found under that key; the objects never share keys in a
# conflicting order (e.g. `definition` of computed fields, triggers, remote schemas).
KEY_ORDER: dict[str, tuple[str, ...]] = {
    "tables": (
        "table",
        "is_enum",
        "configuration",
        "object_relationships",
        "array_relationships",
        "computed_fields",
        "remote_relationships",
        "insert_permissions",
        "select_permissions",
        "update_permissions",
        "delete_permissions",
        "event_triggers",
    ),
    "table": ("name", "schema"),
    "function": ("name", "schema"),
    "remote_table": ("name", "schema"),
    "object_relationships": ("name", "using", "comment"),
    "array_relationships": ("name", "using", "comment"),
    "using": ("foreign_key_constraint_on", "manual_configuration"),
    "foreign_key_constraint_on": ("column", "columns", "table"),
    "manual_configuration": ("remote_table", "column_mapping", "insertion_order"),
    "configuration": (
        "custom_name",
        "custom_root_fields",
        "custom_column_names",
        "column_config",
        "comment",
        "session_argument",
        "exposed_as",
    ),
    "custom_root_fields": (
        "select",
        "select_by_pk",
        "select_aggregate",
        "select_stream",
        "insert",
        "insert_one",
        "update",
        "update_by_pk",
        "update_many",
        "delete",
        "delete_by_pk",
        "function",
        "function_aggregate",
    ),
    **{f"{kind}_permissions": ("role", "permission", "comment") for kind in _PERMISSION_KINDS},
    "permission": (
        "columns",
        "computed_fields",
        "filter",
        "check",
        "set",
        "limit",
        "allow_aggregations",
        "query_root_fields",
        "subscription_root_fields",
        "backend_only",
    ),
    "computed_fields": ("name", "definition", "comment"),
    "remote_relationships": ("name", "definition"),
    "definition": (
        # computed fields
        "function",
        "table_argument",
        "session_argument",
        # remote schemas
        "url",
        "url_from_env",
        "timeout_seconds",
        "forward_client_headers",
        "customization",
        # event triggers
        "enable_manual",
        "insert",
        "update",
        "delete",
        # query collections
        "queries",
        # actions
        "kind",
        "type",
        "handler",
        "arguments",
        "output_type",
        "headers",
    ),
    "event_triggers": (
        "name",
        "definition",
        "retry_conf",
        "webhook",
        "webhook_from_env",
        "headers",
    ),
    "insert": ("columns", "payload"),
    "update": ("columns", "payload"),
    "delete": ("columns", "payload"),
    "retry_conf": (
        "num_retries",
        "interval_sec",
        "timeout_sec",
        "retry_interval_seconds",
        "timeout_seconds",
        "tolerance_seconds",
    ),
    "headers": ("name", "value", "value_from_env"),
    "functions": ("function", "configuration", "permissions", "comment"),
    "permissions": ("role", "definition", "comment"),
    "remote_schemas": ("name", "definition", "comment", "permissions"),
    "query_collections": ("name", "definition", "comment"),
    "queries": ("name", "query"),
    "allowlist": ("collection", "scope"),
    "scope": ("global", "roles"),
    "cron_triggers": (
        "name",
        "webhook",
        "schedule",
        "include_in_metadata",
        "payload",
        "retry_conf",
        "headers",
        "comment",
    ),
    "rest_endpoints": ("name", "url", "methods", "definition", "comment"),
    "query": ("collection_name", "query_name"),
    "actions": ("name", "definition", "permissions", "comment"),
    "custom_types": CUSTOM_TYPE_KINDS,
    **{
        kind: ("name", "description", "fields", "values", "relationships")
        for kind in CUSTOM_TYPE_KINDS
    },
    "fields": ("name", "type", "description", "arguments"),
    "arguments": ("name", "type", "description"),
    "values": ("value", "description", "is_deprecated"),
    "relationships": ("name", "type", "remote_table", "field_mapping"),
    "api_limits": (
        "disabled",
        "depth_limit",
        "node_limit",
        "batch_limit",
        "time_limit",
        "rate_limit",
    ),
}

# Values written exactly as stored: user expressions and data, not metadata structure.
OPAQUE = frozenset({"filter", "check", "set", "column_mapping", "field_mapping", "payload"})


def _qualified_key(value: Any) -> tuple[str, str]:
    """Sort key of a table or function name (`"t"`, `{schema, name}`); never raises."""
    if isinstance(value, dict):
        return (str(value.get("schema", "public")), str(value.get("name", "")))
    return ("public", str(value))


def _field(name: str) -> Callable[[Any], Any]:
    return lambda item: str(item.get(name, "")) if isinstance(item, dict) else ""


# How the entries of a list are sorted, by the list's key; lists not named here keep order.
SORT_KEYS: dict[str, Callable[[Any], Any]] = {
    "tables": lambda e: _qualified_key(e.get("table")) if isinstance(e, dict) else ("", ""),
    "functions": lambda e: _qualified_key(e.get("function")) if isinstance(e, dict) else ("", ""),
    **{
        key: _field("name")
        for key in (
            "object_relationships",
            "array_relationships",
            "computed_fields",
            "remote_relationships",
            "event_triggers",
            "remote_schemas",
            "query_collections",
            "cron_triggers",
            "rest_endpoints",
            "actions",
            *CUSTOM_TYPE_KINDS,
        )
    },
    **{f"{kind}_permissions": _field("role") for kind in _PERMISSION_KINDS},
    "permissions": _field("role"),
    "allowlist": _field("collection"),
}


class DirectoryError(SvcError):
    """A file of the directory cannot be read as metadata: `file: path: message`.

    `path` is a JSON path inside the file (`$[3].object_relationships[0].name`); the code is
    `parse-failed`.
    """

    def __init__(self, file: str, message: str, path: str = "$") -> None:
        super().__init__("parse-failed", message, path=path)
        self.file = file

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.message}"


# -- YAML ---------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block style with sequences indented under their key; no anchors."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Multi-line text (GraphQL queries, SQL) as a literal block; the emitter falls back to a
    # quoted scalar by itself when a literal block cannot hold the text exactly.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _JsonLoader(_Loader):  # type: ignore[misc]
    """YAML 1.1 safe loading minus timestamps: dates stay strings, as in JSON."""


_JsonLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def dump_yaml(value: Any, dumper: type[yaml.SafeDumper] = _Dumper) -> str:
    """Canonical YAML text of a JSON-like value (keys in the order given, see module doc);
    `dumper`: `_Dumper` or a subclass (`svc.metadata.directory_v3`)."""
    text: str = yaml.dump(
        value,
        Dumper=dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        indent=2,
        width=1_000_000,
    )
    return text


def load_yaml(file: str, text: str, loader: type[Any] | None = None) -> Any:
    """Parse one file; raises `DirectoryError` with the line and column of a syntax error.
    `loader`: `_JsonLoader` (a safe loader, timestamps off) or a subclass."""
    try:
        return yaml.load(text, Loader=loader or _JsonLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DirectoryError(file, f"invalid YAML: {where}{problem}") from None


# -- canonical form -----------------------------------------------------------------------


def canonical(
    value: Any,
    key: str = "",
    orders: Mapping[str, tuple[str, ...]] = KEY_ORDER,
    sort_keys: Mapping[str, Callable[[Any], Any]] = SORT_KEYS,
) -> Any:
    """`value` (found under `key`) with list entries sorted and object keys ordered
    (`orders`, `sort_keys`: `KEY_ORDER` and `SORT_KEYS`, or a superset of them)."""
    if key in OPAQUE:
        return value
    if isinstance(value, dict):
        order = orders.get(key, ())
        rank = {k: i for i, k in enumerate(order)}
        keys = sorted(value, key=lambda k: (rank.get(k, len(order)), str(k)))
        return {k: canonical(value[k], k, orders, sort_keys) for k in keys}
    if isinstance(value, list):
        items = [canonical(v, key, orders, sort_keys) for v in value]
        sort_key = sort_keys.get(key)
        return sorted(items, key=sort_key) if sort_key is not None else items
    return value


def _qualified(value: Any) -> Any:
    """`{name, schema}` for a table or function name given as a string or an object."""
    if isinstance(value, str):
        return {"name": value, "schema": "public"}
    if isinstance(value, dict) and "name" in value:
        return {**value, "schema": value.get("schema", "public")}
    return value


def _qualify_names(obj: dict[str, Any]) -> None:
    """Spell out every table and function name of an exported document (in place)."""
    for entry in obj.get("tables") or []:
        if not isinstance(entry, dict):
            continue
        entry["table"] = _qualified(entry.get("table"))
        for rel in [*entry.get("object_relationships", []), *entry.get("array_relationships", [])]:
            using = rel.get("using") if isinstance(rel, dict) else None
            if not isinstance(using, dict):
                continue
            fk = using.get("foreign_key_constraint_on")
            if isinstance(fk, dict) and "table" in fk:
                using["foreign_key_constraint_on"] = {**fk, "table": _qualified(fk["table"])}
            manual = using.get("manual_configuration")
            if isinstance(manual, dict) and "remote_table" in manual:
                manual = {**manual, "remote_table": _qualified(manual["remote_table"])}
                using["manual_configuration"] = manual
        for cf in entry.get("computed_fields", []):
            definition = cf.get("definition") if isinstance(cf, dict) else None
            if isinstance(definition, dict) and "function" in definition:
                cf["definition"] = {**definition, "function": _qualified(definition["function"])}
    for fn in obj.get("functions") or []:
        if isinstance(fn, dict) and "function" in fn:
            fn["function"] = _qualified(fn["function"])


# -- Metadata → files ---------------------------------------------------------------------


def metadata_to_files(md: Metadata) -> dict[str, str]:
    """The directory of `md`: `{file name: text}` for every name in `FILES`, in that order,
    then the files of the kept sections `md` has (`ALL_FILES`).

    Deterministic (see the module doc): `metadata_to_files(metadata_from_files(f))` is `f`
    for any `f` this function wrote. A config v2 directory has no place for the sources of
    a version 3 document (`Metadata.default_source`, `.other_sources`): they are not
    written (`svc metadata export` refuses a v2 export of other sources).
    """
    obj = metadata_to_obj(msgspec.structs.replace(md, default_source=None, other_sources=()))
    _qualify_names(obj)
    files = {"version.yaml": dump_yaml({"version": VERSION})}
    for key, file in LIST_FILES.items():
        files[file] = dump_yaml(canonical(obj.get(key) or [], key))
    actions, files["actions.graphql"] = split_actions(obj)  # SDL + YAML
    files["actions.yaml"] = dump_yaml(canonical(actions, "actions.yaml"))
    files["api_limits.yaml"] = dump_yaml(canonical(obj.get("api_limits") or {}, "api_limits"))
    introspection = obj.get("graphql_schema_introspection") or {"disabled_for_roles": []}
    files["graphql_schema_introspection.yaml"] = dump_yaml(introspection)
    for key, file in KEPT_FILES.items():
        if obj.get(key):
            files[file] = dump_yaml(obj[key])
    return {name: files[name] for name in ALL_FILES if name in files}


# -- files → Metadata ---------------------------------------------------------------------


def _list_file(files: Mapping[str, str], file: str) -> list[Any]:
    text = files.get(file)
    value = load_yaml(file, text) if text is not None else None
    if value is None:
        return []
    if not isinstance(value, list):
        raise DirectoryError(file, f"expected a list, got {_kind(value)}")
    return value


def _mapping_file(files: Mapping[str, str], file: str) -> dict[str, Any]:
    text = files.get(file)
    value = load_yaml(file, text) if text is not None else None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DirectoryError(file, f"expected an object, got {_kind(value)}")
    return value


def check_entry_name(file: str, entry: Any, key: str, path: str) -> None:
    """A table or function entry (at `path` of `file`) is an object whose `key` is a name
    or `{schema, name}`; raises `DirectoryError` naming the file and path otherwise."""
    if not isinstance(entry, dict):
        raise DirectoryError(file, f"expected an object, got {_kind(entry)}", path)
    name = entry.get(key)
    if name is None:
        raise DirectoryError(file, f'key "{key}" not found', path)
    ok = isinstance(name, str) or (
        isinstance(name, dict)
        and isinstance(name.get("name"), str)
        and isinstance(name.get("schema", ""), str)
    )
    if not ok:
        raise DirectoryError(file, f"expecting a {key} name or {{schema, name}}", f"{path}.{key}")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a scalar"


def _check_names(tables: list[Any], functions: list[Any]) -> None:
    """Entries must be objects naming their table or function (before msgspec, whose
    errors would not say which entry)."""
    for file, entries, key in (
        ("tables.yaml", tables, "table"),
        ("functions.yaml", functions, "function"),
    ):
        for i, entry in enumerate(entries):
            check_entry_name(file, entry, key, f"$[{i}]")


_LIST_PATH = re.compile(r"^\$\.([a-z_]+)(.*)$")


def _relocate(exc: SvcError) -> DirectoryError:
    """An error at `$.tables[3]…` of the whole document → `tables.yaml: $[3]…`."""
    m = _LIST_PATH.match(exc.path)
    if m is None or m.group(1) not in FILE_OF_KEY:
        return DirectoryError("tables.yaml", exc.message, exc.path)
    key, rest = m.group(1), m.group(2)
    if key in LIST_FILES:
        return DirectoryError(LIST_FILES[key], exc.message, "$" + rest)
    if key in OBJECT_FILES or key in KEPT_FILES:
        return DirectoryError(FILE_OF_KEY[key], exc.message, "$" + rest)
    return DirectoryError(FILE_OF_KEY[key], exc.message, f"$.{key}{rest}")


def metadata_from_files(files: Mapping[str, str]) -> Metadata:
    """Read a directory given as `{file name: text}`; missing files mean empty.

    Raises `DirectoryError` (`file: path: message`) for the first file that is not valid
    YAML, has the wrong shape, or does not convert to `Metadata` (msgspec's message). Other
    file names are ignored. The order of every list is kept, so `$[i]` of `tables.yaml` is
    `Metadata.tables[i]`.
    """
    version = _mapping_file(files, "version.yaml").get("version", VERSION)
    if version != VERSION:
        raise DirectoryError(
            "version.yaml", f"unsupported metadata directory version {version!r}", "$.version"
        )
    lists = {key: _list_file(files, file) for key, file in LIST_FILES.items()}
    actions = _mapping_file(files, "actions.yaml")
    if not isinstance(actions.get("actions", []), list | None):
        raise DirectoryError("actions.yaml", "expected a list", "$.actions")
    if not isinstance(actions.get("custom_types", {}), dict | None):
        raise DirectoryError("actions.yaml", "expected an object", "$.custom_types")
    try:
        action_list, custom_types = join_actions(actions, files.get("actions.graphql", ""))
    except SdlError as exc:
        raise DirectoryError(exc.file, exc.message, exc.path) from None
    _check_names(lists["tables"], lists["functions"])
    obj = {"version": VERSION, **lists, "actions": action_list}
    if custom_types:
        obj["custom_types"] = custom_types
    for key, file in OBJECT_FILES.items():  # API limits, introspection options
        value = _mapping_file(files, file)
        if value:
            obj[key] = value
    for key, file in KEPT_FILES.items():  # kept as given, reported as not applied
        text = files.get(file)
        section = load_yaml(file, text) if text is not None else None
        if section:
            obj[key] = section
    try:
        return metadata_from_obj(obj, path="$")
    except SvcError as exc:
        raise _relocate(exc) from None
