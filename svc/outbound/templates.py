"""`{{NAME}}` templates and environment lookups for outbound URLs and header values.

Rules and messages are the reference's (Hasura v2 `Data.URL.Template`,
`Hasura.RQL.Types.Common.resolveWebhook`, `Hasura.RQL.DDL.Headers.getEnv`):

- A template is literal text with `{{NAME}}` variables anywhere in it
  (`grammar/url_template.lark`); it is stored verbatim and rendered at call time from the
  environment. Rendering with variables missing raises 400 `unexpected` "Value for
  environment variables not found: A, B" (every missing name, in order of appearance).
- A single variable named by configuration (`webhook_from_env`, `url_from_env`,
  `value_from_env`) that is not set raises 400 `not-found` "environment variable 'X' not
  set".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from lark import Lark, Token

from svc.config import process_environment
from svc.errors import ErrorCode, SvcError
from svc.grammars import load


@dataclass(frozen=True, slots=True)
class Variable:
    """A `{{name}}` in a template; `name` is the text between the braces, as written."""

    name: str


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed template: literal strings and `Variable`s in order (`parse_template`)."""

    parts: tuple[str | Variable, ...]

    @property
    def variables(self) -> tuple[str, ...]:
        """The variable names, in order of appearance (repeats kept)."""
        return tuple(p.name for p in self.parts if isinstance(p, Variable))

    def render(self, env: Mapping[str, str] | None = None) -> str:
        """The text with every variable replaced by its value in `env` (default the
        process environment). Raises SvcError 400 `unexpected` "Value for environment variables
        not found: A, B" naming every missing variable (Hasura `renderURLTemplate`)."""
        values = process_environment() if env is None else env
        out: list[str] = []
        missing: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            elif part.name in values:
                out.append(values[part.name])
            else:
                missing.append(part.name)
        if missing:
            raise SvcError(
                ErrorCode.UNEXPECTED,
                "Value for environment variables not found: " + ", ".join(missing),
            )
        return "".join(out)


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(load("url_template.lark"), parser="lalr")


@lru_cache(maxsize=4096)
def parse_template(text: str) -> Template:
    """The template of `text`. Every string is a template (text without `{{…}}` is one
    literal part; a `{{` never closed is literal), so this never raises."""
    parts: list[str | Variable] = []
    for token in _parser().parse(text).children:
        assert isinstance(token, Token)
        if token.type == "VAR":
            parts.append(Variable(str(token)[2:-2]))
        elif parts and isinstance(parts[-1], str):
            parts[-1] += str(token)
        else:
            parts.append(str(token))
    return Template(tuple(parts))


def render_template(text: str, env: Mapping[str, str] | None = None) -> str:
    """`parse_template(text).render(env)`: the URL or value to send. Raises SvcError 400
    `unexpected` naming the missing variables (see `Template.render`)."""
    return parse_template(text).render(env)


def env_value(name: str, env: Mapping[str, str] | None = None) -> str:
    """The value of environment variable `name` (in `env`, default the process environment).

    Raises SvcError 400 `not-found` "environment variable '<name>' not set" (Hasura
    `getEnv`, `makeHeadersFromConf`)."""
    values = process_environment() if env is None else env
    value = values.get(name)
    if value is None:
        raise SvcError(ErrorCode.NOT_FOUND, f"environment variable '{name}' not set")
    return value
