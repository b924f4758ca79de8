"""`build_ir(md, catalog, previous)` equals a full `build_ir(md, catalog)` after any
sequence of metadata operations and catalog changes, and keeps the `Table` objects of the
tables an operation did not affect; the copy-on-write transitions never change their input.

Pure: the catalogs are built here, no Postgres.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc.catalog.introspect import (
    DbCatalog,
    DbColumn,
    DbConstraint,
    DbForeignKey,
    DbFunction,
    DbTable,
)
from svc.errors import SvcError
from svc.ir import Ir, build_ir
from svc.metadata import apply, apply_functions, apply_permissions
from svc.metadata.args import (
    AddComputedField,
    CreatePermission,
    CreateRelationship,
    DropComputedField,
    DropPermission,
    DropRelationship,
    FunctionPermission,
    RenameRelationship,
    SetPermissionComment,
    SetRelationshipComment,
    SetTableCustomFields,
    SetTableCustomization,
    UntrackTable,
    parse_args,
)
from svc.metadata.function_model import TrackedFunction
from svc.metadata.model import (
    Metadata,
    QualifiedName,
    TableConfiguration,
    decode_metadata,
    encode_metadata,
    qualify,
)

# -- catalogs -------------------------------------------------------------------------------

TYPES = {"int4": "integer", "text": "text", "jsonb": "jsonb"}


def column(name: str, attnum: int, type_name: str) -> DbColumn:
    return DbColumn(
        name=name,
        attnum=attnum,
        type=TYPES[type_name],
        type_name=type_name,
        type_schema="pg_catalog",
        type_kind="b",
        type_category="N",
        elem_type_name=None,
        nullable=False,
        has_default=attnum == 1,
        generated=False,
        comment=None,
    )


def table(
    name: str,
    columns: list[tuple[str, str]],
    fks: tuple[DbForeignKey, ...] = (),
    *,
    schema: str = "public",
    kind: str = "r",
) -> DbTable:
    return DbTable(
        oid=zlib.crc32(name.encode()),
        schema=schema,
        name=name,
        kind=kind,
        comment=None,
        updatable=28,
        columns=tuple(column(n, i + 1, t) for i, (n, t) in enumerate(columns)),
        constraints=(DbConstraint(f"{name}_pkey", "p", ("id",)),) if kind == "r" else (),
        unique_indexes=(),
        foreign_keys=fks,
    )


def fk(name: str, columns: tuple[str, ...], ref: str) -> DbForeignKey:
    return DbForeignKey(name, "public", ref, columns, ("id",))


def function(name: str, args: tuple[str, ...], returns: str, *, setof: bool = False) -> DbFunction:
    """A stable function of `args` (type names: a table's or one of TYPES)."""
    return DbFunction(
        schema="public",
        name=name,
        volatility="s",
        returns_set=setof,
        return_type=returns,
        return_type_name=returns,
        return_type_schema="public",
        return_type_kind="b" if returns in TYPES else "c",
        arg_names=tuple(f"a{i}" for i in range(len(args))),
        arg_types=args,
        arg_type_names=args,
        arg_type_schemas=tuple("pg_catalog" if a in TYPES else "public" for a in args),
        arg_modes=(),
        defaults=0,
        comment=None,
    )


AUTHOR = table("author", [("id", "int4"), ("name", "text"), ("bio", "text")])
ARTICLE = table(
    "article",
    [("id", "int4"), ("author_id", "int4"), ("editor_id", "int4"), ("title", "text")],
    (
        fk("article_author", ("author_id",), "author"),
        fk("article_editor", ("editor_id",), "author"),
    ),
)
TAG = table(
    "tag",
    [("id", "int4"), ("article_id", "int4"), ("label", "text")],
    (fk("tag_article", ("article_id",), "article"),),
)
COMMENT = table("comment", [("id", "int4"), ("article_id", "int4"), ("body", "text")])
VIEW = table("article_view", [("id", "int4"), ("title", "text")], kind="v")
OTHER = table(
    "other",
    [("id", "int4"), ("author_id", "int4")],
    (fk("other_author", ("author_id",), "author"),),
    schema="s",
)
FULL_NAME = function("author_full_name", ("author",), "text")
ARTICLES_OF = function("author_articles", ("author",), "article", setof=True)
SEARCH = function("search_articles", ("text",), "article", setof=True)
SESSION_FN = function("author_session", ("author", "jsonb"), "text")

TABLES_0 = (AUTHOR, ARTICLE, TAG, COMMENT, VIEW, OTHER)
CATALOGS = {
    "base": DbCatalog(TABLES_0, (FULL_NAME, ARTICLES_OF, SEARCH)),
    # only the tag's foreign key is gone: its `Table` is equal, relationships over it change
    "tag_fk_dropped": DbCatalog(
        tuple(
            table("tag", [("id", "int4"), ("article_id", "int4"), ("label", "text")])
            if t is TAG
            else t
            for t in TABLES_0
        ),
        (FULL_NAME, ARTICLES_OF, SEARCH),
    ),
    # the view is gone, author has a new column, a function is new
    "changed": DbCatalog(
        (
            table("author", [("id", "int4"), ("name", "text"), ("bio", "text"), ("x", "text")]),
            ARTICLE,
            TAG,
            COMMENT,
            OTHER,
        ),
        (FULL_NAME, ARTICLES_OF, SEARCH, SESSION_FN),
    ),
    # only functions differ: one overloaded, one gone
    "functions": DbCatalog(TABLES_0, (ARTICLES_OF, ARTICLES_OF, SEARCH, SESSION_FN)),
    # equal to the first, no object in common (a reload decodes it anew)
    "decoded": msgspec.json.decode(
        msgspec.json.encode(DbCatalog(TABLES_0, (FULL_NAME, ARTICLES_OF, SEARCH))), type=DbCatalog
    ),
}

# -- operations -----------------------------------------------------------------------------

Step = Callable[[Metadata], Metadata]
NAMES = ["author", "article", "tag", "comment", "article_view", "missing"]
TABLES: list[Any] = [*NAMES, {"schema": "s", "name": "other"}]


def track(name: Any) -> Step:
    return lambda md: apply.track_table(md, qualify(name), None, False)


def untrack(name: Any) -> Step:
    return lambda md: apply.untrack_table(md, UntrackTable(table=name))


def relationship(kind: str, owner: str, name: str, using: dict[str, Any]) -> Step:
    args = parse_args(CreateRelationship, {"table": owner, "name": name, "using": using})
    return lambda md: apply.create_relationship(md, args, kind)


def permission(kind: str, owner: str, role: str, body: dict[str, Any]) -> Step:
    args = parse_args(CreatePermission, {"table": owner, "role": role, "permission": body})
    return lambda md: apply_permissions.create_permission(md, args, kind)


def computed(owner: str, name: str, fn: str, **definition: Any) -> Step:
    args = AddComputedField(table=owner, name=name, definition={"function": fn, **definition})
    return lambda md: apply_permissions.add_computed_field(md, args)


def customise(owner: str, columns: dict[str, str], custom_name: str | None = None) -> Step:
    config = TableConfiguration(custom_name=custom_name, custom_column_names=columns)
    args = SetTableCustomization(table=owner, configuration=config)
    return lambda md: apply.set_table_customization(md, args)


def track_function(name: str) -> Step:
    entry = TrackedFunction(function=QualifiedName(name=name))
    # in the catalog or not: a function missing from it is an inconsistency to follow
    return lambda md: apply_functions.track_function(md, entry, in_catalog=True)


def untrack_function(name: str) -> Step:
    return lambda md: apply_functions.untrack_function(md, QualifiedName(name=name))


def round_trip(md: Metadata) -> Metadata:
    """An equal document with no object in common (as a reload decodes it)."""
    return decode_metadata(encode_metadata(md))


USER_ARTICLE = {"columns": "*", "filter": {"author": {"name": {"_eq": "X-Svc-User-Id"}}}}
OPERATIONS: dict[str, Step] = {
    **{f"track {t}": track(t) for t in TABLES},
    **{f"untrack {t}": untrack(t) for t in TABLES},
    "article.author": relationship(
        "object", "article", "author", {"foreign_key_constraint_on": "author_id"}
    ),
    "article.editor": relationship(
        "object", "article", "editor", {"foreign_key_constraint_on": ["editor_id"]}
    ),
    "tag.article": relationship(
        "object", "tag", "article", {"foreign_key_constraint_on": "article_id"}
    ),
    "comment.article": relationship(
        "object",
        "comment",
        "article",
        {
            "manual_configuration": {
                "remote_table": "article",
                "column_mapping": {"article_id": "id"},
            }
        },
    ),
    "article.tags": relationship(
        "array",
        "article",
        "tags",
        {"foreign_key_constraint_on": {"table": "tag", "column": "article_id"}},
    ),
    "author.others": relationship(
        "array",
        "author",
        "others",
        {
            "foreign_key_constraint_on": {
                "table": {"schema": "s", "name": "other"},
                "column": "author_id",
            }
        },
    ),
    "author.articles": relationship(
        "array",
        "author",
        "articles",
        {"foreign_key_constraint_on": {"table": "article", "columns": ["author_id"]}},
    ),
    "author.by_name": relationship(
        "object",
        "author",
        "by_name",
        {"manual_configuration": {"remote_table": "article", "column_mapping": {"bio": "title"}}},
    ),
    "drop article.author": lambda md: apply.drop_relationship(
        md, DropRelationship(table="article", relationship="author")
    ),
    "drop author.articles": lambda md: apply.drop_relationship(
        md, DropRelationship(table="author", relationship="articles")
    ),
    "rename article.tags": lambda md: apply.rename_relationship(
        md, RenameRelationship(table="article", name="tags", new_name="labels")
    ),
    "comment tag.article": lambda md: apply.set_relationship_comment(
        md, SetRelationshipComment(table="tag", name="article", comment="the article")
    ),
    "select article user": permission("select", "article", "user", USER_ARTICLE),
    "select author user": permission(
        "select", "author", "user", {"columns": ["id", "name"], "filter": {}}
    ),
    "select author editor": permission(
        "select",
        "author",
        "editor",
        {
            "columns": "*",
            "filter": {"articles": {"title": {"_like": "%a%"}}},
            "computed_fields": ["full_name"],
        },
    ),
    "select tag user": permission(
        "select",
        "tag",
        "user",
        {
            "columns": "*",
            "filter": {"_exists": {"_table": "comment", "_where": {"body": {"_eq": "x"}}}},
        },
    ),
    "select comment user": permission(
        "select", "comment", "user", {"columns": ["x"], "filter": {}}
    ),
    "select author reader": permission(
        "select",
        "author",
        "reader",
        {"columns": "*", "filter": {"written": {"title": {"_eq": "t"}}}},
    ),
    "insert article user": permission(
        "insert", "article", "user", {"columns": "*", "check": {"author_id": "X-Svc-User-Id"}}
    ),
    "update author user": permission(
        "update", "author", "user", {"columns": ["bio"], "filter": {"id": 1}, "set": {"x": 1}}
    ),
    "delete tag user": permission(
        "delete", "tag", "user", {"filter": {"article": {"tags": {"label": {"$eq": "a"}}}}}
    ),
    "delete comment user": permission(
        "delete", "comment", "user", {"filter": {"article": {"author": {"name": {"_eq": "a"}}}}}
    ),
    "drop select article user": lambda md: apply_permissions.drop_permission(
        md, DropPermission(table="article", role="user"), "select"
    ),
    "drop select author editor": lambda md: apply_permissions.drop_permission(
        md, DropPermission(table="author", role="editor"), "select"
    ),
    "comment select author user": lambda md: apply_permissions.set_permission_comment(
        md, SetPermissionComment(table="author", role="user", type="select", comment="c")
    ),
    "author.full_name": computed("author", "full_name", "author_full_name"),
    "author.written": computed("author", "written", "author_articles"),
    "author.session": computed("author", "session", "author_session", session_argument="a1"),
    "author.by_name()": computed("author", "by_name", "author_full_name"),
    "article.bad": computed("article", "bad", "author_full_name"),
    "drop author.written": lambda md: apply_permissions.drop_computed_field(
        md, DropComputedField(table="author", name="written")
    ),
    "author names": customise("author", {"name": "author_name"}),
    "author bad name": customise("author", {"bio": "1bad"}),
    "article post": customise("article", {}, "post"),
    "article plain": customise("article", {}),
    "tag root fields": lambda md: apply.set_table_custom_fields(
        md, SetTableCustomFields(table="tag", custom_root_fields={"select": "labels"})
    ),
    "track search_articles": track_function("search_articles"),
    "untrack search_articles": untrack_function("search_articles"),
    "grant search_articles": lambda md: apply_functions.create_function_permission(
        md, FunctionPermission(function="search_articles", role="user")
    ),
    "revoke search_articles": lambda md: apply_functions.drop_function_permission(
        md, FunctionPermission(function="search_articles", role="user")
    ),
    "round trip": round_trip,
}
TRACKING = [f"track {t}" for t in TABLES]
UNTRACKING = [f"untrack {t}" for t in TABLES]
OTHERS = [n for n in OPERATIONS if n not in TRACKING and n not in UNTRACKING]
SWITCHES = [f"catalog {c}" for c in CATALOGS]  # steps that change the catalog


def check(previous: Ir, md: Metadata, catalog: DbCatalog) -> Ir:
    """The incremental build over `previous`, checked against a full build."""
    incremental = build_ir(md, catalog, previous)
    full = build_ir(md, catalog)
    assert incremental == full
    assert list(incremental.tables) == list(full.tables)
    assert [i.to_json() for i in incremental.inconsistencies] == [
        i.to_json() for i in full.inconsistencies
    ]
    assert [i.key for i in incremental.inconsistencies] == [i.key for i in full.inconsistencies]
    for name, t in incremental.tables.items():
        assert t.relationship_map == full.tables[name].relationship_map
        assert t.column_map == full.tables[name].column_map
    return incremental


def run(steps: list[str]) -> None:
    """Apply `steps` (names of OPERATIONS or SWITCHES) checking every build, and that no
    transition changed the document it was given."""
    catalog = CATALOGS["base"]
    md = Metadata()
    ir = build_ir(md, catalog)
    for step in steps:
        if step in SWITCHES:
            catalog = CATALOGS[step.removeprefix("catalog ")]
        else:
            given, before = md, encode_metadata(md)
            try:
                md = OPERATIONS[step](md)
            except SvcError:
                continue
            finally:
                assert encode_metadata(given) == before
        ir = check(ir, md, catalog)


def test_every_step_in_order() -> None:
    run(TRACKING + OTHERS + SWITCHES + OTHERS + TRACKING + UNTRACKING + OTHERS)


# Each of these needs one particular order of changes to see a stale part.
SCENARIOS = {
    "a foreign key of a target dropped": [
        "track article",
        "track tag",
        "article.tags",
        "catalog tag_fk_dropped",
    ],
    "functions changed under computed fields": [
        "track author",
        "track article",
        "author.full_name",
        "author.written",
        "catalog functions",
    ],
    "a computed field's table untracked": [
        "track author",
        "track article",
        "author.written",
        "untrack article",
        "track article",
    ],
    "a relationship gone frees a computed field's name": [
        "track author",
        "track article",
        "author.by_name",
        "author.by_name()",
        "untrack article",
        "track article",
    ],
    "a relationship that resolves changes a shape a filter reads": [
        "track comment",
        "track article",
        "article.author",
        "comment.article",
        "delete comment user",
        "track author",
        "untrack author",
    ],
    "an _exists table untracked": [
        "track tag",
        "track comment",
        "select tag user",
        "untrack comment",
    ],
    "a catalog decoded anew": ["track author", "author.full_name", "catalog decoded", "round trip"],
}


@pytest.mark.parametrize("steps", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_scenario(steps: list[str]) -> None:
    run(steps)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(
        # tracking weighs more: every other operation needs tracked tables
        st.one_of(st.sampled_from(TRACKING), st.sampled_from([*OPERATIONS, *SWITCHES])),
        max_size=40,
    )
)
def test_any_sequence(steps: list[str]) -> None:
    run(steps)


def everything() -> Metadata:
    """A document with every operation that succeeds applied."""
    md = Metadata()
    for name in TRACKING + OTHERS:
        with contextlib.suppress(SvcError):
            md = OPERATIONS[name](md)
    return md


@pytest.mark.parametrize("step", OPERATIONS)
def test_transitions_leave_their_input_alone(step: str) -> None:
    md = everything()
    before = encode_metadata(md)
    with contextlib.suppress(SvcError):
        OPERATIONS[step](md)
    assert encode_metadata(md) == before


def test_unaffected_tables_keep_their_objects() -> None:
    md = everything()
    catalog = CATALOGS["base"]
    ir = build_ir(md, catalog)
    # `comment` is looked at by `tag`'s permission (`_exists`) only.
    after = check(ir, apply.untrack_table(md, UntrackTable(table="comment")), catalog)
    kept = {n for n in ir.tables if ir.tables[n] is after.tables.get(n)}
    assert kept == {QualifiedName(n) for n in ("author", "article", "article_view")} | {
        QualifiedName("other", "s")
    }
    # An equal document decoded anew keeps every table, and so does an equal catalog.
    again = check(ir, round_trip(md), catalog)
    assert all(again.tables[n] is t for n, t in ir.tables.items())
    decoded = check(ir, md, CATALOGS["decoded"])
    assert all(decoded.tables[n] is t for n, t in ir.tables.items())
