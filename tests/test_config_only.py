"""Only `svc/config.py` reads or writes the process environment (design brief 5): every
other module gets its settings from a `Config` or from the functions of `svc.config`."""

from __future__ import annotations

import ast
from pathlib import Path

SVC = Path(__file__).resolve().parent.parent / "svc"
ALLOWED = {SVC / "config.py"}
NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_uses(source: str) -> list[int]:
    """Lines of `source` naming `os.environ`, `getenv` and the like (as an attribute, a
    bare name or an imported name)."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if _names_environment(node)]


def _names_environment(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in NAMES
    if isinstance(node, ast.Name):
        return node.id in NAMES
    if isinstance(node, ast.ImportFrom):
        return any(a.name in NAMES for a in node.names)
    return False


def test_only_config_touches_the_environment() -> None:
    found = [
        f"{path.relative_to(SVC.parent)}:{line}"
        for path in sorted(SVC.rglob("*.py"))
        if path not in ALLOWED
        for line in environment_uses(path.read_text())
    ]
    assert found == []


def test_the_check_catches_each_form() -> None:
    source = (
        "import os\nfrom os import getenv\nos.environ.get('A')\nos.getenv('B')\n"
        "os.environ['C'] = '1'\n"
    )
    assert sorted(environment_uses(source)) == [2, 3, 4, 5]
