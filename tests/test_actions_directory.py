"""`actions.graphql` and `actions.yaml` of the metadata directory (issue 16, spec 2.1):
what is written, that writing → reading → writing gives the same bytes, and that bad SDL
is refused at its file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from svc.metadata.directory import DirectoryError, metadata_from_files, metadata_to_files
from svc.metadata.model import metadata_from_obj, metadata_to_obj
from tests.support import ServerProcess, create_database, export_apply_export

DOC: dict[str, Any] = {
    "version": 2,
    "actions": [
        {
            "name": "create_user",
            "definition": {
                "kind": "asynchronous",
                "arguments": [
                    {"name": "email", "type": "String!", "description": "where to write"},
                    {"name": "name", "type": "String!"},
                ],
                "output_type": "UserId",
                "handler": "{{ACTION_BASE}}/create-user",
                "headers": [{"name": "x-client", "value_from_env": "CLIENT"}],
                "timeout": 5,
            },
            "permissions": [{"role": "user"}],
            "comment": "signs a user up",
        },
        {
            "name": "get_users",
            "definition": {
                "type": "query",
                "output_type": "[UserId!]!",
                "handler": "http://127.0.0.1:5593/get-users",
                "forward_client_headers": True,
            },
        },
    ],
    "custom_types": {
        "objects": [
            {
                "name": "UserId",
                "description": 'a user\'s "id"',
                "fields": [{"name": "id", "type": "Int!"}, {"name": "tags", "type": "[Tag]"}],
                "relationships": [
                    {
                        "name": "user",
                        "type": "object",
                        "remote_table": {"schema": "public", "name": "user"},
                        "field_mapping": {"id": "id"},
                    }
                ],
            }
        ],
        "input_objects": [{"name": "UserInput", "fields": [{"name": "name", "type": "String"}]}],
        "scalars": [{"name": "Tag", "description": "a label"}],
        "enums": [
            {
                "name": "Level",
                "values": [{"value": "LOW"}, {"value": "OLD", "is_deprecated": True}],
            }
        ],
    },
}

SDL = '''type Query {
  get_users: [UserId!]!
}

type Mutation {
  create_user(
    """where to write"""
    email: String!
    name: String!
  ): UserId
}

enum Level {
  LOW
  OLD @deprecated
}

input UserInput {
  name: String
}

"""
a user's "id"
"""
type UserId {
  id: Int!
  tags: [Tag]
}

"""a label"""
scalar Tag
'''


def test_sdl_holds_the_graphql_and_yaml_the_rest() -> None:
    files = metadata_to_files(metadata_from_obj(DOC))
    assert files["actions.graphql"] == SDL
    yaml = files["actions.yaml"]
    assert "handler: '{{ACTION_BASE}}/create-user'" in yaml
    assert "output_type" not in yaml and "arguments" not in yaml
    assert "relationships:" in yaml and "field_mapping:" in yaml
    assert "- role: user" in yaml


def test_write_read_write_is_byte_identical() -> None:
    files = metadata_to_files(metadata_from_obj(DOC))
    again = metadata_to_files(metadata_from_files(files))
    assert again == files
    md = metadata_from_files(files)
    by_name = {a.name: a for a in md.actions}
    assert by_name["get_users"].definition.operation == "query"
    assert by_name["create_user"].definition.asynchronous
    assert [a.name for a in by_name["create_user"].definition.args] == ["email", "name"]
    exported = metadata_to_obj(md)
    assert exported["custom_types"]["enums"][0]["values"][1]["is_deprecated"] is True


def test_an_action_written_whole_in_yaml_is_read_as_written() -> None:
    """The layout of directories written before actions.graphql existed."""
    yaml = "actions:\n- name: b\n  definition: {handler: http://x, output_type: T}\n"
    md = metadata_from_files({"actions.yaml": yaml, "actions.graphql": "scalar S\n"})
    assert md.actions[0].definition.output_type == "T"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"actions.graphql": "type Query {\n"}, "actions.graphql: $: not valid GraphQL SDL"),
        (
            {"actions.graphql": "type Query { a: Int }\n"},
            'actions.graphql: $: action "a" has no entry in actions.yaml',
        ),
        (
            {"actions.graphql": "interface I { a: Int }\n"},
            "actions.graphql: $: actions.graphql cannot hold a InterfaceTypeDefinition",
        ),
        (
            {"actions.yaml": "custom_types:\n  objects:\n  - name: Gone\n"},
            'actions.graphql: $: custom type "Gone" is not defined in actions.graphql',
        ),
    ],
)
def test_bad_sdl_is_refused_at_its_file(files: dict[str, str], expected: str) -> None:
    with pytest.raises(DirectoryError) as info:
        metadata_from_files(files)
    assert str(info.value).startswith(expected), str(info.value)


def test_export_apply_export_on_a_server(pg_url: str, tmp_path: Path) -> None:
    """`svc metadata export → apply → export` with actions and custom types is
    byte-identical (issue 16's acceptance), through a real server."""
    srv = ServerProcess(create_database(pg_url, prefix="act_dir"), env={"ACTION_BASE": "http://h"})
    try:
        sql = 'create table "user" (id serial primary key, name text);'
        steps = [
            {"type": "run_sql", "args": {"sql": sql}},
            {"type": "track_table", "args": {"table": "user"}},
            {"type": "replace_metadata", "args": {**DOC, "tables": [{"table": "user"}]}},
        ]
        r = srv.query({"type": "bulk", "args": steps})
        assert r.status_code == 200, r.text

        files, again = export_apply_export(srv, tmp_path)
        assert files["actions.graphql"].decode() == SDL
        assert again == files
        schema = srv.graphql('{ __type(name: "UserId") { fields { name } } }')
        assert schema == {
            "data": {"__type": {"fields": [{"name": "id"}, {"name": "tags"}, {"name": "user"}]}}
        }
    finally:
        srv.stop()
