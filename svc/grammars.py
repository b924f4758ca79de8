"""The lark grammars svc parses with, loaded by name: `load("json_path.lark") -> str`.

Layer 0: the one place that knows where grammars are kept. The repository keeps them in
`grammar/` at its top level; a wheel ships that directory as package data `svc/_grammar/`
(`pyproject.toml`, hatch `force-include`), read through `importlib.resources` so it works
from any installation (zip imports included). In a source checkout (`uv run`, an editable
install) `svc/_grammar/` does not exist and the top-level `grammar/` is read instead.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from svc.errors import ErrorCode, SvcError

# Package data directory inside `svc` in a built wheel (pyproject's force-include target).
PACKAGE_DIR = "_grammar"
# The repository's directory, next to the `svc` package in a source checkout.
CHECKOUT_DIR = Path(__file__).resolve().parent.parent / "grammar"


@cache
def load(name: str) -> str:
    """The text of grammar `name` (a file name such as `"json_path.lark"`), read once per
    process. Raises `SvcError(ErrorCode.UNEXPECTED)` when no installation layout has it: a
    packaging fault, not a user error."""
    shipped = resources.files("svc").joinpath(PACKAGE_DIR).joinpath(name)
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    checkout = CHECKOUT_DIR / name
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    raise SvcError(ErrorCode.UNEXPECTED, f"grammar {name!r} is not installed")
