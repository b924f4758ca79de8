"""The Apollo-style remote schemas: `node_4000` (remote relationships, FIXTURES.md §8) and
`node_4020` to `node_4022` (remote schema permissions, §7.3), written with graphql-core.

Apollo Server 2 answers a query that does not validate with HTTP 400, and its errors carry
only `message`, `locations` and `path` (`Endpoint.status_on_invalid`, `_error`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from graphql import GraphQLError, GraphQLSchema, build_schema

from tests.fixture_servers.remote_graphql import Endpoint, GraphQLHttp, resolvers

COMMON_SDL = """
type User {
  user_id: %(id)s
  userMessages(whered: MessageWhereInpObj, includes: IncludeInpObj): [Message]
  gimmeText(text: String): String
}
interface Communication { id: Int!  msg: String! }
type Message implements Communication { id: Int!  name: String!  msg: String!  errorMsg: String }
input MessageWhereInpObj { id: IntCompareObj  name: StringCompareObj }
input IntCompareObj { eq: Int  gt: Int  lt: Int }
input StringCompareObj { eq: String }
input IncludeInpObj { id: [Int]  name: [String] }
"""

NODE_4000_SDL = (
    COMMON_SDL % {"id": "Int"}
    + """
union SearchResult = Book | Author
type Book { title: String }
type Author { name: String }
enum Occupation { SINGER COMEDIAN ARTIST }
type Query {
  hello: String
  messages(where: MessageWhereInpObj, includes: IncludeInpObj): [Message]
  user(user_id: ID!): User
  users(user_ids: [ID]!): [User]
  message(id: Int!): Message
  communications(id: Int): [Communication]
  search(id: Int!): SearchResult
  getOccupation(name: ID!): Occupation!
  getGrade(marks: Int!): String
}"""
)

PERMS_SDL = """
enum MessageStatus { READ DELIVERED SENT }
interface Name { firstName: String  lastName: String }
type Person implements Name { firstName: String  lastName: String  age: Int }
input Dimensions { height: Int  width: Int }
type Photo { height: Int  width: Int }
type SearchQuery { firstSearchResult: SearchResult }
union SearchResult = Photo | Person
type Query {
  hello: String
  messages(where: MessageWhereInpObj, includes: IncludeInpObj): [Message]
  user(user_id: %(id)s!): User
  users(user_ids: [%(id)s]!): [User]
  message(id: Int!): Message
  communications(id: Int): [Communication]
  profilePicture(dimensions: Dimensions): Photo
}"""

MESSAGES = [
    {"id": 1, "name": "alice", "msg": "You win!"},
    {"id": 2, "name": "bob", "msg": "You lose!"},
    {"id": 3, "name": "alice", "msg": "Another alice"},
]
SEARCH = {
    1: {"__typename": "Book", "title": "Harry Porter and the prisoner of Azkaban"},
    2: {"__typename": "Author", "name": "J.K. Rowling"},
    3: {"__typename": "Book", "title": "Harry Porter and the philoshoper's stone"},
}


def _filter(messages: list[dict[str, Any]], where: Any, includes: Any) -> list[dict[str, Any]]:
    """`messages` kept by `where` (id eq/gt/lt, name eq) and `includes` (id/name lists)."""
    out = []
    for m in messages:
        ids = (where or {}).get("id") or {}
        if "eq" in ids and ids["eq"] is not None and m["id"] != ids["eq"]:
            continue
        if ids.get("gt") is not None and not m["id"] > ids["gt"]:
            continue
        if ids.get("lt") is not None and not m["id"] < ids["lt"]:
            continue
        name = ((where or {}).get("name") or {}).get("eq")
        if name is not None and m["name"] != name:
            continue
        inc = includes or {}
        if inc.get("id") is not None and m["id"] not in inc["id"]:
            continue
        if inc.get("name") is not None and m["name"] not in inc["name"]:
            continue
        out.append(m)
    return out


def _user(user_id: Any) -> dict[str, Any]:
    return {"user_id": int(float(user_id)) if isinstance(user_id, str) else user_id}


def _common(schema: GraphQLSchema) -> None:
    def user_messages(user: Any, _: Any, whered: Any = None, includes: Any = None) -> Any:
        own = [m for m in MESSAGES if m["id"] == user["user_id"]]
        return _filter(own, whered, includes)

    def error_msg(*_: Any) -> Any:
        raise GraphQLError("intentional-error")

    def communications(_: Any, __: Any, id: int | None = None) -> Any:
        return [m for m in MESSAGES if id is None or m["id"] == id]

    schema.get_type("Communication").resolve_type = lambda *_: "Message"  # type: ignore[union-attr]
    resolvers(
        schema,
        {
            "User": {
                "userMessages": user_messages,
                "gimmeText": lambda _, __, text=None: text or "no text",
            },
            "Message": {"errorMsg": error_msg},
            "Query": {
                "hello": lambda *_: "world",
                "messages": lambda _, __, where=None, includes=None: _filter(
                    MESSAGES, where, includes
                ),
                "user": lambda _, __, user_id: _user(user_id),
                "users": lambda _, __, user_ids: [_user(u) for u in user_ids],
                "message": lambda _, __, id: next((m for m in MESSAGES if m["id"] == id), None),
                "communications": communications,
            },
        },
    )


def node_4000() -> GraphQLSchema:
    """The remote-relationship schema of FIXTURES.md §8."""
    schema = build_schema(NODE_4000_SDL)
    _common(schema)

    def occupation(_: Any, __: Any, name: str) -> str:
        found = {"alice": "SINGER", "bob": "ARTIST"}.get(name)
        if found is None:
            raise GraphQLError(f"invalid argument - {name}")
        return found

    def grade(_: Any, __: Any, marks: int) -> str:
        return "S" if marks > 90 else "A" if marks > 80 else "B"

    schema.get_type("SearchResult").resolve_type = lambda obj, *_: obj["__typename"]  # type: ignore[union-attr]
    resolvers(
        schema,
        {
            "Query": {
                "search": lambda _, __, id: SEARCH.get(id),
                "getOccupation": occupation,
                "getGrade": grade,
            }
        },
    )
    return schema


def node_perms(id_type: str) -> GraphQLSchema:
    """The remote-schema-permission schema of FIXTURES.md §7.3 (`user_id` of `id_type`)."""
    schema = build_schema(COMMON_SDL % {"id": id_type} + PERMS_SDL % {"id": id_type})
    _common(schema)
    schema.get_type("SearchResult").resolve_type = lambda *_: "Photo"  # type: ignore[union-attr]
    resolvers(schema, {"Query": {"profilePicture": lambda _, __, dimensions=None: dimensions}})
    return schema


SERVERS: dict[str, GraphQLHttp] = {}


def _apollo(schema: GraphQLSchema) -> dict[str, Endpoint]:
    return {"/": Endpoint(schema, status_on_invalid=400)}


@contextlib.contextmanager
def serve() -> Iterator[object]:
    """`node_4000`, `node_4020`, `node_4021` and `node_4022` on their ports."""
    started = {
        "node_4000": GraphQLHttp(4000, _apollo(node_4000())),
        "node_4020": GraphQLHttp(4020, _apollo(node_perms("Int"))),
        "node_4021": GraphQLHttp(4021, _apollo(node_perms("Int"))),
        "node_4022": GraphQLHttp(4022, _apollo(node_perms("Float"))),
    }
    for server in started.values():
        server.start()
    SERVERS.update(started)
    try:
        yield SERVERS
    finally:
        for server in started.values():
            server.stop()
