"""One role view (issue 12): what a role may do is decided in `svc/ir/role_view.py` only.

`test_no_role_decision_outside_the_view` walks the AST of every module under `svc/` and
fails on a comparison with the literal `"admin"` or with a `.role` attribute
(`p.role == role`), or an access to a `*_permissions` attribute (also through
`getattr`/`setattr` with a name ending so) outside `ALLOWED`.
`test_no_session_prefix_outside_its_module` fails on a string (or bytes) literal holding
the session-variable prefix (`x-svc-`, any case; docstrings aside) outside
`svc/session_vars.py`, so the prefix, the role variable and svc's own header names are
written once.
The rest are unit tests of the view over a pure IR (no Postgres).
"""

from __future__ import annotations

import ast
import dataclasses
import zlib
from pathlib import Path
from typing import Any

import pytest

from svc.catalog.introspect import DbCatalog, DbColumn, DbConstraint, DbForeignKey, DbTable
from svc.ir import Ir, RootFields, build_ir
from svc.ir.role_view import PERMISSION_KINDS, metadata_roles, role_view
from svc.metadata.model import QualifiedName, metadata_from_obj
from svc.schema import build_schema
from svc.session_vars import is_admin

SVC = Path(__file__).resolve().parent.parent / "svc"

# Modules that may compare with "admin" or read `*_permissions`, and why. Keep it short.
ALLOWED = {
    # The role view itself: the one place that decides.
    "ir/role_view.py",
    # The IR builder resolves the metadata's permission lists into `Table.*_permissions`.
    "ir/build.py",
    # Renames rewrite the permission filters stored in the metadata document.
    "ir/rename.py",
    # A role's schema that cannot be built leaves that role's permission out of a copy
    # of the IR (`svc.schema.role_schema`).
    "ir/leave_out.py",
    # An inherited role's permissions combined from its parents' (the view's helper).
    "ir/inherited.py",
}
ALLOWED_PACKAGES = (
    # The metadata layer stores and edits permissions (Hasura's document format).
    "metadata/",
)
# A server setting, not a permission: it is handed to the view (`infer_functions`).
SETTING_NAMES = frozenset({"infer_function_permissions"})


def _is_admin_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == "admin"
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_is_admin_literal(e) for e in node.elts)
    return False


def _is_role_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "role"


def _permissions_name(node: ast.AST) -> bool:
    """A string constant or f-string ending in `_permissions` (a `getattr` name)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.endswith("_permissions") and node.value not in SETTING_NAMES
    if isinstance(node, ast.JoinedStr) and node.values:
        last = node.values[-1]
        return isinstance(last, ast.Constant) and str(last.value).endswith("_permissions")
    return False


def role_decisions(source: str) -> list[tuple[int, str]]:
    """`(line, what)` for every role or permission decision in `source`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_admin_literal(o) for o in operands):
                found.append((node.lineno, 'comparison with "admin"'))
            elif any(_is_role_attribute(o) for o in operands):
                found.append((node.lineno, "comparison with a `.role`"))
        elif isinstance(node, ast.Attribute):
            if node.attr.endswith("_permissions") and node.attr not in SETTING_NAMES:
                found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Call) and _permissions_getattr(node):
            found.append((node.lineno, "getattr/setattr of '…_permissions'"))
    return found


def _permissions_getattr(node: ast.Call) -> bool:
    """`getattr(x, f"{kind}_permissions")` and the like."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr")
        and len(node.args) >= 2
        and _permissions_name(node.args[1])
    )


def test_no_role_decision_outside_the_view() -> None:
    problems = []
    for path in sorted(SVC.rglob("*.py")):
        rel = path.relative_to(SVC).as_posix()
        if rel in ALLOWED or rel.startswith(ALLOWED_PACKAGES):
            continue
        for line, what in role_decisions(path.read_text()):
            problems.append(f"svc/{rel}:{line}: {what}")
    assert problems == [], "decide in svc/ir/role_view.py:\n" + "\n".join(problems)


# The one module that spells the session-variable prefixes (svc's and, under the Hasura
# names compatibility switch, Hasura's).
SESSION_MODULE = "session_vars.py"
PREFIXES = ("x-svc-", "x-hasura-")


def _docstrings(tree: ast.AST) -> set[int]:
    """`id`s of the docstring constants of a module, its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def prefix_literals(source: str) -> list[int]:
    """Lines of string or bytes literals (f-string parts included) holding the prefix."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in skip:
            value = node.value
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            if isinstance(text, str) and any(p in text.lower() for p in PREFIXES):
                lines.append(node.lineno)
    return lines


def test_no_session_prefix_outside_its_module() -> None:
    problems = [
        f"svc/{path.relative_to(SVC).as_posix()}:{line}"
        for path in sorted(SVC.rglob("*.py"))
        if path.relative_to(SVC).as_posix() != SESSION_MODULE
        for line in prefix_literals(path.read_text())
    ]
    assert problems == [], "use svc/session_vars.py:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("source", "count"),
    [
        ('h = "x-svc-role"', 1),
        ('name.lower().startswith("X-Svc-")', 1),
        ('pair[:6] == b"x-svc-"', 1),
        ('f"invalid x-svc-admin-secret {x}"', 1),
        ('h = "X-Hasura-User-Id"', 1),
        ('def f():\n    """Reads `x-svc-role`."""', 0),
        ("is_session_variable(name)", 0),
    ],
)
def test_the_walker_finds_prefixes(source: str, count: int) -> None:
    assert len(prefix_literals(source)) == count


def test_allow_list_names_existing_modules() -> None:
    assert (SVC / SESSION_MODULE).exists()
    for rel in (*ALLOWED, *ALLOWED_PACKAGES):
        assert (SVC / rel).exists(), rel


@pytest.mark.parametrize(
    ("source", "count"),
    [
        ('role == "admin"', 1),
        ('"admin" != role', 1),
        ('role in ("admin", "x")', 1),
        ("t.select_permissions", 1),
        ('getattr(t, f"{kind}_permissions")', 1),
        ('setattr(t, "insert_permissions", [])', 1),
        ("config.infer_function_permissions", 0),
        ('header_session(h, "admin")', 0),
        ("is_admin(role)", 0),
        ("p.role == role", 1),
        ("role != perm.role", 1),
        ("session.role in roles", 1),
        ("p.name == name", 0),
    ],
)
def test_the_walker_finds_decisions(source: str, count: int) -> None:
    assert len(role_decisions(source)) == count


# -- the view over a pure IR ----------------------------------------------------------------


def _column(name: str, attnum: int, type_name: str) -> DbColumn:
    return DbColumn(
        name=name,
        attnum=attnum,
        type={"int4": "integer", "text": "text"}[type_name],
        type_name=type_name,
        type_schema="pg_catalog",
        type_kind="b",
        type_category="N" if type_name == "int4" else "S",
        elem_type_name=None,
        nullable=attnum != 1,
        has_default=attnum == 1,
        generated=False,
        comment=None,
    )


def _table(name: str, columns: list[tuple[str, str]], fks: tuple[DbForeignKey, ...]) -> DbTable:
    return DbTable(
        oid=zlib.crc32(name.encode()),
        schema="public",
        name=name,
        kind="r",
        comment=None,
        updatable=28,
        columns=tuple(_column(n, i + 1, t) for i, (n, t) in enumerate(columns)),
        constraints=(DbConstraint(f"{name}_pkey", "p", ("id",)),),
        unique_indexes=(),
        foreign_keys=fks,
    )


CATALOG = DbCatalog(
    (
        _table("author", [("id", "int4"), ("name", "text"), ("email", "text")], ()),
        _table(
            "article",
            [("id", "int4"), ("author_id", "int4"), ("title", "text")],
            (DbForeignKey("article_author", "public", "author", ("author_id",), ("id",)),),
        ),
    ),
    (),
)
OWN = {"author_id": {"_eq": "X-Svc-User-Id"}}
METADATA: dict[str, Any] = {
    "version": 2,
    "tables": [
        {
            "table": {"schema": "public", "name": "author"},
            "select_permissions": [
                {"role": "user", "permission": {"columns": ["id", "name"], "filter": {}}},
                {
                    "role": "reader",
                    "permission": {"columns": ["name"], "filter": {}, "limit": 5},
                },
            ],
        },
        {
            "table": {"schema": "public", "name": "article"},
            "select_permissions": [
                {
                    "role": "user",
                    "permission": {
                        "columns": "*",
                        "filter": OWN,
                        "limit": 10,
                        "allow_aggregations": True,
                    },
                }
            ],
            "insert_permissions": [
                {
                    "role": "user",
                    "permission": {
                        "columns": ["title", "author_id"],
                        "check": OWN,
                        "set": {"author_id": "X-Svc-User-Id"},
                    },
                },
                {"role": "writer", "permission": {"columns": "*", "check": {}}},
            ],
            "update_permissions": [
                {
                    "role": "user",
                    "permission": {"columns": ["title"], "filter": OWN, "check": None},
                },
                {"role": "writer", "permission": {"columns": "*", "filter": {}}},
            ],
            "delete_permissions": [
                {"role": "user", "permission": {"filter": OWN, "backend_only": True}},
            ],
        },
    ],
}
AUTHOR = QualifiedName(schema="public", name="author")
ARTICLE = QualifiedName(schema="public", name="article")
# The kinds of root field a table can get: `RootFields` names one of each.
ALL_ROOTS = frozenset(f.name for f in dataclasses.fields(RootFields))


@pytest.fixture(scope="module")
def ir() -> Ir:
    built = build_ir(metadata_from_obj(METADATA), CATALOG)
    assert built.inconsistencies == ()
    return built


def _names(columns: Any) -> list[str]:
    return [c.name for c in columns]


def test_admin_sees_everything(ir: Ir) -> None:
    view = role_view(ir, "admin")
    assert view.admin and is_admin("admin") and not is_admin("user")
    for name, table in ir.tables.items():
        access = view.table(name)
        assert access.root_fields == ALL_ROOTS
        assert access.columns == table.columns
        assert access.filter is None and access.limit is None and access.aggregations
        assert access.insert_columns == table.columns == access.update_columns
        assert access.can_delete


def test_role_without_select_has_no_root_fields(ir: Ir) -> None:
    view = role_view(ir, "nobody")
    for name in ir.tables:
        access = view.table(name)
        assert not access.readable and not access.selectable
        assert access.root_fields == frozenset() and access.columns == ()
    assert view.tables() == {}


def test_write_without_select_offers_insert_only(ir: Ir) -> None:
    access = role_view(ir, "writer").table(ARTICLE)
    # Hasura: updates (and deletes) read the table, `insert_one` answers a row.
    assert access.root_fields == {"insert"}
    assert access.update is not None and access.update_columns is None
    assert _names(access.insert_columns or ()) == ["id", "author_id", "title"]


def test_columns_filters_presets_as_metadata_says(ir: Ir) -> None:
    view = role_view(ir, "user")
    author, article = view.table(AUTHOR), view.table(ARTICLE)
    assert _names(author.columns) == ["id", "name"]
    assert author.filter == {} and author.limit is None and not author.aggregations
    assert author.root_fields == {"select", "select_stream", "select_by_pk"}
    assert _names(article.columns) == ["id", "author_id", "title"]
    assert article.filter == ir.tables[ARTICLE].select_permissions["user"].filter
    assert article.limit == 10 and article.aggregations
    assert article.insert is not None and article.insert.presets == {"author_id": "X-Svc-User-Id"}
    assert _names(article.insert_columns or ()) == ["title"]  # the preset is not given
    assert article.update is not None and _names(article.update_columns or ()) == ["title"]
    # backend_only: the rule exists (the planner reads it), the schema offers no field.
    assert article.delete is not None and article.delete.backend_only and not article.can_delete
    assert article.root_fields == ALL_ROOTS - {"delete", "delete_by_pk"}


def test_hidden_key_hides_by_pk_fields(ir: Ir) -> None:
    access = role_view(ir, "reader").table(AUTHOR)
    assert _names(access.columns) == ["name"] and access.limit == 5
    assert not access.pk_visible and access.root_fields == {"select", "select_stream"}


def test_schema_shows_the_view(ir: Ir) -> None:
    for role in ("admin", "user", "reader", "writer", "nobody"):
        view = role_view(ir, role)
        schema = build_schema(ir, role, view=view, streaming=True)
        query = set(schema.query_type.fields) if schema.query_type else set()
        mutation = set(schema.mutation_type.fields) if schema.mutation_type else set()
        query |= set(schema.subscription_type.fields) if schema.subscription_type else set()
        expected: set[str] = set()
        for name, table in ir.tables.items():
            rf = table.root_fields
            expected.update(getattr(rf, kind) for kind in view.table(name).root_fields)
        assert (query | mutation) - {"no_queries_available"} == expected, role


def test_view_caches_entries(ir: Ir) -> None:
    view = role_view(ir, "user")
    assert view.table(ARTICLE) is view.table(ARTICLE)


def test_metadata_roles() -> None:
    md = metadata_from_obj(METADATA)
    assert metadata_roles(md) == ("admin", "reader", "user", "writer")
    assert PERMISSION_KINDS == ("insert", "select", "update", "delete")


def role_defaults(source: str) -> list[int]:
    """Lines where a parameter or a class field named `role` has a default value (a
    caller that forgets the role would get one silently: fail-open for `admin`)."""
    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            with_default = positional[len(positional) - len(args.defaults) :]
            kw = [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
            found += [a.lineno for a in [*with_default, *kw] if a.arg == "role"]
        elif (
            isinstance(node, ast.AnnAssign)
            and node.value is not None
            and isinstance(node.target, ast.Name)
            and node.target.id == "role"
        ):
            found.append(node.lineno)
    return found


def test_no_role_has_a_default() -> None:
    found = [
        f"{path.relative_to(SVC.parent)}:{line}"
        for path in sorted(SVC.rglob("*.py"))
        for line in role_defaults(path.read_text())
    ]
    assert found == []


@pytest.mark.parametrize(
    ("source", "count"),
    [
        ('def f(role: str = "admin") -> None: ...', 1),
        ("def f(*, role: str = ADMIN_ROLE) -> None: ...", 1),
        ("class C:\n    role: str = 'admin'\n", 1),
        ("def f(role: str, other: int = 1) -> None: ...", 0),
        ("class C:\n    role: str\n", 0),
    ],
)
def test_the_role_default_walker(source: str, count: int) -> None:
    assert len(role_defaults(source)) == count
