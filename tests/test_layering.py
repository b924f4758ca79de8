"""The pipeline's imports point one way (design brief 2): a module may import only its own
layer and earlier ones; only `svc.execute` imports asyncpg; only `svc.server` and `svc.cli`
know the HTTP server."""

from __future__ import annotations

import ast
from pathlib import Path

SVC = Path(__file__).resolve().parent.parent / "svc"
# Earlier layers first. Modules at the package root (errors, config, version) are layer 0.
LAYERS = ["metadata", "catalog", "ir", "schema", "plan", "sql", "execute", "api", "server", "cli"]
RESTRICTED = {"asyncpg": {"execute"}, "granian": {"cli"}}


def layer_of(module: str) -> int:
    """Layer index of a dotted `svc.x.y` module name (0 for root modules)."""
    if module == "svc.__main__":
        return len(LAYERS) + 1  # `python -m svc`: the entry point sits above everything
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in LAYERS:
        return 0
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
