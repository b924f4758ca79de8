"""A newer IR's root name index is its predecessor's updated for the tables they do not
share (`svc.schema.lazy_roots.carry_root_index`), equal to the index made whole.

The changes are those of `tests/test_names_incremental.py` (renames, drops, custom root
fields, clashes) on the Chinook-like IR of `tests/test_schema_build.py`: every carried
index must equal `root_name_index` of a fresh copy (no remembered index); two tables
sharing a GraphQL name leave the index to be made whole (their order is the IR's).
"""

from __future__ import annotations

import dataclasses

import pytest

from svc.ir.model import Ir
from svc.schema import lazy_roots
from svc.schema.lazy_roots import carry_root_index, root_name_index
from tests.test_names_incremental import CASES, _apply, _drop, _rename
from tests.test_schema_build import irs  # noqa: F401 (the module's fixture)

pytestmark = pytest.mark.usefixtures("irs")


def _fresh(ir: Ir) -> dict[str, tuple[object, ...]]:
    return dict(root_name_index(dataclasses.replace(ir)))


@pytest.mark.parametrize("case", list(CASES))
def test_a_carried_index_is_the_whole_one(irs: dict[str, Ir], case: str) -> None:  # noqa: F811
    before = dataclasses.replace(irs["chinook"])
    root_name_index(before)
    after = _apply(before, *CASES[case])
    carry_root_index(before, after)
    carried = lazy_roots.__name__ in after.derived
    gql = [t.gql_name for t in after.tables.values()]
    assert carried == (len(set(gql)) == len(gql))  # only a shared GraphQL name stops it
    assert root_name_index(after) == _fresh(after)


def test_a_chain_of_changes_stays_whole(irs: dict[str, Ir]) -> None:  # noqa: F811
    ir = dataclasses.replace(irs["chinook"])
    root_name_index(ir)
    for change in (_rename("genre", "record"), _drop("track"), _rename("record", "genre")):
        after = _apply(ir, change)
        carry_root_index(ir, after)
        assert lazy_roots.__name__ in after.derived
        assert root_name_index(after) == _fresh(after)
        ir = after


def test_nothing_is_carried_from_an_ir_without_an_index(irs: dict[str, Ir]) -> None:  # noqa: F811
    before = dataclasses.replace(irs["chinook"])
    after = _apply(before, _rename("genre", "record"))
    carry_root_index(before, after)
    assert lazy_roots.__name__ not in after.derived
