"""The typed, frozen metadata document (issue 12).

`tests/fixtures/metadata_stored_before_issue12.json` is a document as the version before
typed metadata stored it in `hdb_catalog` (written by that version's own code: every typed
part present, and the JSON parts later issues will type), and
`metadata_files_before_issue12.json` the metadata directory it wrote for it: the new code
reads the stored bytes, exports the same JSON and writes the same files. The rest checks
what typing and freezing promise: values of the wrong type are refused where they are,
exports keep exactly the keys given, transitions never change their input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svc.errors import SvcError
from svc.metadata import apply, apply_functions, apply_permissions
from svc.metadata.args import (
    AddComputedField,
    CreatePermission,
    DropPermission,
    FunctionPermission,
    SetPermissionComment,
    UntrackTable,
)
from svc.metadata.directory import metadata_from_files, metadata_to_files
from svc.metadata.drop import ObjectRef, drop_object, keep_existing
from svc.metadata.model import (
    Metadata,
    QualifiedName,
    decode_metadata,
    encode_metadata,
    metadata_from_obj,
    metadata_to_obj,
)
from svc.metadata.permission_model import InsertRule, SelectRule

FIXTURES = Path(__file__).parent / "fixtures"
STORED = (FIXTURES / "metadata_stored_before_issue12.json").read_bytes()
FILES: dict[str, str] = json.loads((FIXTURES / "metadata_files_before_issue12.json").read_text())
AUTHOR, ARTICLE = QualifiedName("author"), QualifiedName("article")


@pytest.fixture
def md() -> Metadata:
    return decode_metadata(STORED)


def test_a_document_stored_before_typing_loads_and_exports_the_same(md: Metadata) -> None:
    assert metadata_to_obj(md) == json.loads(STORED)
    assert json.loads(encode_metadata(md)) == json.loads(STORED)
    author = md.table(AUTHOR)
    assert author is not None
    (perm,) = author.select_permissions
    assert isinstance(perm.permission, SelectRule)
    assert perm.permission.columns == ("id", "name") and perm.permission.limit == 10
    assert author.computed_fields[0].definition.function_name == QualifiedName("author_shout")
    assert md.functions[0].roles == ("user",)
    assert md.allowlist[0].roles() == ("user",) and md.allowlist[1].roles() is None
    assert md.rest_endpoints[0].reference == ("coll", "q")


def test_the_directory_written_before_typing_is_written_again(md: Metadata) -> None:
    # Since issue 16 custom types are written as SDL (`actions.graphql`); the old layout
    # (everything in `actions.yaml`) is still read.
    actions = ("actions.yaml", "actions.graphql")
    written = metadata_to_files(md)
    assert {k: v for k, v in written.items() if k not in actions} == {
        k: v for k, v in FILES.items() if k not in actions
    }
    assert written["actions.graphql"] == "type O {\n  x: Int\n}\n"
    assert metadata_to_files(metadata_from_files(FILES)) == written
    assert metadata_to_files(metadata_from_files(written)) == written


def test_documents_are_frozen(md: Metadata) -> None:
    with pytest.raises(AttributeError):
        md.tables = ()  # type: ignore[misc]
    author = md.table(AUTHOR)
    assert author is not None
    with pytest.raises(AttributeError):
        author.select_permissions[0].permission.limit = 1  # type: ignore[misc]
    assert isinstance(md.tables, tuple) and isinstance(author.select_permissions, tuple)


def test_exports_keep_exactly_the_keys_given() -> None:
    given: dict[str, Any] = {
        "role": "u",
        "permission": {"check": None, "set": {}, "columns": [], "backend_only": False},
        "comment": None,
    }
    doc = {"version": 2, "tables": [{"table": {"name": "t", "schema": "public"}}]}
    doc["tables"][0]["insert_permissions"] = [given]
    out = metadata_to_obj(metadata_from_obj(doc))
    assert out["tables"][0]["insert_permissions"] == [given]


def test_unknown_keys_are_refused_at_their_path() -> None:
    """The reference ignores a key it does not know; svc names it (400 `not-supported`),
    so nothing of a document is dropped silently (`svc.metadata.unsupported`)."""
    doc = {
        "tables": [
            {
                "table": "t",
                "select_permissions": [
                    {"role": "u", "permission": {"columns": "*", "filter": {}, "extra": 1}}
                ],
            }
        ]
    }
    with pytest.raises(SvcError) as info:
        metadata_from_obj(doc)
    assert info.value.code == "not-supported"
    assert info.value.path == "$.args.tables[0].select_permissions[0].permission.extra"


@pytest.mark.parametrize(
    ("part", "path"),
    [
        ({"columns": 5}, "$.args.tables[0].select_permissions[0].permission.columns"),
        ({"limit": "ten"}, "$.args.tables[0].select_permissions[0].permission.limit"),
        ({"filter": []}, "$.args.tables[0].select_permissions[0].permission.filter"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_at_its_path(part: dict[str, Any], path: str) -> None:
    doc = {"tables": [{"table": "t", "select_permissions": [{"role": "u", "permission": part}]}]}
    with pytest.raises(SvcError) as info:
        metadata_from_obj(doc)
    assert (info.value.code, info.value.path) == ("parse-failed", path)


def test_transitions_leave_their_input_unchanged_and_share_the_rest(md: Metadata) -> None:
    before = encode_metadata(md)
    steps = [
        lambda m: apply_permissions.create_permission(
            m, CreatePermission(table="author", role="x", permission={"columns": "*"}), "insert"
        ),
        lambda m: apply_permissions.drop_permission(
            m, DropPermission(table="article", role="user"), "delete"
        ),
        lambda m: apply_permissions.set_permission_comment(
            m, SetPermissionComment(table="author", role="user", type="select", comment=None)
        ),
        lambda m: apply_permissions.add_computed_field(
            m,
            AddComputedField(table="article", name="c", definition={"function": "f"}),
        ),
        lambda m: apply_functions.create_function_permission(
            m, FunctionPermission(function="search", role="editor")
        ),
        lambda m: apply_functions.drop_function_permission(
            m, FunctionPermission(function="search", role="user")
        ),
        lambda m: apply.untrack_table(m, UntrackTable(table="article")),
    ]
    for step in steps:
        out = step(md)
        assert encode_metadata(md) == before
        assert out != md
        unchanged = [t for t in out.tables if any(t is u for u in md.tables)]
        assert len(unchanged) >= len(md.tables) - 1  # only the edited entry is new


def test_typed_values_and_comments_of_transitions(md: Metadata) -> None:
    args = CreatePermission(table="author", role="x", permission={"columns": "*"}, comment="c")
    out = apply_permissions.create_permission(md, args, "insert")
    author = out.table(AUTHOR)
    assert author is not None
    (perm,) = author.insert_permissions
    assert perm.permission == InsertRule(columns="*") and perm.comment == "c"
    cleared = apply_permissions.set_permission_comment(
        md, SetPermissionComment(table="article", role="editor", type="select", comment=None)
    )
    article = cleared.table(ARTICLE)
    assert article is not None
    assert "comment" not in metadata_to_obj(cleared)["tables"][1]["select_permissions"][0]
    dropped = apply_functions.drop_function_permission(
        md, FunctionPermission(function="search", role="user")
    )
    assert "permissions" not in metadata_to_obj(dropped)["functions"][0]
    with pytest.raises(SvcError) as info:
        apply_permissions.create_permission(
            md, CreatePermission(table="author", role="y", permission={"columns": 1}), "select"
        )
    assert (info.value.code, info.value.path) == ("parse-failed", "$.args.permission.columns")


def test_drop_object_removes_what_an_inconsistency_names(md: Metadata) -> None:
    out = drop_object(md, ObjectRef("select_permission", AUTHOR, "user.select"))
    assert out.table(AUTHOR).select_permissions == ()  # type: ignore[union-attr]
    out = drop_object(md, ObjectRef("computed_field", AUTHOR, "shout"))
    assert out.table(AUTHOR).computed_fields == ()  # type: ignore[union-attr]
    out = drop_object(md, ObjectRef("object_relation", ARTICLE, "author"))
    assert out.table(ARTICLE).object_relationships == ()  # type: ignore[union-attr]
    out = drop_object(md, ObjectRef("table", ARTICLE))
    assert [t.table for t in out.tables] == [AUTHOR]
    out = drop_object(md, ObjectRef("function", function=QualifiedName("search")))
    assert out.functions == ()
    assert drop_object(md, ObjectRef("duplicate_declaration")) is md
    kept = keep_existing(md, {("public", "author")}, lambda name: False)
    assert [t.table for t in kept.tables] == [AUTHOR] and kept.functions == ()
