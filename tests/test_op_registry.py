"""The metadata operation registry (`svc.api.op_registry`): every operation is one record
declaring its checks, aliases point at registered records, names are unique, and each
check has its step in the one runner (`svc.api.op_checks`)."""

from __future__ import annotations

import dataclasses

import pytest

from svc.api.metadata import READ_ONLY, REGISTRY, ROLE_OPERATIONS
from svc.api.op_checks import STEPS
from svc.api.op_registry import CHECK_ORDER, SYNC_VARIANTS, Check, Operation, Registry


def test_every_operation_declares_its_checks() -> None:
    """`checks` (and `read_only`, `args`) have no default: a record must spell them."""
    fields = {f.name: f for f in dataclasses.fields(Operation)}
    for name in ("name", "handler", "args", "read_only", "checks"):
        assert fields[name].default is dataclasses.MISSING, name
        assert fields[name].default_factory is dataclasses.MISSING, name
    for op in REGISTRY.records():
        assert isinstance(op.checks, frozenset) and op.checks <= set(Check), op.name
        assert callable(op.handler), op.name
        assert isinstance(op.read_only, bool), op.name


def test_every_operation_syncs_capture_triggers_once() -> None:
    """Exactly one of the sync checks: the database's capture triggers follow every
    operation (what the old wrapper around every operation did)."""
    for op in REGISTRY.records():
        assert len(op.checks & SYNC_VARIANTS) == 1, op.name


def test_aliases_name_their_record() -> None:
    for name, op in REGISTRY.items():
        assert name == op.name or name in op.aliases
        assert REGISTRY[op.name] is op
        assert all(alias.startswith("pg_") for alias in op.aliases), op.name


def test_every_check_has_a_step_in_the_fixed_order() -> None:
    assert set(STEPS) == set(Check)
    assert list(CHECK_ORDER) == list(Check)


def test_duplicates_are_refused() -> None:
    op = REGISTRY["track_table"]
    with pytest.raises(ValueError, match="registered twice"):
        Registry.of([op], [dataclasses.replace(op, aliases=())])
    other = dataclasses.replace(op, name="other", aliases=("pg_track_table",))
    with pytest.raises(ValueError, match="pg_track_table"):
        Registry.of([op, other])


def test_flags_derived_from_the_records() -> None:
    reads = {
        "export_metadata",
        "get_inconsistent_metadata",
        "get_catalog_state",
        "select",
        "test_webhook_transform",
        "pg_get_source_tables",
    }
    assert reads == READ_ONLY
    assert {"select"} == ROLE_OPERATIONS


# What each operation got from the chain of wrappers it replaced (read from that chain):
# the stored-query check on the core and collection operations, the remote-schema
# follow-ups and the cron-trigger rules on the whole-document operations.
EXPECTED = {
    "run_sql": {"COLLECTIONS", "REMOTE_RENAMES", "TRIGGER_COLUMNS", "SYNC_TRIGGERS"},
    "track_table": {"COLLECTIONS", "REMOTE_CONFLICTS", "SYNC_TRIGGERS"},
    "track_function": {"COLLECTIONS", "REMOTE_CONFLICTS", "SYNC_TRIGGERS"},
    "set_table_customization": {"COLLECTIONS", "REMOTE_CONFLICTS", "SYNC_TRIGGERS"},
    "set_table_custom_fields": {"COLLECTIONS", "REMOTE_CONFLICTS", "SYNC_TRIGGERS"},
    "reload_metadata": {"COLLECTIONS", "REFRESH_REMOTES", "RESYNC_TRIGGERS"},
    "replace_metadata": {"COLLECTIONS", "INTROSPECT_REMOTES", "CRON_KEEP", "SYNC_TRIGGERS"},
    "clear_metadata": {
        "COLLECTIONS",
        "INTROSPECT_REMOTES",
        "CRON_KEEP",
        "SYNC_TRIGGERS_DROP_LOG",
    },
    "export_metadata": {"COLLECTIONS", "CRON_EXPORT", "SYNC_TRIGGERS"},
    "get_inconsistent_metadata": {"COLLECTIONS", "REMOTE_ISSUES", "SYNC_TRIGGERS"},
    "select": {"COLLECTIONS", "SYNC_TRIGGERS"},
    "create_query_collection": {"COLLECTIONS", "SYNC_TRIGGERS"},
    "add_remote_schema": {"SYNC_TRIGGERS"},
    "create_cron_trigger": {"SYNC_TRIGGERS"},
    "create_action": {"SYNC_TRIGGERS"},
    "insert": {"SYNC_TRIGGERS"},
    "create_event_trigger": {"SYNC_TRIGGERS"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_checks_as_before(name: str) -> None:
    assert {c.name for c in REGISTRY[name].checks} == EXPECTED[name]


def test_pg_spellings_as_before() -> None:
    """`pg_` spellings exist for the source-level operations only."""
    aliased = {op.name for op in REGISTRY.records() if op.aliases}
    assert {"run_sql", "track_table", "create_query_collection", "add_remote_schema"} <= aliased
    assert {"create_event_trigger", "create_select_permission"} <= aliased
    assert not aliased & {
        "export_metadata",
        "replace_metadata",
        "clear_metadata",
        "reload_metadata",
        "set_api_limits",
        "select",
        "insert",
        "update",
        "create_cron_trigger",
        "create_action",
    }
    # + get/set_catalog_state, set_table_is_enum (and pg_), add_existing_table_or_view,
    # add_/drop_inherited_role (no pg_: not source-level), test_webhook_transform,
    # create_/update_/delete_remote_schema_remote_relationship (no pg_), and the source
    # operations pg_add_source, pg_update_source, pg_drop_source, rename_source and
    # pg_get_source_tables (issue 28)
    assert len(REGISTRY) == 141
