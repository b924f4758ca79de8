"""`svc compile` type-checks actions and custom types (issue 16) against the database:
a problem is printed at its place in `actions.yaml`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import create_database
from tests.test_compile import _run, compile_cli, write_dir

SQL = 'create table "user" (id serial primary key, name text);'


def doc(output: str, table: str = "user") -> dict[str, Any]:
    return {
        "version": 2,
        "tables": [{"table": {"schema": "public", "name": "user"}}],
        "custom_types": {
            "objects": [
                {
                    "name": "UserId",
                    "fields": [{"name": "id", "type": "Int!"}],
                    "relationships": [
                        {
                            "name": "user",
                            "type": "object",
                            "remote_table": table,
                            "field_mapping": {"id": "id"},
                        }
                    ],
                }
            ]
        },
        "actions": [
            {"name": "a_ok", "definition": {"output_type": "UserId", "handler": "http://h"}},
            {"name": "b_bad", "definition": {"output_type": output, "handler": "http://h"}},
        ],
    }


@pytest.fixture(scope="module")
def db_url(pg_url: str) -> str:
    url = create_database(pg_url)
    _run(url, SQL)
    return url


def test_consistent_actions_compile(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = compile_cli(capsys, write_dir(tmp_path, doc("[UserId!]")), db_url)
    assert code == 0, err


def test_problems_are_printed_at_their_place(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = compile_cli(capsys, write_dir(tmp_path / "a", doc("Nope")), db_url)
    assert code == 1
    assert (
        'actions.yaml: $.actions[1]: Inconsistent object: in action "b_bad"; the type: '
        '"Nope" is not an object or scalar type defined in custom types'
    ) in err
    code, _, err = compile_cli(capsys, write_dir(tmp_path / "b", doc("UserId", "gone")), db_url)
    assert code == 1
    assert any(
        line.startswith("actions.yaml: $.custom_types: Inconsistent object: validation for the")
        and 'the remote table "gone"' in line
        for line in err
    ), err
