"""What svc does not apply of a metadata document, and how it says so: nothing is dropped
without a word (`metadata_from_obj` runs these checks on every document it reads:
`replace_metadata`, the metadata directory, `svc compile`).

`inherited_roles` is stored as given (its shape checked here, and a cycle refused with
the reference's 400 `cyclic-dependency`, `svc.metadata.inherited_roles`) and applied
(`svc.ir.inherited`).

Each key svc does not apply is handled one of two ways, chosen per key:

- **Kept and reported.** The whole top-level sections of features svc has not built yet
  are stored as given (so `export_metadata` gives them back) and each of their objects is
  an inconsistency (`svc.ir.unsupported_issues`): `get_inconsistent_metadata` lists it
  with its reason, `/healthz` warns, a `replace_metadata` without
  `allow_inconsistent_metadata` is refused with it (400 `not-supported`), one with the
  flag (what `hasura metadata apply` sends) applies the rest, as the reference does with
  objects it cannot build. `KEPT` lists them: `network` (its TLS allow-list: svc
  verifies every certificate), `backend_configs` (data connector agents: svc has no data
  connectors), `opentelemetry` when enabled (svc exports no traces), `metrics_config`
  when it turns an analysis on. The same goes for the keys of an object svc stores but
  does not act on (`OBJECT_KEYS_NOT_APPLIED`, none today: a permission's
  `validate_input` is called, `svc.api.input_validation`), which would make their
  object inconsistent: not served rather than served without what the key asks.
- **Refused** (400 `not-supported`, at the key's JSON path) where there is no place to
  keep the key or serving without it would answer a different API: a top-level key no
  version of the reference writes (a typo, or a newer feature); a v3 source's
  `customization` (other than the defaults svc serves: every root field and type name
  would differ), `query_tags`, `logical_models`, `native_queries`, `stored_procedures`,
  `health_check` and any other source key svc does not read; and any key of a typed
  object (tables and their configuration, relationships, permissions, computed fields,
  event triggers, functions, remote schemas, actions, custom types, cron triggers,
  collections, the allow-list, REST endpoints) that svc's model does not have: the
  reference's parsers would ignore an unknown key, but svc cannot tell a typo from a
  feature it lacks (an event trigger's `cleanup_config`, a table's
  `apollo_federation_config`, …), so it names it.

The walk over typed objects follows the msgspec model itself (`msgspec.inspect`), so a key
added to a struct is accepted everywhere at once; JSON-typed parts (filters, presets,
payloads, transforms) are the user's and are not walked.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import msgspec
import msgspec.inspect as mi

from svc.config import NAMING_CONVENTIONS
from svc.errors import ErrorCode, SvcError
from svc.metadata.inherited_roles import check_cycles

# Top-level sections kept as given and reported per object (`svc.ir.unsupported_issues`).
KEPT = ("inherited_roles", "network", "backend_configs", "opentelemetry", "metrics_config")

# The file of each kept section in a metadata directory (the reference's names).
KEPT_FILES = {key: f"{key}.yaml" for key in KEPT}

# Top-level keys `metadata_from_obj` reads (a v3 document's `sources` included).
READ = frozenset(
    {
        "version",
        "sources",
        "tables",
        "functions",
        "remote_schemas",
        "query_collections",
        "allowlist",
        "actions",
        "custom_types",
        "cron_triggers",
        "rest_endpoints",
        "api_limits",
        "graphql_schema_introspection",
        "query_templates",  # version 1's, long removed from the reference (`compat`)
    }
)

# Keys of a v3 source svc reads (`metadata_from_obj`); `customization` is read only to
# check that it asks for nothing but svc's defaults.
SOURCE_KEYS = frozenset({"name", "kind", "tables", "functions", "configuration"})


def _is_default(key: str, value: Any) -> bool:
    """Whether a `customization` key asks for what svc serves anyway: no root field
    namespace, prefix or suffix, no type name prefix or suffix (absent, null or empty,
    as exports write them), either naming convention (`svc.naming`)."""
    if key in ("root_fields", "type_names"):  # `svc.ir.source_tables`, `svc.schema.namespaces`
        served = ("prefix", "suffix", "namespace") if key == "root_fields" else ("prefix", "suffix")
        return value is None or (
            isinstance(value, dict)
            and all(v in (None, "") or k in served for k, v in value.items())
            and all(isinstance(v, str | None) for v in value.values())
        )
    if key == "naming_convention":
        # Served by `svc.naming` (with the experimental feature; without it the reference
        # accepts a convention and serves `hasura-default` names).
        return value is None or value in NAMING_CONVENTIONS
    return False


# Keys svc's model stores on an object but does not act on, with the reason each makes its
# object inconsistent (`svc.ir.unsupported_issues`).
OBJECT_KEYS_NOT_APPLIED: dict[str, str] = {}


def not_supported(message: str, path: str) -> SvcError:
    """The 400 `not-supported` of a key svc refuses."""
    return SvcError(ErrorCode.NOT_SUPPORTED, message, path=path)


def check_sections(obj: Any, path: str) -> None:
    """Refuse what a whole document holds that svc neither reads nor keeps: an unknown
    top-level key, a v3 source's key svc does not read or a customization svc does not
    serve; check the shape of the kept sections (`KEPT`). Runs on the document as given
    (before a v3 document is read from its `default` source), so paths are the user's."""
    if not isinstance(obj, dict):
        return
    for key in obj:
        if key not in READ and key not in KEPT:
            raise not_supported(
                f'svc does not know the metadata key "{key}" (the reference ignores keys it '
                "does not know; svc refuses them so that nothing is dropped silently)",
                f"{path}.{key}",
            )
    sources = obj.get("sources")
    if isinstance(sources, list):
        for k, source in enumerate(sources):
            if isinstance(source, dict):
                check_source(source, f"{path}.sources[{k}]")
    _check_kept(obj, path)


def check_source(source: dict[str, Any], path: str) -> None:
    """Refuse (400 `not-supported` at its path) a source key svc does not read and a
    `customization` svc does not serve (`_is_default`)."""
    for key, value in source.items():
        if key == "customization":
            _check_customization(value, f"{path}.customization")
        elif key not in SOURCE_KEYS:
            raise not_supported(f'svc does not support the source key "{key}" yet', f"{path}.{key}")


def _check_customization(value: Any, path: str) -> None:
    """A source customization is refused unless svc serves it: root field namespaces,
    prefixes and suffixes, type name prefixes and suffixes (`svc.ir.source_tables`), the
    naming conventions (`svc.naming`; another value is the reference's 400
    `parse-failed`)."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected an object", path=path)
    for key, given in value.items():
        if key == "naming_convention" and not _is_default(key, given):
            raise SvcError(
                ErrorCode.PARSE_FAILED,
                'naming_convention can either be "hasura-default" or "graphql-default"',
                path=f"{path}.{key}",
            )
        if not _is_default(key, given):
            raise not_supported(
                "svc does not support this source customization yet: "
                f'"{key}" would change the names of the API',
                f"{path}.{key}",
            )


def _check_kept(obj: dict[str, Any], path: str) -> None:
    """The kept sections must have the reference's shapes (400 `parse-failed` at the bad
    value), so that each object can be named when it is reported."""
    roles = obj.get("inherited_roles")
    if roles is not None:
        if not isinstance(roles, list):
            raise SvcError(
                ErrorCode.PARSE_FAILED, "expected an array", path=f"{path}.inherited_roles"
            )
        for i, role in enumerate(roles):
            where = f"{path}.inherited_roles[{i}]"
            if not isinstance(role, dict) or not isinstance(role.get("role_name"), str):
                raise SvcError(ErrorCode.PARSE_FAILED, 'key "role_name" not found', path=where)
            members = role.get("role_set")
            if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
                raise SvcError(
                    ErrorCode.PARSE_FAILED,
                    "expected an array of role names",
                    path=f"{where}.role_set",
                )
        check_cycles(roles)  # the reference refuses a cycle whatever else is asked
    for key in ("network", "backend_configs", "opentelemetry", "metrics_config"):
        value = obj.get(key)
        if value is not None and not isinstance(value, dict):
            raise SvcError(ErrorCode.PARSE_FAILED, "expected an object", path=f"{path}.{key}")


def check_keys(obj: Any, model: Any, path: str, tables_path: str) -> None:
    """Refuse (400 `not-supported` at its path) the first key of a typed object that the
    msgspec `model` does not have; `obj` is the document in the version-2 shape,
    `tables_path` where its tables were given (`$.args.sources[0].tables` for v3)."""
    if not isinstance(obj, dict):
        return
    info = _type_info(model)
    for field in info.fields:
        if field.encode_name not in obj:
            continue
        value = obj[field.encode_name]
        where = {
            "tables": tables_path,
            "functions": tables_path.removesuffix("tables") + "functions",
        }.get(field.encode_name, f"{path}.{field.encode_name}")
        for at, key in unknown_keys(value, field.type, where):
            raise not_supported(
                f'svc does not apply the key "{key}" here: remove it to apply the rest '
                "(svc refuses what it does not apply rather than dropping it)",
                f"{at}.{key}",
            )
    _check_remote_schemas(obj.get("remote_schemas"), f"{path}.remote_schemas")
    _check_column_config(obj.get("tables"), tables_path)


# The keys of a `column_config` entry svc applies (its field's name and description).
COLUMN_CONFIG_KEYS = frozenset({"custom_name", "comment"})


def _check_column_config(tables: Any, path: str) -> None:
    """`configuration.column_config` entries are JSON to the model: their keys are checked
    here (`custom_name`, `comment`)."""
    for i, entry in enumerate(tables if isinstance(tables, list) else ()):
        config = entry.get("configuration") if isinstance(entry, dict) else None
        columns = config.get("column_config") if isinstance(config, dict) else None
        for column, conf in (columns or {}).items() if isinstance(columns, dict) else ():
            for key in conf if isinstance(conf, dict) else ():
                if key not in COLUMN_CONFIG_KEYS:
                    raise not_supported(
                        f'svc does not apply the key "{key}" of a column configuration: '
                        "remove it to apply the rest",
                        f"{path}[{i}].configuration.column_config.{column}.{key}",
                    )


def _check_remote_schemas(entries: Any, path: str) -> None:
    """Remote schemas are stored as given (JSON) but read as `RemoteSchema`: their keys
    are checked against that struct."""
    if not isinstance(entries, list):
        return
    from svc.metadata.remote_schemas import RemoteSchema  # imports this package's model

    info = _type_info(RemoteSchema)
    for i, entry in enumerate(entries):
        for at, key in unknown_keys(entry, info, f"{path}[{i}]"):
            raise not_supported(
                f'svc does not apply the key "{key}" of a remote schema yet: remove it to '
                "apply the rest",
                f"{at}.{key}",
            )


@lru_cache(maxsize=16)
def _type_info(model: Any) -> Any:
    return mi.type_info(model)


def unknown_keys(value: Any, t: Any, path: str) -> Iterator[tuple[str, str]]:
    """`(path of the object, key)` for every key of `value`, at any depth, that the
    msgspec type `t` (`msgspec.inspect`) has no field for. Values of the wrong type are
    not looked into (msgspec refuses them at their path)."""
    if isinstance(t, mi.UnionType):
        for option in t.types:
            if _fits(value, option):
                yield from unknown_keys(value, option, path)
                return
        return
    if isinstance(t, mi.StructType) and isinstance(value, dict):
        fields = {f.encode_name: f for f in t.fields}
        for key, inner in value.items():
            found = fields.get(key)
            if found is None:
                yield path, key
            else:
                yield from unknown_keys(inner, found.type, f"{path}.{key}")
    elif isinstance(t, mi.VarTupleType | mi.ListType) and isinstance(value, list):
        for i, inner in enumerate(value):
            yield from unknown_keys(inner, t.item_type, f"{path}[{i}]")
    elif isinstance(t, mi.DictType) and isinstance(value, dict):
        for key, inner in value.items():
            yield from unknown_keys(inner, t.value_type, f"{path}.{key}")


def _fits(value: Any, t: Any) -> bool:
    if isinstance(value, dict):
        return isinstance(t, mi.StructType | mi.DictType)
    if isinstance(value, list):
        return isinstance(t, mi.VarTupleType | mi.ListType)
    return False


# The inconsistency types of the kept sections' objects (`svc.ir.unsupported_issues`).
KEPT_KINDS = frozenset(
    {
        "inherited_role",
        "host_network_tls_allowlist",
        "network",
        "data_connector_agent",
        "backend_config",
        "opentelemetry",
        "metrics_config",
    }
)


def drop_kept(md: Any, kind: str, name: str | None) -> Any:
    """`md` (a `Metadata`) without the kept object an inconsistency of type `kind` names
    (`drop_inconsistent_metadata`, `cascade`); unchanged when it is not there."""
    replace = msgspec.structs.replace
    if kind == "inherited_role":
        kept = tuple(r for r in md.inherited_roles if r.get("role_name") != name)
        return replace(md, inherited_roles=kept)
    if kind in ("host_network_tls_allowlist", "network") and isinstance(md.network, dict):
        network = dict(md.network)
        if kind == "network":
            network.pop(name or "", None)
        else:
            hosts = [
                h
                for h in network.get("tls_allowlist") or []
                if not (isinstance(h, dict) and h.get("host") == name)
            ]
            network["tls_allowlist"] = hosts
            if not hosts:
                del network["tls_allowlist"]
        return replace(md, network=network or msgspec.UNSET)
    if kind in ("data_connector_agent", "backend_config") and isinstance(md.backend_configs, dict):
        configs = dict(md.backend_configs)
        if kind == "backend_config":
            configs.pop(name or "", None)
        else:
            agents = {k: v for k, v in (configs.get("dataconnector") or {}).items() if k != name}
            configs["dataconnector"] = agents
            if not agents:
                del configs["dataconnector"]
        return replace(md, backend_configs=configs or msgspec.UNSET)
    if kind in ("opentelemetry", "metrics_config"):
        return replace(md, **{kind: msgspec.UNSET})
    return md
