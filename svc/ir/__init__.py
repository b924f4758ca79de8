"""The resolved, frozen model that every later stage reads (design brief 2).

`build_ir(metadata, catalog)` joins the metadata document with the introspected catalog.
Everything that does not resolve becomes an `Inconsistency`; the IR keeps everything else.
`build_ir(metadata, catalog, previous)` rebuilds only what changed since `previous`.
"""

from svc.ir.build import build_ir
from svc.ir.model import Column, Inconsistency, Ir, Relationship, RootFields, Table

__all__ = ["Column", "Inconsistency", "Ir", "Relationship", "RootFields", "Table", "build_ir"]
