"""`remote_schemas.yaml` and remote relationships round-trip through the metadata
directory and through a document (issue 17: export → apply → export is identical)."""

from __future__ import annotations

from svc.metadata.directory import metadata_from_files, metadata_to_files
from svc.metadata.model import encode_metadata, metadata_from_obj, metadata_to_obj
from svc.metadata.remote_schemas import remote_relationships, remote_schemas

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
