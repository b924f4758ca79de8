"""The compiled state one process serves: metadata, catalog, IR, schemas, plan cache.

A `State` is built whole and swapped atomically when metadata or the database changes;
requests hold a reference to the state they started with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphql import GraphQLSchema

from svc.catalog.introspect import DbCatalog
from svc.ir import Ir, build_ir
from svc.metadata.model import Metadata
from svc.schema import build_schema

PLAN_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class State:
    """One consistent view; `schemas` and `plans` are caches filled on demand."""

    version: int
    metadata: Metadata
    catalog: DbCatalog
    ir: Ir
    infer_function_permissions: bool = True  # `--infer-function-permissions` (spec 4.6)
    schemas: dict[str, GraphQLSchema] = field(default_factory=dict)
    plans: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        version: int,
        metadata: Metadata,
        catalog: DbCatalog,
        infer_functions: bool = True,
        previous: Ir | None = None,
    ) -> State:
        """Resolve `metadata` against `catalog` (inconsistencies are kept in the IR),
        keeping what is unchanged from the `previous` IR (`build_ir`)."""
        ir = build_ir(metadata, catalog, previous)
        return cls(version, metadata, catalog, ir, infer_functions)

    def schema(self, role: str) -> GraphQLSchema:
        """The GraphQL schema of `role` (built on first use)."""
        found = self.schemas.get(role)
        if found is None:
            found = build_schema(
                self.ir, role, infer_function_permissions=self.infer_function_permissions
            )
            self.schemas[role] = found
        return found

    def remember(self, key: Any, value: Any) -> None:
        """Store a plan-cache entry, dropping everything when the cache is full."""
        if len(self.plans) >= PLAN_CACHE_SIZE:
            self.plans.clear()
        self.plans[key] = value
