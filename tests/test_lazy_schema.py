"""Lazy schemas (`svc.schema.lazy`, `svc.schema.find`, `svc.schema.lazy_roots`) are the
eager ones, made on demand.

On the Chinook-like and the generated IRs of `tests/test_schema_build.py`, for each role:
- made whole, a lazy schema prints as the eager one and lists its types in the same
  order (graphql-core's `GraphQLSchema` order);
- every type name of the eager schema is found by name in a fresh lazy schema (each
  lookup alone), as the same kind of type with the same fields; names the eager schema
  lacks are not found, and looking them up does not make the schema whole;
- a root field looked up makes that field's table only, and a query validates against a
  lazy schema making a few types;
- threads filling one schema at once see every type filled once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from graphql import GraphQLSchema, parse, print_schema, print_type

from svc.api.validate import select_rules, validate_document
from svc.ir.model import Ir
from svc.schema import build_schema
from svc.schema.lazy import LazyDict, LazyTypeMap
from svc.schema.types import Types
from tests.test_schema_build import ROLES, irs  # noqa: F401 (the module's fixture)

pytestmark = pytest.mark.usefixtures("irs")


def _eager(ir: Ir, role: str) -> GraphQLSchema:
    import svc.schema.build as build

    original = build._types
    build._types = lambda ir: Types()  # type: ignore[assignment]
    try:
        return build_schema(ir, role)
    finally:
        build._types = original


def _lazy(ir: Ir, role: str) -> GraphQLSchema:
    schema = build_schema(ir, role)
    assert isinstance(schema.type_map, LazyTypeMap)
    return schema


def _made(schema: GraphQLSchema) -> int:
    """How many types the lazy map holds so far (without making it whole)."""
    return dict.__len__(schema.type_map)


@pytest.mark.parametrize("which", ["chinook", "generated"])
@pytest.mark.parametrize("role", ROLES)
def test_whole_lazy_schema_is_the_eager_one(irs: dict[str, Ir], which: str, role: str) -> None:  # noqa: F811
    eager, lazy = _eager(irs[which], role), _lazy(irs[which], role)
    assert print_schema(lazy) == print_schema(eager)
    assert list(lazy.type_map) == list(eager.type_map)


@pytest.mark.parametrize("which", ["chinook", "generated"])
@pytest.mark.parametrize("role", ROLES)
def test_every_type_is_found_by_name_alone(irs: dict[str, Ir], which: str, role: str) -> None:  # noqa: F811
    eager = _eager(irs[which], role)
    for name, want in eager.type_map.items():
        lazy = _lazy(irs[which], role)
        found = lazy.get_type(name)
        assert found is not None, name
        assert type(found) is type(want), name
        assert print_type(found) == print_type(want), name
    lazy = _lazy(irs[which], role)
    for name in (
        "album_nonsense",
        "nonsense",
        "album_bool_exp_x",
        "uuid_comparison_exp_x",
        "nonsense_args",
        "ID",
    ):
        if name not in eager.type_map:
            assert lazy.get_type(name) is None, name
    assert lazy.type_map._whole is not None  # naming types never makes the whole schema


def test_a_query_makes_a_few_types(irs: dict[str, Ir]) -> None:  # noqa: F811
    lazy = _lazy(irs["chinook"], "admin")
    whole = len(_eager(irs["chinook"], "admin").type_map)
    text = (
        "query ($w: album_bool_exp, $n: Int) "
        "{ album(where: $w, limit: $n) { title artist { name } } }"
    )
    document = parse(text)
    assert validate_document(lazy, document, select_rules(document, text)) == []
    assert _made(lazy) < whole / 4
    root = lazy.query_type.fields
    assert isinstance(root, LazyDict)
    # `album`'s root fields only (finding `album_bool_exp` makes them: `svc.schema.find`)
    assert set(dict.keys(root)) <= {"album", "album_by_pk", "album_aggregate"}


def test_unknown_field_still_fails_validation(irs: dict[str, Ir]) -> None:  # noqa: F811
    lazy = _lazy(irs["chinook"], "user")
    text = "{ album { title nope } }"
    document = parse(text)
    errors = validate_document(lazy, document, select_rules(document, text))
    assert [e.message for e in errors] == ["Cannot query field 'nope' on type 'album'."]


def test_threads_fill_one_schema(irs: dict[str, Ir]) -> None:  # noqa: F811
    lazy = _lazy(irs["generated"], "admin")
    eager = _eager(irs["generated"], "admin")
    names = list(eager.type_map)
    seen: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            seen.append({n: lazy.get_type(n) for n in names})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(s.keys() == seen[0].keys() for s in seen)
    for name in names:  # one object per name, whichever thread made it
        assert len({id(s[name]) for s in seen}) == 1, name
    assert print_schema(lazy) == print_schema(eager)


def test_two_builds_fill_under_their_own_locks(irs: dict[str, Ir]) -> None:  # noqa: F811
    """A build's fills and lookups take its own lock: one schema made whole in a thread
    (introspection's fresh build) never holds up another's (the served one's)."""
    ir = irs["generated"]
    held, busy = _lazy(ir, "admin"), _lazy(ir, "admin")
    names = [n for n in _eager(ir, "admin").type_map if not n.startswith("__")]
    lock = held.type_map._lock  # type: ignore[attr-defined]
    assert lock is not busy.type_map._lock  # type: ignore[attr-defined]
    taken, release, done = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait(10)

    def look() -> None:
        for name in names[-20:]:
            found = busy.get_type(name)
            assert found is not None
            assert found.fields if hasattr(found, "fields") else True
        done.set()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(10)
        looker = threading.Thread(target=look)
        looker.start()
        assert done.wait(10)  # with one lock for both builds it would wait for `release`
        assert not release.is_set()
    finally:
        release.set()
        holder.join()
        looker.join()
    assert held.get_type(names[-1]) is not None  # the held build still works after
