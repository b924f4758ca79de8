"""Nested updates (README "Nested updates"): presets of a related insert, exact values,
domains, bounded work; against a real `svc serve` and Postgres."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

SCHEMA = """
CREATE DOMAIN nn_text AS text NOT NULL;
CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL, code nn_text);
CREATE TABLE article (id int PRIMARY KEY, title text NOT NULL,
  author_id int NOT NULL REFERENCES author(id), views int NOT NULL DEFAULT 0);
CREATE TABLE wallet (id int PRIMARY KEY, amount numeric(30,10) NOT NULL,
  big bigint NOT NULL DEFAULT 0, f float8 NOT NULL DEFAULT 0, label text);
CREATE TABLE entry (id int PRIMARY KEY, wallet_id int NOT NULL REFERENCES wallet(id),
  n int NOT NULL DEFAULT 0, amount numeric(30,10));
"""
SEED = """
DELETE FROM entry; DELETE FROM wallet; DELETE FROM article; DELETE FROM author;
INSERT INTO author VALUES (1, 'Ada', 'a'), (2, 'Bob', 'b');
INSERT INTO article VALUES (10, 'A1', 1, 0);
INSERT INTO wallet VALUES (1, 12345678901234567890.1234567891, 9007199254740993,
  0.1000000000000000055511151231257827, 'w');
INSERT INTO entry VALUES (100, 1, 0, 98765432109876543210.0123456789);
"""
INS = {"x-svc-role": "ins", "x-svc-user-id": "1"}


def _rel(kind: str, table: str, name: str, using: Any) -> dict[str, Any]:
    return {
        "type": f"create_{kind}_relationship",
        "args": {"table": table, "name": name, "using": using},
    }


def _perm(kind: str, table: str, permission: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": f"create_{kind}_permission",
        "args": {"table": table, "role": "ins", "permission": permission},
    }


def _steps() -> list[dict[str, Any]]:
    articles = {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}}
    entries = {"foreign_key_constraint_on": {"table": "entry", "column": "wallet_id"}}
    return [
        {"type": "run_sql", "args": {"sql": SCHEMA}},
        *({"type": "track_table", "args": t} for t in ["author", "article", "wallet", "entry"]),
        _rel("object", "article", "author", {"foreign_key_constraint_on": "author_id"}),
        _rel("array", "author", "articles", articles),
        _rel("array", "wallet", "entries", entries),
        _rel("object", "entry", "wallet", {"foreign_key_constraint_on": "wallet_id"}),
        _perm("select", "author", {"columns": "*", "filter": {}}),
        _perm("select", "article", {"columns": "*", "filter": {}}),
        _perm("update", "author", {"columns": ["name"], "filter": {}}),
        _perm("insert", "author", {"columns": ["id", "name", "code"], "check": {}}),
        # `ins` inserts articles only under its own author (the preset)
        _perm(
            "insert",
            "article",
            {"columns": ["id", "title"], "set": {"author_id": "x-svc-user-id"}, "check": {}},
        ),
    ]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(
        create_database(pg_url),
        env={"SVC_GRAPHQL_SERVER_WORKERS": "1", "SVC_GRAPHQL_MAX_LIST_ITEMS": "50"},
    )
    try:
        r = s.query({"type": "bulk", "args": _steps()})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


@pytest.fixture(autouse=True)
def seed(srv: ServerProcess) -> None:
    r = srv.query({"type": "run_sql", "args": {"sql": SEED}})
    assert r.status_code == 200, r.text


def gql(
    srv: ServerProcess,
    query: str,
    headers: dict[str, str] | None = None,
    variables: dict[str, Any] | None = None,
) -> Any:
    r = srv.client.post(
        "/v1/graphql", json={"query": query, "variables": variables or {}}, headers=headers or {}
    )
    assert r.status_code == 200, r.text
    return r.json()


def sql(srv: ServerProcess, text: str) -> list[list[str]]:
    r = srv.query({"type": "run_sql", "args": {"sql": text}})
    assert r.status_code == 200, r.text
    return (r.json().get("result") or [None])[1:]  # type: ignore[no-any-return]


NESTED_INSERT = """mutation($id: Int!) {
  update_author_by_pk(pk_columns: {id: $id}, _set: {name: "B"},
    _nested: {articles: {_insert: {data: [{id: 99, title: "t"}]}}}) {
    id articles(order_by: {id: asc}) { id author_id } } }"""


def test_nested_update_insert_cannot_escape_preset(srv: ServerProcess) -> None:
    """The parent (author 2, which the role may update) sets `author_id`, but the role's
    insert preset pins it to its session's user (1): refused, nothing written."""
    body = gql(srv, NESTED_INSERT, INS, {"id": 2})
    assert body["errors"][0]["extensions"]["code"] == "permission-error", body
    assert body["errors"][0]["message"] == "check constraint of an insert permission has failed"
    assert body["errors"][0]["extensions"]["path"] == (
        "$.selectionSet.update_author_by_pk.args._nested.articles._insert"
    )
    assert sql(srv, "SELECT count(*) FROM article WHERE id = 99") == [["0"]]
    assert sql(srv, "SELECT name FROM author WHERE id = 2") == [["Bob"]]


def test_nested_update_insert_under_preset_parent(srv: ServerProcess) -> None:
    body = gql(srv, NESTED_INSERT, INS, {"id": 1})
    assert body == {
        "data": {
            "update_author_by_pk": {
                "id": 1,
                "articles": [{"id": 10, "author_id": 1}, {"id": 99, "author_id": 1}],
            }
        }
    }


def test_nested_insert_parent_wins_over_preset(srv: ServerProcess) -> None:
    """A nested insert (`insert_x` with an array relationship) follows the reference: the
    parent's key fills the relationship column over the preset
    (`Hasura.Backends.Postgres.Execute.Insert.insertArrRel`, `mkSQLRow`); the check
    decides (here none)."""
    q = """mutation { insert_author_one(object: {id: 3, name: "C", code: "c",
      articles: {data: [{id: 98, title: "t"}]}}) { id articles { id author_id } } }"""
    body = gql(srv, q, INS)
    assert body == {
        "data": {"insert_author_one": {"id": 3, "articles": [{"id": 98, "author_id": 3}]}}
    }


WALLET = "{ amount big f entries(order_by: {id: asc}) { id amount n } }"


def _wallet_text(srv: ServerProcess, query: str) -> str:
    r = srv.client.post("/v1/graphql", json={"query": query})
    assert r.status_code == 200 and "errors" not in r.json(), r.text
    return r.text


def test_nested_update_answer_keeps_every_digit(srv: ServerProcess) -> None:
    """numeric(30,10), bigint beyond 2^53 and float8 come back as a plain update (and a
    query) answers them: the rows pass between statements as Postgres' JSON text."""
    plain = _wallet_text(srv, f"query {{ wallet_by_pk(id: 1) {WALLET} }}")
    nested = _wallet_text(
        srv,
        'mutation { update_wallet_by_pk(pk_columns: {id: 1}, _set: {label: "y"},'
        " _nested: {entries: {_update: [{where: {}, _inc: {n: 1}}]}}) "
        + WALLET.replace("n }", "}")
        + " }",
    )
    assert "12345678901234567890.1234567891" in plain
    assert "9007199254740993" in plain
    assert "98765432109876543210.0123456789" in nested
    # compared as text: a JSON decoder would round both alike
    amount = '"amount":12345678901234567890.1234567891'
    assert amount in plain and amount in nested
    assert '"big":9007199254740993' in nested
    assert '"f":' + plain.split('"f":')[1].split(",")[0] in nested


def test_nested_insert_answer_keeps_every_digit(srv: ServerProcess) -> None:
    """A nested insert (`insert_x` through a relationship) answers the values written,
    digit for digit, and fills the children's keys from the parent's exact values."""
    q = """mutation { insert_wallet_one(object: {id: 2, amount: "12345678901234567890.1234567891",
      big: "9007199254740993", f: 0.1, entries: {data: [{id: 200}]}}) {
      amount big f entries { id wallet { big } } } }"""
    text = _wallet_text(srv, q)
    assert '"amount":12345678901234567890.1234567891' in text
    assert '"big":9007199254740993' in text
    assert text.count("9007199254740993") == 2
    assert '"f":0.1' in text


def test_parent_with_not_null_domain_column(srv: ServerProcess) -> None:
    """The parents of a related level are read with the relationship's columns only
    (`json_to_recordset` with their types), so a NOT NULL domain column of the parent
    table (`author.code`) is not rebuilt as NULL."""
    q = """mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "B"},
      _nested: {articles: {_update: [{where: {}, _inc: {views: 1}}]}}) {
      name articles { views } } }"""
    assert gql(srv, q) == {
        "data": {"update_author_by_pk": {"name": "B", "articles": [{"views": 1}]}}
    }


INSERT_ENTRIES = """mutation($rows: [entry_insert_input!]!) {
  update_wallet(where: {}, _set: {label: "z"}, _nested: {entries: {_insert: {data: $rows}}}) {
    affected_rows } }"""


def test_insert_rows_times_parents_bounded(srv: ServerProcess) -> None:
    """An `_insert` writes its rows once per matched row: 2 wallets x 30 rows is more than
    `SVC_GRAPHQL_MAX_LIST_ITEMS` (50 here), refused before anything is written."""
    sql(srv, "INSERT INTO wallet (id, amount) VALUES (3, 1)")
    rows = [{"n": i} for i in range(30)]
    body = gql(srv, INSERT_ENTRIES, None, {"rows": rows})
    error = body["errors"][0]
    assert error["extensions"] == {
        "code": "validation-failed",
        "path": "$.selectionSet.update_wallet.args._nested.entries._insert",
    }
    assert "60 rows" in error["message"] and "SVC_GRAPHQL_MAX_LIST_ITEMS" in error["message"]
    assert sql(srv, "SELECT count(*), max(label) FROM wallet") == [["2", "w"]]


def test_insert_rows_times_parents_in_one_statement(srv: ServerProcess) -> None:
    """Within the bound, 2 wallets x 20 rows: 40 rows written, counted, keys from each
    parent."""
    sql(srv, "INSERT INTO wallet (id, amount) VALUES (3, 1)")
    sql(srv, "CREATE SEQUENCE IF NOT EXISTS entry_ids START 1000")
    sql(srv, "ALTER TABLE entry ALTER COLUMN id SET DEFAULT nextval('entry_ids')")
    rows = [{"n": i} for i in range(20)]
    body = gql(srv, INSERT_ENTRIES, None, {"rows": rows})
    assert body == {"data": {"update_wallet": {"affected_rows": 42}}}
    assert sql(srv, "SELECT wallet_id, count(*) FROM entry GROUP BY 1 ORDER BY 1") == [
        ["1", "21"],
        ["3", "20"],
    ]


class _Hook(http.server.BaseHTTPRequestHandler):
    """An input validation webhook that records each input and accepts it."""

    inputs: list[Any] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Hook.inputs.append(body["data"]["input"])
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def test_delete_null_calls_no_delete_webhook(pg_url: str) -> None:
    """`_delete: null` deletes nothing, so the delete permission's input validation
    webhook is not called (a `_delete` given is, with its `where`)."""
    hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{hook.server_address[1]}/delete"
    validate = {"type": "http", "definition": {"url": url}}
    steps = [*_steps(), _perm("delete", "article", {"filter": {}, "validate_input": validate})]
    s = ServerProcess(create_database(pg_url), env={"SVC_GRAPHQL_SERVER_WORKERS": "1"})
    try:
        r = s.query({"type": "bulk", "args": steps})
        assert r.status_code == 200, r.text
        sql(s, SEED)
        q = """mutation($d: article_bool_exp) { update_author_by_pk(pk_columns: {id: 1},
          _set: {name: "N"}, _nested: {articles: {_delete: $d}}) { id } }"""
        assert gql(s, q, INS, {"d": None}) == {"data": {"update_author_by_pk": {"id": 1}}}
        assert _Hook.inputs == []
        assert gql(s, q, INS, {"d": {"id": {"_eq": 10}}}) == {
            "data": {"update_author_by_pk": {"id": 1}}
        }
        assert _Hook.inputs == [[{"where": {"id": {"_eq": 10}}}]]
    finally:
        s.stop()
        hook.shutdown()
