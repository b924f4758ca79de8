"""The compiled state one process serves: metadata, catalog, IR, schemas, plan cache.

A `State` is built whole and swapped atomically when metadata or the database changes;
requests hold a reference to the state they started with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphql import GraphQLSchema, validate_schema

from svc.catalog.introspect import DbCatalog
from svc.errors import SvcError
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
        """The GraphQL schema of `role` (built on first use).

        Raises 500 `unexpected` (a JSON answer, never an empty one) when the schema cannot
        be built: metadata writes refuse what would cause it (`svc.schema.names`), so only
        a document stored or a database changed outside them can."""
        found = self.schemas.get(role)
        if found is not None:
            return found
        try:
            built = build_schema(
                self.ir, role, infer_function_permissions=self.infer_function_permissions
            )
            errors: list[Exception] = list(validate_schema(built))  # checked path: now
        except Exception as exc:
            errors = [exc]
        if errors:
            raise SvcError(
                "unexpected",
                f'the GraphQL schema of role "{role}" cannot be built: {errors[0]}',
                status=500,
            )
        self.schemas[role] = built
        return built

    def remember(self, key: Any, value: Any) -> None:
        """Store a plan-cache entry, dropping everything when the cache is full."""
        if len(self.plans) >= PLAN_CACHE_SIZE:
            self.plans.clear()
        self.plans[key] = value
