"""Nested updates (README "Nested updates"): `update_x`/`update_x_by_pk` with `_nested`,
against a real `svc serve` and Postgres.

The reference has no nested updates; the operation names (`_update`, `_insert`,
`_delete` per relationship) follow its design note `rfcs/nested-updates.md`
(hasura/graphql-engine), the permissions follow its update/insert/delete rules as svc's
root fields apply them (`svc.plan.mutation`): columns, presets, filter, check.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

SCHEMA = """
CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL, rating int NOT NULL DEFAULT 0);
CREATE TABLE article (id int PRIMARY KEY, title text NOT NULL,
  author_id int NOT NULL REFERENCES author(id), views int NOT NULL DEFAULT 0,
  editor text);
CREATE TABLE note (id serial PRIMARY KEY, article_id int NOT NULL REFERENCES article(id),
  body text NOT NULL);
"""
SEED = """
DELETE FROM note; DELETE FROM article; DELETE FROM author;
INSERT INTO author VALUES (1, 'Ada', 1), (2, 'Bob', 2);
INSERT INTO article VALUES (10, 'A1', 1, 5, NULL), (11, 'A2', 1, 0, NULL),
  (12, 'A3', 1, 7, NULL), (20, 'B1', 2, 3, NULL);
INSERT INTO note (article_id, body) VALUES (10, 'n1');
"""
USER = {"x-svc-role": "editor", "x-svc-user-id": "7"}
READER = {"x-svc-role": "reader"}


def _perm(kind: str, table: str, role: str, permission: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": f"create_{kind}_permission",
        "args": {"table": table, "role": role, "permission": permission},
    }


def _steps() -> list[dict[str, Any]]:
    rel = {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}
    notes = {"foreign_key_constraint_on": {"table": "note", "column": "article_id"}}
    every = {"columns": "*", "filter": {}}
    return [
        {"type": "run_sql", "args": {"sql": SCHEMA}},
        {"type": "track_table", "args": "author"},
        {"type": "track_table", "args": "article"},
        {"type": "track_table", "args": "note"},
        {
            "type": "create_object_relationship",
            "args": {
                "table": "article",
                "name": "author",
                "using": {"foreign_key_constraint_on": "author_id"},
            },
        },
        {
            "type": "create_array_relationship",
            "args": {"table": "author", "name": "articles", "using": rel},
        },
        {
            "type": "create_array_relationship",
            "args": {"table": "article", "name": "notes", "using": notes},
        },
        # editor: updates authors (rating at most 10), the articles of author 1 (views not
        # negative; `editor` preset from the session), inserts articles, deletes unviewed
        # ones; notes are read-only.
        _perm("select", "author", "editor", every),
        _perm("select", "article", "editor", every),
        _perm("select", "note", "editor", every),
        _perm(
            "update",
            "author",
            "editor",
            {"columns": ["name", "rating"], "filter": {}, "check": {"rating": {"_lte": 10}}},
        ),
        _perm(
            "update",
            "article",
            "editor",
            {
                "columns": ["title", "views"],
                "filter": {"author_id": {"_eq": 1}},
                "check": {"views": {"_gte": 0}},
                "set": {"editor": "x-svc-user-id"},
            },
        ),
        _perm(
            "insert",
            "article",
            "editor",
            {"columns": ["id", "title", "author_id"], "check": {"title": {"_neq": "bad"}}},
        ),
        _perm("delete", "article", "editor", {"filter": {"views": {"_eq": 0}}}),
        # reader: updates authors only; may do nothing to articles or notes
        _perm("select", "author", "reader", every),
        _perm("select", "article", "reader", every),
        _perm("update", "author", "reader", {"columns": ["name"], "filter": {}}),
        # titler: updates authors' names and articles' titles; no insert or delete
        _perm("select", "author", "titler", every),
        _perm("select", "article", "titler", every),
        _perm("update", "author", "titler", {"columns": ["name"], "filter": {}}),
        _perm("update", "article", "titler", {"columns": ["title"], "filter": {}}),
    ]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url))
    try:
        r = s.query({"type": "bulk", "args": _steps()})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


@pytest.fixture(autouse=True)
def seed(srv: ServerProcess) -> None:
    sql(srv, SEED)


def sql(srv: ServerProcess, text: str) -> list[list[str]]:
    r = srv.query({"type": "run_sql", "args": {"sql": text}})
    assert r.status_code == 200, r.text
    result: list[list[str]] = r.json().get("result") or []
    return result[1:]


def ok(srv: ServerProcess, query: str, headers: dict[str, str] | None = None, **kw: Any) -> Any:
    body = srv.graphql(query, headers=headers or {}, **kw)
    assert "errors" not in body, body
    return body["data"]


def error(srv: ServerProcess, query: str, headers: dict[str, str] | None = None) -> Any:
    body = srv.graphql(query, headers=headers or {})
    assert "data" not in body, body
    return body["errors"][0]


# -- array relationships ------------------------------------------------------------------
def test_array_update_returning_sees_new_values(srv: ServerProcess) -> None:
    """The parent and the matching related rows are updated; the by_pk answer reads the
    related rows as written; rows not matching `where` are untouched."""
    data = ok(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "Ada L"},
             _nested: {articles: {_update: [
               {where: {views: {_gt: 4}}, _inc: {views: 100}},
               {where: {id: {_eq: 11}}, _set: {title: "A2!"}}]}}) {
             name articles(order_by: {id: asc}) { id title views } } }""",
    )
    assert data["update_author_by_pk"] == {
        "name": "Ada L",
        "articles": [
            {"id": 10, "title": "A1", "views": 105},
            {"id": 11, "title": "A2!", "views": 0},
            {"id": 12, "title": "A3", "views": 107},
        ],
    }
    # author 2's article matched `views > 4`? no (3), and it is not related anyway
    assert sql(srv, "SELECT views FROM article WHERE id = 20") == [["3"]]


def test_array_update_joins_each_parent(srv: ServerProcess) -> None:
    """`update_x` (many rows): each updated author's own articles are updated, and only
    theirs; `affected_rows` counts every row written at every level."""
    sql(srv, "UPDATE article SET views = 0 WHERE id = 20")
    data = ok(
        srv,
        """mutation { update_author(where: {id: {_in: [2]}}, _inc: {rating: 1},
             _nested: {articles: {_update: [{where: {}, _set: {title: "T"}}]}}) {
             affected_rows returning { id rating articles { title } } } }""",
    )
    assert data["update_author"] == {
        "affected_rows": 2,
        "returning": [{"id": 2, "rating": 3, "articles": [{"title": "T"}]}],
    }
    assert sql(srv, "SELECT count(*) FROM article WHERE title = 'T'") == [["1"]]


def test_array_delete_update_insert_in_order(srv: ServerProcess) -> None:
    """`_delete`, then `_update`, then `_insert` (its relationship column filled from the
    parent): the update does not see the inserted row, the deleted row is gone."""
    data = ok(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: {
               _delete: {id: {_eq: 12}},
               _update: [{where: {}, _inc: {views: 1}}],
               _insert: {data: [{id: 13, title: "new"}]}}}) {
             id articles(order_by: {id: asc}) { id title views } } }""",
    )
    assert data["update_author_by_pk"]["articles"] == [
        {"id": 10, "title": "A1", "views": 6},
        {"id": 11, "title": "A2", "views": 1},
        {"id": 13, "title": "new", "views": 0},
    ]
    # only `_nested`: the author row is read, not written
    assert sql(srv, "SELECT name, rating FROM author WHERE id = 1") == [["Ada", "1"]]


def test_update_many_with_nested(srv: ServerProcess) -> None:
    """Each of `update_x_many`'s updates may carry `_nested`; each answers its own
    writes; an error is located at its update's index."""
    data = ok(
        srv,
        """mutation { update_author_many(updates: [
             {where: {id: {_eq: 1}}, _inc: {rating: 1},
              _nested: {articles: {_update: [{where: {id: {_eq: 10}}, _set: {title: "m1"}}]}}},
             {where: {id: {_eq: 2}}, _set: {name: "B2"}}]) {
             affected_rows returning { name
               articles(where: {id: {_in: [10, 20]}}) { title } } } }""",
    )
    assert data["update_author_many"] == [
        {"affected_rows": 2, "returning": [{"name": "Ada", "articles": [{"title": "m1"}]}]},
        {"affected_rows": 1, "returning": [{"name": "B2", "articles": [{"title": "B1"}]}]},
    ]
    err = error(
        srv,
        """mutation { update_author_many(updates: [
             {where: {id: {_eq: 2}}, _set: {name: "x"}},
             {where: {id: {_eq: 1}}, _nested: {articles: {_update: [
               {where: {id: {_eq: 11}}, _set: {views: -5}}]}}}]) { affected_rows } }""",
        USER,
    )
    assert err["extensions"] == {
        "code": "permission-error",
        "path": "$.selectionSet.update_author_many.args.updates[1]._nested.articles._update[0]",
    }, err
    assert sql(srv, "SELECT name FROM author WHERE id = 2") == [["B2"]]


def test_affected_rows_counts_nested_writes(srv: ServerProcess) -> None:
    data = ok(
        srv,
        """mutation { update_author(where: {id: {_eq: 1}}, _set: {rating: 4}, _nested: {
             articles: {_delete: {id: {_eq: 12}}, _insert: {data: [{id: 14, title: "x"},
             {id: 15, title: "y"}]}}}) { affected_rows } }""",
    )
    assert data == {"update_author": {"affected_rows": 4}}  # 1 updated, 1 deleted, 2 inserted


# -- object relationships and depth ---------------------------------------------------------
def test_object_relationship_update(srv: ServerProcess) -> None:
    data = ok(
        srv,
        """mutation { update_article_by_pk(pk_columns: {id: 20}, _set: {views: 9},
             _nested: {author: {_set: {name: "Bobby"}, _inc: {rating: 5}}}) {
             views author { name rating } } }""",
    )
    assert data["update_article_by_pk"] == {
        "views": 9,
        "author": {"name": "Bobby", "rating": 7},
    }
    assert sql(srv, "SELECT name FROM author ORDER BY id") == [["Ada"], ["Bobby"]]


def test_nested_levels_and_variables(srv: ServerProcess) -> None:
    """A nested level's own `_nested`, values from variables (the whole `_nested` too)."""
    data = ok(
        srv,
        """mutation m($nested: author_nested_update_input, $t: String) {
             update_article_by_pk(pk_columns: {id: 10}, _set: {title: $t}, _nested: {
               author: {_nested: {articles: {_update: [{where: {id: {_eq: 11}},
                 _set: {title: $t}}]}}}}) { id }
             update_author_by_pk(pk_columns: {id: 2}, _nested: $nested) {
               articles { title } } }""",
        variables={
            "t": "via variables",
            "nested": {"articles": {"_update": [{"where": {}, "_set": {"title": "Z"}}]}},
        },
    )
    assert data["update_author_by_pk"] == {"articles": [{"title": "Z"}]}
    assert sql(srv, "SELECT id, title FROM article WHERE id IN (10, 11) ORDER BY id") == [
        ["10", "via variables"],
        ["11", "via variables"],
    ]


def test_three_levels_with_a_read_only_middle(srv: ServerProcess) -> None:
    """author → articles (only `_nested`: read, not written) → notes (updated); the
    answer reads the notes as written."""
    data = ok(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {rating: 3},
             _nested: {articles: {_update: [{where: {id: {_eq: 10}},
               _nested: {notes: {_update: [{where: {}, _set: {body: "n1!"}}],
                                 _insert: {data: [{body: "n2"}]}}}}]}}) {
             rating articles(where: {id: {_eq: 10}}) { title notes(order_by: {id: asc}) {
               body } } } }""",
    )
    assert data["update_author_by_pk"] == {
        "rating": 3,
        "articles": [{"title": "A1", "notes": [{"body": "n1!"}, {"body": "n2"}]}],
    }


def test_no_matching_parent_writes_nothing(srv: ServerProcess) -> None:
    data = ok(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 99}, _set: {name: "x"},
             _nested: {articles: {_insert: {data: [{id: 30, title: "orphan"}]}}}) { id } }""",
    )
    assert data == {"update_author_by_pk": None}
    assert sql(srv, "SELECT count(*) FROM article WHERE id = 30") == [["0"]]


# -- permissions ----------------------------------------------------------------------------
def _args_of(srv: ServerProcess, headers: dict[str, str], field: str) -> set[str]:
    body = ok(srv, "{ __schema { mutationType { fields { name args { name } } } } }", headers)
    fields = body["__schema"]["mutationType"]["fields"]
    return {a["name"] for f in fields if f["name"] == field for a in f["args"]}


def _input_fields(srv: ServerProcess, headers: dict[str, str], name: str) -> Any:
    body = ok(srv, f'{{ __type(name: "{name}") {{ inputFields {{ name }} }} }}', headers)
    t = body["__type"]
    return None if t is None else {f["name"] for f in t["inputFields"]}


def test_schema_per_role(srv: ServerProcess) -> None:
    """The reader may update authors but nothing related: no `_nested`, no input type;
    the editor sees what its article permissions allow, and only updatable columns."""
    assert "_nested" not in _args_of(srv, READER, "update_author_by_pk")
    assert _input_fields(srv, READER, "author_nested_update_input") is None
    assert "_nested" in _args_of(srv, USER, "update_author_by_pk")
    assert "_nested" in _args_of(srv, USER, "update_author")
    assert "_nested" in _input_fields(srv, USER, "author_updates")  # update_author_many
    assert "_nested" not in _input_fields(srv, READER, "author_updates")
    assert _input_fields(srv, USER, "author_nested_update_input") == {"articles"}
    assert _input_fields(srv, USER, "article_arr_rel_update_input") == {
        "_delete",
        "_update",
        "_insert",
    }
    assert _input_fields(srv, USER, "article_set_input") == {"title", "views"}
    # article's relationships: author (updatable) and notes (nothing allowed: absent)
    assert _input_fields(srv, USER, "article_nested_update_input") == {"author"}
    assert _input_fields(srv, USER, "author_obj_rel_update_input") == {
        "_set",
        "_inc",
        "_nested",
    }
    # titler: update only (no `_insert`, `_delete`), its one column, no numeric `_inc`
    titler = {"x-svc-role": "titler"}
    assert _input_fields(srv, titler, "article_arr_rel_update_input") == {"_update"}
    assert _input_fields(srv, titler, "article_arr_rel_updates") == {"where", "_set", "_nested"}
    assert _input_fields(srv, titler, "article_set_input") == {"title"}
    assert _input_fields(srv, titler, "author_obj_rel_update_input") == {"_set", "_nested"}


def test_reader_using_nested_is_a_validation_error(srv: ServerProcess) -> None:
    err = error(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "x"},
             _nested: {articles: {_update: [{where: {}, _set: {title: "t"}}]}}) { id } }""",
        READER,
    )
    # svc's answer for any unknown argument (its GraphQL validation's message and path)
    assert err == {
        "message": "Unknown argument '_nested' on field 'mutation_root.update_author_by_pk'.",
        "extensions": {"code": "validation-failed", "path": "$"},
    }, err
    assert sql(srv, "SELECT name FROM author WHERE id = 1") == [["Ada"]]


def test_editor_column_not_updatable_is_a_validation_error(srv: ServerProcess) -> None:
    err = error(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: {
             _update: [{where: {}, _set: {author_id: 2}}]}}) { id } }""",
        USER,
    )
    assert err == {
        "message": "Field 'author_id' is not defined by type 'article_set_input'.",
        "extensions": {"code": "validation-failed", "path": "$"},
    }, err


def test_editor_filter_and_preset(srv: ServerProcess) -> None:
    """The role's update filter bounds the nested rows (author 2's article is not the
    editor's to update), and its preset is written on each updated related row."""
    ok(
        srv,
        """mutation { a: update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: {
               _update: [{where: {id: {_eq: 10}}, _set: {title: "mine"}}]}}) { id }
             b: update_author_by_pk(pk_columns: {id: 2}, _nested: {articles: {
               _update: [{where: {}, _set: {title: "theirs"}}]}}) { id } }""",
        USER,
    )
    assert sql(srv, "SELECT id, title, editor FROM article WHERE id IN (10, 20) ORDER BY id") == [
        ["10", "mine", "7"],
        ["20", "B1", "NULL"],
    ]


def test_failed_nested_check_rolls_back_parent(srv: ServerProcess) -> None:
    """The nested row fails the editor's check (views < 0): `permission-error`, and the
    parent's update (and everything else of the request) is not written."""
    err = error(
        srv,
        """mutation { first: update_author_by_pk(pk_columns: {id: 2}, _set: {name: "B!"}) { id }
             update_author_by_pk(pk_columns: {id: 1}, _set: {name: "rolled back"},
             _nested: {articles: {_update: [{where: {id: {_eq: 10}}, _set: {views: -1}}]}}) {
             id } }""",
        USER,
    )
    assert err["message"] == "check constraint of an update permission has failed"
    assert err["extensions"] == {
        "code": "permission-error",
        "path": "$.selectionSet.update_author_by_pk.args._nested.articles._update[0]",
    }
    assert sql(srv, "SELECT name FROM author ORDER BY id") == [["Ada"], ["Bob"]]
    assert sql(srv, "SELECT views FROM article WHERE id = 10") == [["5"]]


def test_failed_object_check_rolls_back_parent(srv: ServerProcess) -> None:
    """The related author fails its check after the article was updated: nothing stays;
    the error is at the relationship's input (an alias names the field)."""
    err = error(
        srv,
        """mutation { up: update_article_by_pk(pk_columns: {id: 10}, _set: {title: "t"},
             _nested: {author: {_set: {rating: 11}}}) { id } }""",
        USER,
    )
    assert err["extensions"] == {
        "code": "permission-error",
        "path": "$.selectionSet.up.args._nested.author",
    }, err
    assert sql(srv, "SELECT title FROM article WHERE id = 10") == [["A1"]]
    assert sql(srv, "SELECT rating FROM author WHERE id = 1") == [["1"]]


def test_failed_root_check_stops_before_nested_writes(srv: ServerProcess) -> None:
    """The root row's check fails (a plain update's error and path): the nested level
    never runs."""
    err = error(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {rating: 11},
             _nested: {articles: {_update: [{where: {}, _set: {title: "no"}}]}}) { id } }""",
        USER,
    )
    assert err["message"] == "check constraint of an update permission has failed", err
    assert err["extensions"] == {"code": "permission-error", "path": "$.selectionSet"}, err
    assert sql(srv, "SELECT count(*) FROM article WHERE title = 'no'") == [["0"]]


def test_nested_insert_check_and_delete_filter(srv: ServerProcess) -> None:
    """`_insert` applies the insert check (title "bad" fails it); `_delete` the delete
    filter (only unviewed articles go)."""
    err = error(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {rating: 2},
             _nested: {articles: {_insert: {data: [{id: 40, title: "bad"}]}}}) { id } }""",
        USER,
    )
    assert err["message"] == "check constraint of an insert permission has failed", err
    assert err["extensions"] == {
        "code": "permission-error",
        "path": "$.selectionSet.update_author_by_pk.args._nested.articles._insert",
    }, err
    assert sql(srv, "SELECT rating FROM author WHERE id = 1") == [["1"]]
    data = ok(
        srv,
        """mutation { update_author(where: {id: {_eq: 1}}, _nested: {articles: {
             _delete: {}}}) { affected_rows } }""",
        USER,
    )
    assert data == {"update_author": {"affected_rows": 1}}
    assert sql(srv, "SELECT id FROM article WHERE author_id = 1 ORDER BY id") == [["10"], ["12"]]


def test_constraint_violation_rolls_back(srv: ServerProcess) -> None:
    err = error(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "x"},
             _nested: {articles: {_insert: {data: [{id: 20, title: "dup"}]}}}) { id } }""",
    )
    assert err["extensions"]["code"] == "constraint-violation", err
    assert err["extensions"]["path"] == (
        "$.selectionSet.update_author_by_pk.args._nested.articles._insert"
    ), err
    assert err["message"] == 'duplicate key value violates unique constraint "article_pkey"'
    assert sql(srv, "SELECT name FROM author WHERE id = 1") == [["Ada"]]


def test_level_without_operator_is_refused(srv: ServerProcess) -> None:
    err = error(
        srv,
        """mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: {
             _update: [{where: {}}]}}) { id } }""",
    )
    assert err["extensions"]["code"] == "validation-failed", err
    assert err["message"].startswith("at least any one of _set, _inc"), err


# -- event triggers -------------------------------------------------------------------------
def test_event_triggers_see_nested_rows_and_not_rolled_back_ones(srv: ServerProcess) -> None:
    r = srv.query(
        {
            "type": "create_event_trigger",
            "args": {
                "name": "article_changes",
                "table": "article",
                "webhook": "http://127.0.0.1:9/unreachable",
                "update": {"columns": "*"},
                "insert": {"columns": "*"},
                "retry_conf": {"num_retries": 0},
            },
        }
    )
    assert r.status_code == 200, r.text
    try:
        count = "SELECT count(*) FROM hdb_catalog.event_log WHERE trigger_name = 'article_changes'"
        ok(
            srv,
            """mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: {
                 _update: [{where: {id: {_in: [10, 11]}}, _set: {title: "ev"}}],
                 _insert: {data: [{id: 16, title: "ev new"}]}}}) { id } }""",
        )
        rows = sql(
            srv,
            "SELECT (payload->'data'->'new'->>'id')::int, payload->>'op' "
            "FROM hdb_catalog.event_log WHERE trigger_name = 'article_changes' ORDER BY 1",
        )
        assert rows == [["10", "UPDATE"], ["11", "UPDATE"], ["16", "INSERT"]]
        error(
            srv,
            """mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: {
                 _update: [{where: {id: {_eq: 10}}, _set: {title: "again"}}],
                 _insert: {data: [{id: 20, title: "dup"}]}}}) { id } }""",
        )
        assert sql(srv, count) == [["3"]]
    finally:
        srv.query({"type": "delete_event_trigger", "args": {"name": "article_changes"}})


# -- input validation webhooks ----------------------------------------------------------------
class _Hook(http.server.BaseHTTPRequestHandler):
    """Records each body; refuses (400 `{"message"}`) an input naming the title "no"."""

    bodies: list[tuple[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Hook.bodies.append((self.path, body["data"]["input"]))
        refused = '"no"' in json.dumps(body["data"]["input"])
        out = json.dumps({"message": "title no is refused"}).encode()
        self.send_response(400 if refused else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def test_nested_writes_call_their_tables_webhooks(pg_url: str) -> None:
    """The update webhook of each related table a nested update writes is called after
    the root's, with that write's input; a refusal writes nothing."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def validate(path: str) -> dict[str, Any]:
        return {"type": "http", "definition": {"url": base + path}}

    steps = [
        s
        for s in _steps()
        if s["type"] != "create_update_permission" or s["args"]["role"] != "editor"
    ]
    steps += [
        _perm(
            "update",
            "author",
            "editor",
            {"columns": ["name"], "filter": {}, "validate_input": validate("/author")},
        ),
        _perm(
            "update",
            "article",
            "editor",
            {"columns": ["title"], "filter": {}, "validate_input": validate("/article")},
        ),
    ]
    s = ServerProcess(create_database(pg_url))
    try:
        r = s.query({"type": "bulk", "args": steps})
        assert r.status_code == 200, r.text
        sql(s, SEED)
        query = """mutation($t: String!) { update_author_by_pk(pk_columns: {id: 1},
             _set: {name: "N"}, _nested: {articles: {_update: [{where: {id: {_eq: 10}},
             _set: {title: $t}}]}}) { id } }"""
        assert ok(s, query, USER, variables={"t": "yes"}) == {"update_author_by_pk": {"id": 1}}
        assert [p for p, _ in _Hook.bodies] == ["/author", "/article"]
        assert _Hook.bodies[1][1] == [{"where": {"id": {"_eq": 10}}, "_set": {"title": "yes"}}]
        body = s.graphql(query, {"t": "no"}, headers=USER)
        assert body["errors"][0]["message"] == "title no is refused", body
        assert body["errors"][0]["extensions"]["code"] == "validation-failed", body
        assert sql(s, "SELECT title FROM article WHERE id = 10") == [["yes"]]
    finally:
        s.stop()
        server.shutdown()
