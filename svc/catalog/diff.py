"""What changed between two catalogs, by identity: table oids and column attnums.

`run_sql` compares the catalog before and after the SQL (spec 4.2) to follow renamed tables
and columns in metadata and to find columns whose type changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from svc.catalog.introspect import DbCatalog
from svc.metadata.model import QualifiedName


@dataclass(frozen=True, slots=True)
class CatalogChanges:
    """Renames and type changes. Column renames and type changes use the old table name."""

    table_renames: dict[QualifiedName, QualifiedName] = field(default_factory=dict)
    column_renames: dict[QualifiedName, dict[str, str]] = field(default_factory=dict)
    type_changes: tuple[tuple[QualifiedName, str], ...] = ()


def catalog_changes(old: DbCatalog, new: DbCatalog) -> CatalogChanges:
    """Tables and columns that kept their identity but changed name or type."""
    by_oid = {t.oid: t for t in new.tables}
    tables: dict[QualifiedName, QualifiedName] = {}
    columns: dict[QualifiedName, dict[str, str]] = {}
    types: list[tuple[QualifiedName, str]] = []
    for before in old.tables:
        after = by_oid.get(before.oid)
        if after is None:
            continue
        old_name = QualifiedName(name=before.name, schema=before.schema)
        new_name = QualifiedName(name=after.name, schema=after.schema)
        if old_name != new_name:
            tables[old_name] = new_name
        now = {c.attnum: c for c in after.columns}
        for col in before.columns:
            same = now.get(col.attnum)
            if same is None:
                continue
            if same.name != col.name:
                columns.setdefault(old_name, {})[col.name] = same.name
            if same.type != col.type:
                types.append((old_name, col.name))
    return CatalogChanges(tables, columns, tuple(types))
