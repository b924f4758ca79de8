"""Remote GraphQL fixture servers `graphql_5000` and `graphql_5991` (FIXTURES.md §7.1).

The reference runs graphene 2 servers by path; these answer the same with graphql-core
schemas from SDL, resolvers attached by hand. `GraphQLHttp` (also used by
`remote_node.py`) is a threaded HTTP/1.1 server on a fixed port: POST with
`Content-Type: application/json` executes against the path's schema and answers 200
`{"errors"?, "data"?}`; other content types 400; GET 405 (`/hello` 200); unknown paths
404. Every request is recorded in `requests` (path, lower-cased headers, JSON body).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from graphql import GraphQLError, GraphQLSchema, build_schema, graphql_sync

BIND_WAIT_S = 300.0  # how long `start` waits for its fixed port to be free


@dataclass
class Endpoint:
    """One path's schema and how it answers: `extra` top-level keys, extra response
    `headers`, `introspection` rewriting the introspection answer (error variants),
    `echo` (answer the request as `data.hello`), `status_on_invalid` (Apollo: 400)."""

    schema: GraphQLSchema
    root: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    introspection: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    echo: bool = False
    status_on_invalid: int = 200
    context: Callable[[list[tuple[str, str]]], Any] | None = None


@dataclass(frozen=True)
class Seen:
    """A request the server answered: path, lower-cased headers (all values), body."""

    path: str
    headers: list[tuple[str, str]]
    body: Any


class GraphQLHttp:
    """A GraphQL server on 127.0.0.1:`port` serving `endpoints` by path."""

    def __init__(self, port: int, endpoints: dict[str, Endpoint]) -> None:
        self.port = port
        self.endpoints = endpoints
        self.requests: list[Seen] = []
        self.down = False
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Listen and serve in a daemon thread (returns once listening)."""
        self.down = False
        ThreadingHTTPServer.allow_reuse_address = True
        # Another test run on this machine may hold the fixed port for a while: wait.
        deadline = time.monotonic() + BIND_WAIT_S
        while True:
            try:
                self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.down = True  # requests on kept-alive connections are hung up on
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def answer(self, path: str, headers: list[tuple[str, str]], raw: bytes) -> tuple[int, Any]:
        """(status, JSON body) for a POST of `raw` to `path`."""
        endpoint = self.endpoints[path]
        request = json.loads(raw or b"{}")
        self.requests.append(Seen(path, headers, request))
        query = request.get("query") or ""
        variables = request.get("variables")
        ctx = endpoint.context(headers) if endpoint.context else None
        result = graphql_sync(
            endpoint.schema,
            query,
            root_value=endpoint.root,
            variable_values=variables,
            operation_name=request.get("operationName"),
            context_value=ctx,
        )
        out: dict[str, Any] = {}
        if result.errors:
            out["errors"] = [_error(e) for e in result.errors]
            if result.data is None:
                return endpoint.status_on_invalid, out
        out["data"] = result.data
        if "__schema" in query and endpoint.introspection and result.data:
            out["data"] = endpoint.introspection(result.data)
        elif endpoint.echo and result.data is not None and "hello" in result.data:
            out["data"] = {**result.data, "hello": request}
        out.update(endpoint.extra)
        return 200, out


def _error(err: GraphQLError) -> dict[str, Any]:
    out: dict[str, Any] = {"message": err.message}
    if err.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in err.locations]
    if err.path:
        out["path"] = list(err.path)
    return out


def _handler(server: GraphQLHttp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            # headers and body in one write: two small writes on a kept-alive connection
            # meet the client's delayed ACK (~40 ms per request)
            self._headers_buffer.append(b"\r\n" + body)  # type: ignore[attr-defined]
            self.flush_headers()

        def do_GET(self) -> None:
            if self.path == "/hello":
                self._send(200, b"hello world", {"Content-Type": "text/plain"})
            elif self.path in server.endpoints:
                self._send(405, b"", {})
            else:
                self._send(404, b"", {})

        def do_POST(self) -> None:
            if server.down:  # stopped: hang up on kept-alive connections too
                self.close_connection = True
                return
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            endpoint = server.endpoints.get(self.path)
            if endpoint is None:
                self._send(404, b"", {})
                return
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if ctype != "application/json":
                self._send(400, b"", {})
                return
            headers = [(k.lower(), v) for k, v in self.headers.items()]
            try:
                status, body = server.answer(self.path, headers, raw)
            except Exception as exc:  # a fixture bug: answer it rather than hang up
                status, body = 500, {"fixture_error": repr(exc)}
            out = {"Content-Type": "application/json", **endpoint.headers}
            origin = self.headers.get("Origin")
            if origin:
                out["Access-Control-Allow-Origin"] = origin
                out["Access-Control-Allow-Credentials"] = "true"
                out["Access-Control-Allow-Methods"] = "GET,POST,PUT,PATCH,DELETE,OPTIONS"
            self._send(status, json.dumps(body).encode(), out)

    return Handler


def resolvers(schema: GraphQLSchema, table: dict[str, dict[str, Callable[..., Any]]]) -> None:
    """Attach `table[type][field]` as resolvers (graphql-core's `(obj, info, **args)`)."""
    for type_name, fields in table.items():
        gql_type = schema.get_type(type_name)
        for name, fn in fields.items():
            gql_type.fields[name].resolve = fn  # type: ignore[union-attr]


# -- the schemas of FIXTURES.md §7.1 ----------------------------------------------------


def _hello(type_name: str) -> GraphQLSchema:
    schema = build_schema(
        f"schema {{ query: {type_name} subscription: {type_name} }}\n"
        f'type {type_name} {{ hello(arg: String = "world"): String '
        + ('delayedHello(arg: String = "world"): String }' if type_name == "Hello" else "}")
    )

    def delayed(_: Any, __: Any, arg: str) -> str:
        time.sleep(10)
        return "Hello " + arg

    table: dict[str, Callable[..., Any]] = {"hello": lambda _, __, arg: "Hello " + arg}
    if type_name == "Hello":
        table["delayedHello"] = delayed
    resolvers(schema, {type_name: table})
    return schema


USERS: list[dict[str, Any]] = []


def _user_schema() -> GraphQLSchema:
    schema = build_schema("""
schema { query: UserQuery  mutation: UserMutation }
type User { id: Int  username: String  generateError: String }
input UserDetailsInput { id: Int!  username: String! }
type UserQuery { user(id: Int!, userInfo: [UserDetailsInput]): User  allUsers: [User] }
type CreateUser { ok: Boolean  user: User }
type CreateUserInputObject { ok: Boolean  user: User }
type UserMutation {
  createUser(id: Int!, username: String!): CreateUser
  createUserInputObj(userData: UserDetailsInput!): CreateUserInputObject
}""")
    USERS[:] = [{"id": 1, "username": "jane"}, {"id": 2, "username": "john"}]
    USERS.append({"id": 3, "username": "joe"})

    def user(_: Any, __: Any, id: int, userInfo: Any = None) -> Any:
        return next((u for u in USERS if u["id"] == id), None)

    def create(_: Any, __: Any, id: int, username: str) -> Any:
        USERS.append({"id": id, "username": username})
        return {"ok": True, "user": USERS[-1]}

    def create_obj(_: Any, __: Any, userData: dict[str, Any]) -> Any:
        USERS.append(dict(userData))
        return {"ok": True, "user": USERS[-1]}

    def error(*_: Any) -> Any:
        raise GraphQLError('Cannot query field "generateError" on type "User".')

    resolvers(
        schema,
        {
            "UserQuery": {"user": user, "allUsers": lambda *_: USERS},
            "UserMutation": {"createUser": create, "createUserInputObj": create_obj},
            "User": {"generateError": error},
        },
    )
    return schema


CHARACTER_SDL = """
interface Character { id: ID!  name: String! }
type Droid implements Character { id: ID!  name: String!  primaryFunction: String }
type Human implements Character { id: ID!  name: String!  homePlanet: String  droid: Droid }
"""
R2 = {"__typename": "Droid", "id": "1", "name": "R2-D2", "primaryFunction": "Astromech"}
LUKE = {
    "__typename": "Human",
    "id": "2",
    "name": "Luke Skywalker",
    "homePlanet": "Tatooine",
    "droid": R2,
}


def _typed(schema: GraphQLSchema, name: str) -> None:
    schema.get_type(name).resolve_type = lambda obj, *_: obj["__typename"]  # type: ignore[union-attr]


def _character_schema() -> GraphQLSchema:
    schema = build_schema(
        "schema { query: CharacterIFaceQuery }"
        + CHARACTER_SDL
        + """input CharacterInputArgs { episode: Int! }
type CharacterIFaceQuery {
  hero(episode: Int!): Character
  heroes: [Character]
  heroByArgs(arguments: CharacterInputArgs!): Character
}"""
    )
    episodes = {4: R2, 5: LUKE}
    _typed(schema, "Character")
    resolvers(
        schema,
        {
            "CharacterIFaceQuery": {
                "hero": lambda _, __, episode: episodes.get(episode),
                "heroes": lambda *_: [R2, LUKE],
                "heroByArgs": lambda _, __, arguments: episodes.get(arguments["episode"]),
            }
        },
    )
    return schema


def _union_schema() -> GraphQLSchema:
    schema = build_schema(
        "schema { query: UnionQuery }"
        + CHARACTER_SDL
        + """union CharacterSearchResult = Human | Droid
type UnionQuery { search(episode: Int!): CharacterSearchResult }"""
    )
    droid = {**R2, "id": "6"}
    human = {**LUKE, "id": "7"}
    _typed(schema, "Character")
    _typed(schema, "CharacterSearchResult")
    found = {1: droid, 2: human}
    resolvers(schema, {"UnionQuery": {"search": lambda _, __, episode: found.get(episode)}})
    return schema


def _default_echo_schema() -> GraphQLSchema:
    obj = '{width: 100, height: 100.1, shape: "cube", hasTag: false}'
    schema = build_schema(f"""
schema {{ query: EchoQuery }}
enum Color {{ RED GREEN BLUE }}
input SizeInput {{ width: Int = 100  height: Float = 100.1  shape: String = "cube"
  hasTag: Boolean = false }}
type SizeObj {{ width: Int  height: Float  shape: String  hasTag: Boolean }}
type Echo {{ intFld: Int  listFld: [String]  objFld: SizeObj  enumFld: Color }}
type EchoQuery {{
  echo(intInput: Int = 1234, listInput: [String] = ["hi", "there"],
       objInput: SizeInput = {obj},
       enumInput: Color = RED, rIntInput: Int! = 1234, rListInput: [String] = ["general", "Kenobi"],
       rObjInput: SizeInput! = {obj},
       rEnumInput: Color! = RED): Echo
}}""")

    def echo(_: Any, __: Any, **kw: Any) -> Any:
        return {
            "intFld": kw.get("intInput"),
            "listFld": kw.get("listInput"),
            "objFld": kw.get("objInput"),
            "enumFld": kw.get("enumInput"),
        }

    resolvers(schema, {"EchoQuery": {"echo": echo}})
    return schema


def _header_schema() -> GraphQLSchema:
    schema = build_schema(
        'schema { query: HeaderTest } type HeaderTest { wassup(arg: String = "world"): String }'
    )
    expected = {
        "x-svc-test": "abcd",
        "x-svc-role": "user",
        "x-svc-user-id": "abcd1234",
        "content-type": "application/json",
        "authorization": "Bearer abcdef",
    }

    def wassup(_: Any, info: Any, arg: str) -> str:
        headers: list[tuple[str, str]] = info.context
        for name, value in expected.items():
            if [v for k, v in headers if k == name] != [value]:
                raise GraphQLError(f"bad header {name}: {[v for k, v in headers if k == name]}")
        hosts = [v for k, v in headers if k == "x-forwarded-host"]
        agents = [v for k, v in headers if k == "x-forwarded-user-agent"]
        if len(hosts) != 1 or len(agents) != 1 or not agents[0].startswith("python-"):
            raise GraphQLError(f"bad forwarded headers: {hosts} {agents}")
        return "Hello " + arg

    resolvers(schema, {"HeaderTest": {"wassup": wassup}})
    return schema


def _simple(sdl: str, table: dict[str, dict[str, Callable[..., Any]]]) -> GraphQLSchema:
    schema = build_schema(sdl)
    resolvers(schema, table)
    return schema


def _big_schema() -> GraphQLSchema:
    schema = build_schema("""
schema { query: BigQuery }
interface BigInterface { hello: String }
type Big implements BigInterface {
  hello: String  big: BigInterface  many(arg: Int = 10): [BigInterface] }
type BigQuery { start: Big }""")
    big: dict[str, Any] = {"hello": "Hello"}
    big["big"] = big
    schema.get_type("BigInterface").resolve_type = lambda *_: "Big"  # type: ignore[union-attr]
    resolvers(schema, {"Big": {"many": lambda _, __, arg: [big] * arg}})
    schema.get_type("BigQuery").fields["start"].resolve = lambda *_: big  # type: ignore[union-attr]
    return schema


JSON_VALUE = {"foo\\": "bar", '"foo"': "bar"}
AUTH_HEADERS = {"Set-Cookie": "abcd", "Custom-Header": "custom-value"}
MESSAGES = [{"id": 1, "msg": "You win!"}, {"id": 2, "msg": "You lose!"}]


def _iface_variant(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The introspection rewrite of one `/iface-graphql-err-<name>` path."""

    def rewrite(data: dict[str, Any]) -> dict[str, Any]:
        types = {t["name"]: t for t in data["__schema"]["types"]}
        droid, human, iface = types["Droid"], types["Human"], types["Character"]
        field_of = {
            t: {f["name"]: f for f in types[t]["fields"]} for t in types if types[t].get("fields")
        }
        arg = {
            "name": "ifaceArg",
            "description": None,
            "defaultValue": None,
            "type": {
                "kind": "NON_NULL",
                "name": None,
                "ofType": {"kind": "SCALAR", "name": "Int", "ofType": None},
            },
        }
        if name == "empty-field-list":
            iface["fields"] = []
        elif name == "unknown-iface":
            droid["interfaces"] = [{"kind": "INTERFACE", "name": "UnknownIFace", "ofType": None}]
        elif name == "missing-field":
            droid["fields"] = [f for f in droid["fields"] if f["name"] != "id"]
        elif name == "wrong-field-type":
            field_of["Droid"]["id"]["type"] = {
                "kind": "NON_NULL",
                "name": None,
                "ofType": {"kind": "SCALAR", "name": "String", "ofType": None},
            }
        elif name == "missing-arg":
            field_of["Character"]["id"]["args"] = [arg]
        elif name == "wrong-arg-type":
            field_of["Character"]["id"]["args"] = [arg]
            field_of["Droid"]["id"]["args"] = [arg]
            str_arg = json.loads(json.dumps(arg))
            str_arg["type"]["ofType"]["name"] = "String"
            field_of["Human"]["id"]["args"] = [str_arg]
        elif name == "extra-non-null-arg":
            field_of["Droid"]["id"]["args"] = [{**arg, "name": "extraArg"}]
        del human
        return data

    return rewrite


def _union_variant(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The introspection rewrite of one `/union-graphql-err-<name>` path."""

    def rewrite(data: dict[str, Any]) -> dict[str, Any]:
        union = next(t for t in data["__schema"]["types"] if t["name"] == "CharacterSearchResult")
        members = union["possibleTypes"]
        if name == "unknown-types":
            union["possibleTypes"] = [{**m, "name": f"Unknown{i}"} for i, m in enumerate(members)]
        elif name == "subtype-iface":
            union["possibleTypes"] = [
                {**m, "name": "Character", "kind": "INTERFACE"} for m in members
            ]
        elif name == "no-member-types":
            union["possibleTypes"] = []
        elif name == "wrapped-type":
            union["possibleTypes"] = [
                {"kind": "NON_NULL", "name": None, "ofType": m} for m in members
            ]
        return data

    return rewrite


def endpoints() -> dict[str, Endpoint]:
    """Every path of FIXTURES.md §7.1."""
    hello = _hello("Hello")
    character, union = _character_schema(), _union_schema()
    out = {
        "/hello-graphql": Endpoint(hello),
        "/hello-echo-request-graphql": Endpoint(hello, echo=True),
        "/hello-graphql-extensions": Endpoint(
            hello, extra={"extensions": {"message": "an extra field in response object"}}
        ),
        "/auth-graphql": Endpoint(_hello("SampleAuth"), headers=AUTH_HEADERS),
        "/user-graphql": Endpoint(_user_schema()),
        "/country-graphql": Endpoint(
            _simple(
                "schema {query: CountryQuery} type Country {name: String} "
                "type CountryQuery {country: Country}",
                {"CountryQuery": {"country": lambda *_: {"name": "India"}}},
            )
        ),
        "/person-graphql": Endpoint(
            _simple(
                "schema {query: PersonQuery} scalar timestamptz "
                "type person {id: Int!  name: String  created: timestamptz} "
                "type PersonQuery {person_: person}",
                {
                    "PersonQuery": {
                        "person_": lambda *_: {
                            "id": 42,
                            "name": "Arthur Dent",
                            "created": "2018-12-20",
                        }
                    }
                },
            )
        ),
        "/character-iface-graphql": Endpoint(character),
        "/union-graphql": Endpoint(union),
        "/default-value-echo-graphql": Endpoint(_default_echo_schema()),
        "/header-graphql": Endpoint(_header_schema(), context=lambda h: h),
        "/messages-graphql": Endpoint(
            _simple(
                "schema {query: MessagesQuery} type Message {id: Int  msg: String} "
                "type MessagesQuery {message(id: Int!): Message  messages: [Message]}",
                {
                    "MessagesQuery": {
                        "message": lambda _, __, id: next(
                            (m for m in MESSAGES if m["id"] == id), None
                        ),
                        "messages": lambda *_: MESSAGES,
                    }
                },
            )
        ),
        "/json-scalar-graphql": Endpoint(
            _simple(
                "schema {query: JsonQuery} scalar Json type JsonQuery {jsonTest: Json}",
                {"JsonQuery": {"jsonTest": lambda *_: JSON_VALUE}},
            )
        ),
        "/big": Endpoint(_big_schema(), headers=AUTH_HEADERS),
    }
    for variant in (
        "empty-field-list",
        "unknown-iface",
        "missing-field",
        "wrong-field-type",
        "missing-arg",
        "wrong-arg-type",
        "extra-non-null-arg",
    ):
        out[f"/iface-graphql-err-{variant}"] = Endpoint(
            character, introspection=_iface_variant(variant)
        )
    for variant in ("unknown-types", "subtype-iface", "no-member-types", "wrapped-type"):
        out[f"/union-graphql-err-{variant}"] = Endpoint(
            union, introspection=_union_variant(variant)
        )
    return out


SERVERS: dict[str, GraphQLHttp] = {}


@contextlib.contextmanager
def serve() -> Iterator[object]:
    """`graphql_5000` and `graphql_5991` (a second copy a test may stop and restart)."""
    paths = endpoints()
    started = [GraphQLHttp(5000, paths), GraphQLHttp(5991, endpoints())]
    for server in started:
        server.start()
    SERVERS.update({"graphql_5000": started[0], "graphql_5991": started[1]})
    try:
        yield SERVERS
    finally:
        for server in started:
            server.stop()
