"""The pipeline's imports point one way (design brief 2): a module may import only its own
layer and earlier ones; only `svc.execute` imports asyncpg; only `svc.server` and `svc.cli`
know the HTTP server."""

from __future__ import annotations

import ast
from pathlib import Path

SVC = Path(__file__).resolve().parent.parent / "svc"
# Earlier layers first. Modules at the package root (errors, config, version) are layer 0.
LAYERS = [
    "metadata",
    "catalog",
    "ir",
    "schema",
    "plan",
    "sql",
    "execute",
    "workers",  # background workers: claim queue rows through svc.execute, run by svc.api
    "api",
    "server",
    "cli",
]
# Packages of layer 0 beside the root modules (errors, config, version, json_path): they
# import nothing of svc above layer 0. Every package of svc is here or in LAYERS.
LAYER0 = ["embedded", "outbound"]  # outbound: the one HTTP client (server, api, workers)
# The HTTP layer talks to the rest of svc only through these entry modules of `svc.api`
# (and layer 0): no planner, executor or GraphQL-pipeline internals (issue 12).
SERVER_ENTRIES = ("svc.api.engine", "svc.api.rest", "svc.api.health")
# httpx: the process's outbound calls go through svc.outbound's one pooled client; the
# CLI's `svc metadata` is a short-lived client of a remote svc, not the server process.
RESTRICTED = {"asyncpg": {"execute"}, "granian": {"cli"}, "httpx": {"outbound", "cli"}}


def layer_of(module: str) -> int:
    """Layer index of a dotted `svc.x.y` module name (0 for root modules)."""
    if module == "svc.__main__":
        return len(LAYERS) + 1  # `python -m svc`: the entry point sits above everything
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in LAYERS:
        return 0  # a root module or a LAYER0 package (test_every_package_has_a_layer)
    return LAYERS.index(parts[1]) + 1


def imports(path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement in a file."""
    tree = ast.parse(path.read_text())
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
    return found


def module_name(path: Path) -> str:
    rel = path.relative_to(SVC.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def server_may_import(target: str) -> bool:
    """Whether `svc.server` may import `target`: anything outside svc, layer 0, itself,
    and `SERVER_ENTRIES`."""
    if not target.startswith("svc.") or layer_of(target) == 0:
        return True
    return target.startswith("svc.server.") or target in SERVER_ENTRIES


def violations() -> list[str]:
    """Every backwards or forbidden import, as `file:line: message`."""
    out: list[str] = []
    for path in sorted(SVC.rglob("*.py")):
        me = module_name(path)
        mine = layer_of(me)
        package = me.split(".")[1] if "." in me else ""
        for target, line in imports(path):
            where = f"{path.relative_to(SVC.parent)}:{line}"
            if target.startswith("svc.") and layer_of(target) > mine:
                out.append(f"{where}: {me} imports later layer {target}")
            if package == "server" and not server_may_import(target):
                out.append(f"{where}: svc.server imports {target}, not an svc.api entry")
            root = target.split(".")[0]
            if root in RESTRICTED and package not in RESTRICTED[root]:
                out.append(f"{where}: only {sorted(RESTRICTED[root])} may import {root}")
    return out


def test_no_backwards_imports() -> None:
    assert violations() == []


def test_the_check_catches_a_backwards_import(tmp_path: Path) -> None:
    """The rule itself: a planner module importing the server would be reported."""
    assert layer_of("svc.server.app") > layer_of("svc.plan.build")
    assert layer_of("svc.errors") == 0
    bad = tmp_path / "bad.py"
    bad.write_text("from svc.server.app import App\nimport asyncpg\n")
    assert imports(bad) == [("svc.server.app", 1), ("asyncpg", 2)]


def test_every_package_has_a_layer() -> None:
    """A new package gets its place in the layer list (or layer 0) when it is created."""
    packages = {p.parent.name for p in SVC.glob("*/__init__.py")}
    assert sorted(packages - set(LAYERS) - set(LAYER0)) == []


def test_the_server_imports_only_api_entries() -> None:
    """The layer leaks of issue 12 would be reported again."""
    assert not server_may_import("svc.execute.pg_dump")
    assert not server_may_import("svc.api.graphql")
    assert not server_may_import("svc.plan.json_path")
    assert server_may_import("svc.api.engine")
    assert server_may_import("svc.json_path")
    assert server_may_import("svc.embedded")


def test_the_seams_have_their_places() -> None:
    """Issue 12's seams: the outbound client is layer 0 (the server and later layers use
    it); workers sit between the executor they claim through and the API that runs them."""
    assert layer_of("svc.outbound.client") == 0
    assert layer_of("svc.execute.db") < layer_of("svc.workers.worker") < layer_of("svc.api.engine")
    assert server_may_import("svc.outbound")
    assert not server_may_import("svc.workers")


def api_import_graph() -> dict[str, set[str]]:
    """`svc.api` module → the `svc.api` modules it imports, counting imports inside
    functions and `TYPE_CHECKING` blocks too (a deferred import still ties two modules
    together) and relative imports (`from . import sync`, `from .run import x`)."""
    api = SVC / "api"
    modules = {module_name(p): p for p in api.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for me, path in modules.items():
        package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1])
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                targets = [module, *(f"{module}.{a.name}" for a in node.names)]
            found.update(t for t in targets if t in modules and t != me)
        graph[me] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of `graph` with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: set[str] = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_in_the_api() -> None:
    """`svc.api` imports form no cycle (no function-level import to dodge one): shared
    helpers live in a module below both sides; the metadata operation modules import
    `svc.api.op_context`, not `svc.api.metadata`, and the background jobs get the engine's
    state as functions, not the engine."""
    graph = api_import_graph()
    assert "svc.api.remote_exec" in graph  # the graph sees the package
    assert "svc.api.scheduled" in graph["svc.api.op_checks"]  # `from svc.api import x` counts
    assert [sorted(c) for c in cycles(graph)] == []


def test_the_cycle_check_finds_a_cycle() -> None:
    """The rule itself: two modules importing each other form one component."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
    assert cycles({"a": {"b"}, "b": set()}) == []
