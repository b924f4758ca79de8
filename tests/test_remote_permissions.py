"""Remote schema permissions: a role's SDL is checked against the remote's introspection
(issue 17; the reference's `add_remote_schema_permissions` validation), without a server:
the remote is the graphql-core schema of `tests/fixture_servers/remote_node.py`."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from graphql import get_introspection_query, graphql_sync

from svc.errors import SvcError
from svc.ir.role_view import RemoteAccess, remote_access
from svc.metadata.remote_schemas import RemoteSchema
from svc.schema.remote_permissions import check_subset, parse_role_sdl, role_schema
from tests.fixture_servers.remote_node import node_perms
from tests.support import SHARED

PERMISSIONS = SHARED / "conformance" / "remote_schemas" / "permissions"


def introspection() -> dict[str, Any]:
    result = graphql_sync(node_perms("Int"), get_introspection_query(descriptions=True))
    assert result.data is not None
    return result.data


VALID = """
type User { user_id: Int  gimmeText(text: String @preset(value: "x-svc-user-id")): String }
type Query { hello: String  user(user_id: Int! @preset(value: 2)): User }
"""


def test_valid_subset_passes_and_hides_presets() -> None:
    check_subset(VALID, introspection())
    schema, presets = parse_role_sdl(VALID)
    assert presets == {
        ("Query", "user", "user_id"): 2,
        ("User", "gimmeText", "text"): "x-svc-user-id",
    }
    assert schema.query_type is not None and "user_id" not in schema.query_type.fields["user"].args


@pytest.mark.parametrize(
    "sdl",
    [
        "type Query { hello: Int }",  # another type
        "type Query { nope: String }",  # no such field
        "type Query { user: User } type User { user_id: Int }",  # required argument left out
        "type Query { hello: String } type User { user_id: Int @preset(value: 2) }",
        'type Query { user(user_id: Int! @preset(value: "x")): User } type User { user_id: Int }',
        "enum MessageStatus { READ IDLE } type Query { hello: String }",
    ],
)
def test_invalid_subsets_are_refused(sdl: str) -> None:
    with pytest.raises(SvcError) as caught:
        check_subset(sdl, introspection())
    assert caught.value.code == "validation-failed"


def corpus_permission_bodies() -> list[tuple[str, int, str]]:
    """(case, expected status, SDL) of the corpus's add_remote_schema_permissions steps."""
    if not PERMISSIONS.is_dir():
        return []
    out = []
    for path in [
        *sorted(PERMISSIONS.glob("role_based_*.yaml")),
        PERMISSIONS / "argument_preset_validation.yaml",
    ]:
        doc = yaml.safe_load(path.read_text())
        for i, step in enumerate(doc if isinstance(doc, list) else [doc]):
            query = step.get("query") or {}
            if query.get("type") == "add_remote_schema_permissions":
                sdl = query["args"]["definition"]["schema"]
                out.append((f"{path.name}#{i}", step["status"], sdl))
    return out


@pytest.mark.parametrize(("case", "status", "sdl"), corpus_permission_bodies())
def test_corpus_validations(case: str, status: int, sdl: str) -> None:
    if status == 200:
        check_subset(sdl, introspection())
        return
    with pytest.raises(SvcError) as caught:
        check_subset(sdl, introspection())
    assert caught.value.code == "validation-failed", case


def test_role_without_permission_sees_nothing() -> None:
    entry = RemoteSchema(
        name="r",
        definition={"url": "http://x"},  # type: ignore[arg-type]
        permissions=({"role": "user", "definition": {"schema": VALID}},),  # type: ignore[arg-type]
    )
    import msgspec

    entry = msgspec.convert(msgspec.to_builtins(entry), RemoteSchema)
    assert remote_access(entry, "other", enforced=True, parents={}) == RemoteAccess(whole=False)
    assert remote_access(entry, "other", enforced=False, parents={}).whole
    assert remote_access(entry, "admin", enforced=True, parents={}).whole
    access = remote_access(entry, "user", enforced=True, parents={})
    assert not access.whole and access.sdl is not None
    user = role_schema(access.sdl)
    assert user is not None and user.query_type is not None
    assert set(user.query_type.fields) == {"hello", "user"}
