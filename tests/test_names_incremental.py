"""The schema-name check of a metadata write looks only at what changed
(`svc.schema.names.new_schema_problem`, `_fine_since`), and answers as the whole walk does.

On the Chinook-like IR of `tests/test_schema_build.py`, each change below makes a new IR
sharing every other `Table` object (as `build_ir` over a previous IR does); the check's
answer must be the answer of the whole walk over fresh copies (no remembered counts):
None for a harmless change (then the new IR remembers counts equal to a fresh count),
the same error otherwise. The cross-table clashes are the reference's "conflicting
definitions for GraphQL type" (two tables, `x` next to `x_bool_exp`, an aggregate
predicate's arguments enum) and root fields shared by two tables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from svc.ir.agg_predicates import arguments_enum
from svc.ir.model import Ir, Table, default_root_fields
from svc.schema import names
from svc.schema.names import carry_names, new_schema_problem, schema_problem
from tests.test_schema_build import irs  # noqa: F401 (the module's fixture)

pytestmark = pytest.mark.usefixtures("irs")

Change = Callable[[dict[str, Table]], None]  # edits tables by GraphQL name


def _renamed(table: Table, gql: str) -> Table:
    return table.with_parts(gql_name=gql, root_fields=default_root_fields(gql))


def _rename(old: str, new: str) -> Change:
    def change(tables: dict[str, Table]) -> None:
        tables[old] = _renamed(tables[old], new)

    return change


def _drop(old: str) -> Change:
    def change(tables: dict[str, Table]) -> None:
        del tables[old]

    return change


def _column_as(old: str, column: int, gql: str) -> Change:
    def change(tables: dict[str, Table]) -> None:
        t = tables[old]
        cols = list(t.columns)
        cols[column] = dataclasses.replace(cols[column], gql_name=gql)
        tables[old] = t.with_parts(columns=tuple(cols))

    return change


def _root_as(old: str, kind: str, gql: str) -> Change:
    def change(tables: dict[str, Table]) -> None:
        t = tables[old]
        tables[old] = t.with_parts(root_fields=dataclasses.replace(t.root_fields, **{kind: gql}))

    return change


def _apply(ir: Ir, *changes: Change) -> Ir:
    """`ir` with `changes`: the changed tables are new objects, the others shared."""
    by_gql = {t.gql_name: t for t in ir.tables.values()}
    for change in changes:
        change(by_gql)
    keys = {t.name: t for t in ir.tables.values()}
    tables = {}
    for table in by_gql.values():
        tables[table.name] = table
    ordered = {k: tables[k] for k in keys if k in tables}
    return dataclasses.replace(ir, tables=ordered)


def _whole(before: Ir, after: Ir) -> str | None:
    """`new_schema_problem`'s answer from fresh copies (the whole walk only)."""
    fresh_before, fresh_after = dataclasses.replace(before), dataclasses.replace(after)
    problem = names._whole_problem(fresh_after)
    if problem is None:
        return None
    old = names._whole_problem(fresh_before)
    return None if old is not None and old.message == problem.message else problem.message


CASES: dict[str, tuple[Change, ...]] = {
    "fresh name": (_rename("album", "record"),),  # has computed fields: the walk tells
    "fresh name, no computed fields": (_rename("genre", "record"),),
    "dropped": (_drop("track"),),
    "two changes": (_rename("album", "record"), _rename("artist", "maker")),
    "same type name": (_rename("album", "artist"),),
    "another's generated type": (_rename("album", "artist_bool_exp"),),
    "makes another's a generated type": (_rename("album", "x_order_by"), _rename("artist", "x")),
    "another's arguments enum": (_rename("album", arguments_enum("artist", "count")),),
    "arguments enum of another": (
        _rename("album", arguments_enum("x", "bool_and")),
        _rename("artist", "x"),
    ),
    "a global type": (_rename("album", "query_root"),),
    "a scalar's comparison type": (_rename("album", "Int_comparison_exp"),),
    "not a GraphQL name": (_rename("album", "__album"),),
    "a reserved type": (_rename("album", "String"),),
    "two columns, one field": (_column_as("genre", 1, "id"),),
    "a column not a name": (_column_as("album", 1, "bad name"),),
    "a shared root field": (_root_as("album", "select_by_pk", "artist"),),
    "a shared mutation root": (_root_as("album", "insert_one", "insert_artist"),),
}


HARMLESS = {"fresh name", "fresh name, no computed fields", "dropped", "two changes"}


@pytest.mark.parametrize("case", list(CASES))
def test_the_check_of_a_change_answers_as_the_whole_walk(irs: dict[str, Ir], case: str) -> None:  # noqa: F811
    before = dataclasses.replace(irs["chinook"])
    assert schema_problem(before) is None  # and it remembers the counts
    after = _apply(before, *CASES[case])
    want = _whole(before, after)
    assert (want is None) == (case in HARMLESS)  # each problem case is one
    got = new_schema_problem(before, after)
    assert (got.message if got else None) == want
    if want is None:  # settled from the changed tables, with the counts of a fresh walk
        index = after.derived[names._INDEX]
        assert index == names._Index.of(dataclasses.replace(after))


def test_a_harmless_change_is_settled_without_the_whole_walk(
    irs: dict[str, Ir],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = dataclasses.replace(irs["chinook"])
    assert schema_problem(before) is None
    after = _apply(before, _rename("genre", "record"))  # a table without computed fields

    def walked(ir: Ir) -> None:
        raise AssertionError("the whole walk ran")

    monkeypatch.setattr(names, "_whole_problem", walked)
    assert new_schema_problem(before, after) is None
    assert schema_problem(after) is None  # remembered: no walk


def test_a_reload_carries_the_check_and_a_problem_is_still_found(irs: dict[str, Ir]) -> None:  # noqa: F811
    before = dataclasses.replace(irs["chinook"])
    assert schema_problem(before) is None
    fine = _apply(before, _rename("genre", "record"))
    carry_names(before, fine)
    assert names._PROBLEM in fine.derived and schema_problem(fine) is None
    bad = _apply(fine, _rename("artist", "record"))
    carry_names(fine, bad)
    assert names._PROBLEM not in bad.derived  # not settled: the walk tells
    problem = schema_problem(bad)
    assert problem is not None and "record" in problem.message
