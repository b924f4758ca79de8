"""`remote_schemas.yaml` and remote relationships round-trip through the metadata
directory and through a document (issue 17: export → apply → export is identical)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from svc.metadata.directory import metadata_from_files, metadata_to_files
from svc.metadata.model import encode_metadata, metadata_from_obj, metadata_to_obj
from svc.metadata.remote_schemas import remote_relationships, remote_schemas
from tests.fixture_servers import remote_node
from tests.support import ServerProcess, create_database, export_apply_export

OBJ = {
    "version": 2,
    "tables": [
        {
            "table": {"schema": "public", "name": "profiles"},
            "remote_relationships": [
                {
                    "name": "messages",
                    "definition": {
                        "svc_fields": ["id"],
                        "remote_schema": "node",
                        "remote_field": {
                            "messages": {
                                "arguments": {"where": {"id": {"eq": "$id"}}},
                                "field": {"nested": {"arguments": {}}},
                            }
                        },
                    },
                }
            ],
        }
    ],
    "remote_schemas": [
        {
            "name": "node",
            "comment": "a remote",
            "definition": {
                "url": "{{REMOTE_SCHEMAS_WEBHOOK_DOMAIN}}/graphql",
                "headers": [{"name": "X-Key", "value_from_env": "KEY"}],
                "forward_client_headers": True,
                "timeout_seconds": 20,
                "customization": {"root_fields_namespace": "ns", "type_names": {"prefix": "P_"}},
            },
            "permissions": [{"role": "user", "definition": {"schema": "type Query { a: Int }"}}],
        }
    ],
}


def test_document_round_trip() -> None:
    md = metadata_from_obj(OBJ)
    again = metadata_from_obj(metadata_to_obj(md))
    assert encode_metadata(again) == encode_metadata(md)
    (entry,) = remote_schemas(md)
    assert entry.definition.timeout == 20
    assert (
        entry.definition.headers is not None and entry.definition.headers[0].value_from_env == "KEY"
    )
    (rel,) = remote_relationships(md)
    assert rel.svc_fields == ("id",) and rel.remote_schema == "node"


def test_directory_round_trip() -> None:
    md = metadata_from_obj(OBJ)
    files = metadata_to_files(md)
    assert "{{REMOTE_SCHEMAS_WEBHOOK_DOMAIN}}/graphql" in files["remote_schemas.yaml"]
    back = metadata_from_files(files)
    assert metadata_to_obj(back) == metadata_to_obj(md)  # same document (keys canonical)
    assert metadata_to_files(back) == files  # and the same bytes again


def test_export_apply_export_on_a_server(pg_url: str, tmp_path: Path) -> None:
    """`svc metadata export → apply → export` through a real server with a cron trigger
    (issue 15), a customized remote schema with a role's permissions and a remote
    relationship (issue 17) is byte-identical, and what was applied serves again."""
    env = {"SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS": "true", "HOOK": "http://127.0.0.1:1"}
    with remote_node.serve():
        srv = ServerProcess(create_database(pg_url, prefix="rs_dir"), env=env)
        try:
            r = srv.query({"type": "bulk", "args": STEPS})
            assert r.status_code == 200, r.text

            files, again = export_apply_export(srv, tmp_path)
            assert again == files
            assert b"name: nightly" in files["cron_triggers.yaml"]
            assert b"prefix: N_" in files["remote_schemas.yaml"]
            assert b"role: user" in files["remote_schemas.yaml"]
            assert b"remote_relationships:" in b"".join(files.values())
            out = srv.graphql(QUERY)
            assert out == {
                "data": {
                    "profiles": [
                        {
                            "id": 1,
                            "message": {"__typename": "N_Message", "name": "alice"},
                            "in_ns": {"t": "User", "m_user_id": 1},
                        }
                    ],
                    "hello": "world",
                    "ns": {"hello": "world"},
                }
            }, out
            crons = srv.query({"type": "get_cron_triggers", "args": {}}).json()
            assert [c["name"] for c in crons["cron_triggers"]] == ["nightly"]
        finally:
            srv.stop()


# Relationships to customized remotes: the calls go out in the remote's own names and
# `__typename` comes back customized, as for the remotes' root fields.
QUERY = """{
  profiles {
    id
    message { __typename ... on N_Message { name } }
    in_ns { t: __typename m_user_id }
  }
  hello
  ns { hello }
}"""

SQL = "CREATE TABLE profiles (id int primary key); INSERT INTO profiles VALUES (1)"
STEPS: list[dict[str, Any]] = [
    {
        "type": "run_sql",
        "args": {"sql": SQL},
    },
    {"type": "track_table", "args": {"table": "profiles"}},
    {
        "type": "create_cron_trigger",
        "args": {
            "name": "nightly",
            "webhook": "{{HOOK}}/nightly",
            "schedule": "0 3 * * *",
            "payload": {"k": 1},
            "include_in_metadata": True,
            "headers": [{"name": "x-k", "value": "v"}],
            "comment": "every night",
        },
    },
    {
        "type": "add_remote_schema",
        "args": {
            "name": "node",
            "definition": {
                "url": "http://localhost:4000",
                "forward_client_headers": True,
                "timeout_seconds": 20,
                "customization": {"type_names": {"prefix": "N_"}},
            },
            "comment": "the node fixture",
        },
    },
    {
        "type": "add_remote_schema",
        "args": {
            "name": "node_ns",
            "definition": {
                "url": "http://localhost:4000",
                "customization": {
                    "root_fields_namespace": "ns",
                    "field_names": [{"parent_type": "User", "prefix": "m_"}],
                },
            },
        },
    },
    {
        "type": "add_remote_schema_permissions",
        "args": {
            "remote_schema": "node",
            "role": "user",
            "definition": {"schema": "type Query { hello: String }"},
        },
    },
    {
        "type": "create_remote_relationship",
        "args": {
            "name": "message",
            "table": "profiles",
            "svc_fields": ["id"],
            "remote_schema": "node",
            "remote_field": {"message": {"arguments": {"id": "$id"}}},
        },
    },
    {
        "type": "create_remote_relationship",
        "args": {
            "name": "in_ns",
            "table": "profiles",
            "svc_fields": ["id"],
            "remote_schema": "node_ns",
            "remote_field": {"user": {"arguments": {"user_id": "$id"}}},
        },
    },
]
