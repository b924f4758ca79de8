"""The inconsistencies of what a document holds that svc keeps but does not apply
(`svc.metadata.unsupported`), and of remote relationships that do not resolve.

`build_ir` adds them to the IR's inconsistencies, so they are listed by
`get_inconsistent_metadata`, warned about by `/healthz`, refused by a `replace_metadata`
without `allow_inconsistent_metadata` (`Context.commit`: 400 `not-supported`), printed by
`svc compile`, and removed by `drop_inconsistent_metadata` (`svc.metadata.drop`):

- `host_network_tls_allowlist`: each host of `network.tls_allowlist` (the reference's
  object), `network` for any other key of `network`;
- `data_connector_agent`: each agent of `backend_configs.dataconnector`, `backend_config`
  for any other backend's configuration;
- `opentelemetry` when its `status` is `enabled`, `metrics_config` when it turns an
  analysis on (a disabled configuration does nothing in the reference either);
- `remote_relationship` to a remote schema: one whose shape svc does not read, whose
  remote schema is not in the document, or whose join fields are not columns (nor scalar
  computed fields without arguments) of its table (one to a table, `to_source`, is
  resolved with the table's relationships, `svc.ir.relationships.source_relationship`);
- `event_trigger`: one naming a column its table lacks.

Transforms are applied whole (`svc.outbound.transform`), so none is reported here.

A permission holding a key svc stores but cannot honour (`OBJECT_KEYS_NOT_APPLIED`, none
today: `validate_input` is served, `svc.ir.input_validation`) would be refused by its
table's build (`permission_error`, called by `svc.ir.build`), an inconsistency of that
permission, not served.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.ir.model import Inconsistency, Table
from svc.metadata.event_triggers import check_columns
from svc.metadata.model import DEFAULT_SOURCE, Metadata, QualifiedName, plain
from svc.metadata.remote_schemas import (
    RemoteType,
    SourceJoin,
    is_to_source,
    relationship_definition,
    type_relationships,
)
from svc.metadata.sources import is_served
from svc.metadata.unsupported import OBJECT_KEYS_NOT_APPLIED

NOT_SUPPORTED = ErrorCode.NOT_SUPPORTED


def _issue(kind: str, name: str, definition: Any, reason: str) -> Inconsistency:
    return Inconsistency(
        kind,
        definition,
        f"Inconsistent object: {reason}",
        NOT_SUPPORTED,
        f"{kind} {name}",
        None,
        name,
    )


def kept_issues(md: Metadata) -> list[Inconsistency]:
    """One inconsistency per object of the kept sections of `md` (see the module)."""
    out: list[Inconsistency] = []
    if isinstance(md.network, dict):
        for key, value in md.network.items():
            if key == "tls_allowlist" and isinstance(value, list):
                for item in value:
                    host = str(item.get("host")) if isinstance(item, dict) else str(item)
                    out.append(
                        _issue(
                            "host_network_tls_allowlist",
                            host,
                            item,
                            "svc does not support the TLS allow-list yet: the certificate of "
                            f'"{host}" is verified as any other',
                        )
                    )
            elif value not in (None, [], {}):
                out.append(
                    _issue("network", key, {key: value}, f'svc does not apply "network.{key}" yet')
                )
    if isinstance(md.backend_configs, dict):
        for backend, config in md.backend_configs.items():
            if backend == "dataconnector" and isinstance(config, dict):
                for agent, definition in config.items():
                    out.append(
                        _issue(
                            "data_connector_agent",
                            agent,
                            {"name": agent, "definition": definition},
                            f'svc does not support data connectors yet: agent "{agent}" is '
                            "not used",
                        )
                    )
            elif config not in (None, [], {}):
                out.append(
                    _issue(
                        "backend_config",
                        backend,
                        {backend: config},
                        f'svc does not apply the configuration of backend "{backend}"',
                    )
                )
    otel = md.opentelemetry
    if isinstance(otel, dict) and otel.get("status") == "enabled":
        out.append(
            _issue(
                "opentelemetry",
                "opentelemetry",
                otel,
                "svc does not export OpenTelemetry traces, metrics or logs yet",
            )
        )
    metrics = md.metrics_config
    if isinstance(metrics, dict) and any(bool(v) for v in metrics.values()):
        on = ", ".join(f'"{k}"' for k, v in metrics.items() if v)
        out.append(
            _issue("metrics_config", "metrics_config", metrics, f"svc does not apply {on} yet")
        )
    return out


def permission_error(permission: Any) -> None:
    """Raise `SvcError` `not-supported` when a permission rule holds a key svc stores but
    does not act on (`OBJECT_KEYS_NOT_APPLIED`, empty today); the IR then records
    the permission as inconsistent and does not serve it."""
    for key, reason in OBJECT_KEYS_NOT_APPLIED.items():
        value = getattr(permission, key, msgspec.UNSET)
        if value is not msgspec.UNSET and value is not None:
            raise SvcError(NOT_SUPPORTED, f'"{key}": {reason}')


def remote_relationship_issues(
    md: Metadata, tables: Mapping[QualifiedName, Table]
) -> Iterator[Inconsistency]:
    """The remote relationships of `md`'s tracked `tables` that cannot be served (see the
    module); the others are served by the schema merge (`svc.schema.remote_merge`), which
    checks their remote field against the remote's introspection."""
    remotes = {r.get("name") for r in md.remote_schemas if isinstance(r, dict)}
    for entry in md.tables:
        if not entry.remote_relationships or entry.table not in tables:
            continue
        table = tables[entry.table]
        for raw in entry.remote_relationships:
            problem = _remote_problem(raw, table, remotes)
            if problem is None:
                continue
            name = str(raw.get("name")) if isinstance(raw, dict) else ""
            yield Inconsistency(
                "remote_relationship",
                {
                    "table": msgspec.to_builtins(entry.table),
                    **(raw if isinstance(raw, dict) else {}),
                },
                f"Inconsistent object: in table {entry.table.quoted()}: in remote relationship "
                f'"{name}": {problem.message}',
                problem.code,
                f"remote_relationship {name} in table {entry.table} in source default",
                entry.table,
                name,
            )


def event_trigger_issues(
    md: Metadata, tables: Mapping[QualifiedName, Table]
) -> Iterator[Inconsistency]:
    """Event triggers of `md`'s tracked `tables` naming a column the table does not have
    (listened or in the payload): `create_event_trigger` refuses them, a whole document
    (`replace_metadata`, a directory) could hold one without a word."""
    for entry in md.tables:
        if not entry.event_triggers or entry.table not in tables:
            continue
        present = tuple(c.name for c in tables[entry.table].columns)
        for trigger in entry.event_triggers:
            try:
                check_columns(trigger, entry.table, present, "$")
            except SvcError as exc:
                yield Inconsistency(
                    "event_trigger",
                    {"table": msgspec.to_builtins(entry.table), **plain(trigger)},
                    f"Inconsistent object: in table {entry.table.quoted()}: in event trigger "
                    f'"{trigger.name}": {exc.message}',
                    exc.code,
                    f"event_trigger {trigger.name} in table {entry.table} in source default",
                    entry.table,
                    trigger.name,
                )


def remote_type_relationship_issues(
    md: Metadata, tables: Mapping[QualifiedName, Table]
) -> Iterator[Inconsistency]:
    """The relationships of remote schemas' types that cannot be served whatever the
    remote answers: to a table of another source, a table that is not tracked or a
    column it lacks, or to a remote schema not in the document. Their type and fields are
    checked against the remote's introspection by the schema merge
    (`svc.schema.remote_merge`)."""
    remotes = {r.get("name") for r in md.remote_schemas if isinstance(r, dict)}
    for rel in type_relationships(md):
        problem: str | None = None
        if isinstance(rel, SourceJoin):
            target = tables.get(rel.target)
            if rel.source != DEFAULT_SOURCE and is_served(md, rel.source):
                continue  # checked against every source's tables (`svc.ir.source_joins`)
            if rel.source != DEFAULT_SOURCE:
                problem = f"source with name {rel.source!r} not found"
            elif target is None:
                problem = f"table {rel.target.quoted()} is not tracked"
            else:
                missing = [c for _, c in rel.field_mapping if target.column(c) is None]
                problem = f'no such column exists : "{missing[0]}"' if missing else None
        elif rel.remote_schema not in remotes:
            problem = f"remote schema with name {rel.remote_schema!r} does not exist"
        if problem is not None and isinstance(rel.table, RemoteType):
            code = (
                ErrorCode.NOT_EXISTS
                if isinstance(rel, SourceJoin)
                else ErrorCode.REMOTE_SCHEMA_ERROR
            )
            yield type_relationship_issue(rel.table, rel.name, problem, code)


def type_relationship_issue(
    owner: RemoteType, name: str, reason: str, code: ErrorCode = ErrorCode.REMOTE_SCHEMA_ERROR
) -> Inconsistency:
    """The inconsistency `remote_schema_remote_relationship` of relationship `name` of
    remote type `owner` (the reference's object type for it), with `reason`."""
    return Inconsistency(
        "remote_schema_remote_relationship",
        {"remote_schema": owner.remote_schema, "type_name": owner.type_name, "name": name},
        f"Inconsistent object: in remote schema {owner.remote_schema!r}: in type "
        f'"{owner.type_name}": in remote relationship "{name}": {reason}',
        code,
        f"remote_schema_remote_relationship {name} in type {owner.type_name} "
        f"in remote schema {owner.remote_schema}",
    )


def _remote_problem(raw: Any, table: Table, remotes: set[Any]) -> SvcError | None:
    if is_to_source(raw):
        return None  # a relationship to a table: resolved with the table's relationships
    try:
        definition = relationship_definition(raw)
    except SvcError as exc:
        return exc
    if definition["remote_schema"] not in remotes:
        return SvcError(
            ErrorCode.REMOTE_SCHEMA_ERROR,
            f"remote schema with name {definition['remote_schema']!r} does not exist",
        )
    for column in definition["svc_fields"]:
        if table.column(column) is not None:
            continue
        computed = table.computed_field_map.get(column)
        if (
            computed is None
            or not computed.is_scalar
            or any(kind == "input" for kind, _ in computed.arg_order)
        ):
            return SvcError(
                ErrorCode.REMOTE_SCHEMA_ERROR,
                f"column {column} does not exist in table {table.name.quoted()}",
            )
    return None


_KEPT_FILE = {
    "inherited_role": "inherited_roles",
    "host_network_tls_allowlist": "network",
    "network": "network",
    "data_connector_agent": "backend_configs",
    "backend_config": "backend_configs",
    "opentelemetry": "opentelemetry",
    "metrics_config": "metrics_config",
}


def locate_unsupported(md: Metadata, issue: Inconsistency) -> tuple[str, str] | None:
    """`(file, JSON path)` in a metadata directory of an inconsistency of this module, a
    remote schema's or an object a role schema was built without that has no place in
    `tables.yaml`/`functions.yaml` (`svc compile`); None for the others."""
    key = _KEPT_FILE.get(issue.type)
    name = issue.relationship
    if key is not None:
        file = f"{key}.yaml"
        if issue.type == "inherited_role":
            i = next(
                (i for i, r in enumerate(md.inherited_roles) if r.get("role_name") == name), None
            )
            return file, "$" if i is None else f"$[{i}]"
        if issue.type == "host_network_tls_allowlist" and isinstance(md.network, dict):
            hosts = md.network.get("tls_allowlist") or []
            i = next(
                (i for i, h in enumerate(hosts) if isinstance(h, dict) and h.get("host") == name),
                None,
            )
            return file, "$.tls_allowlist" if i is None else f"$.tls_allowlist[{i}]"
        if issue.type == "data_connector_agent":
            return file, f"$.dataconnector.{name}"
        if issue.type in ("network", "backend_config"):
            return file, f"$.{name}"
        return file, "$"
    if issue.type == "remote_schema":
        i = next(
            (
                i
                for i, r in enumerate(md.remote_schemas)
                if isinstance(r, dict) and r.get("name") == name
            ),
            None,
        )
        return "remote_schemas.yaml", "$" if i is None else f"$[{i}]"
    if issue.type == "remote_relationship" and issue.table is not None:
        ti = next((i for i, e in enumerate(md.tables) if e.table == issue.table), None)
        if ti is None:
            return "tables.yaml", "$"
        rels = md.tables[ti].remote_relationships
        j = next(
            (j for j, r in enumerate(rels) if isinstance(r, dict) and r.get("name") == name), None
        )
        return "tables.yaml", f"$[{ti}]" if j is None else f"$[{ti}].remote_relationships[{j}]"
    if issue.type == "role_schema":
        return "tables.yaml", "$"
    return None
