"""The one naming rule: how a source's naming convention turns svc's generated names into
the names of its GraphQL API.

A source serves `hasura-default` names (snake_case, as generated) unless its
`customization.naming_convention` says `graphql-default`, or it names none and
`SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION` does; both apply only with the experimental
feature `naming_convention` (`source_naming`; the reference's `getNamingConvention`:
the source's own, else the default, else `hasura-default`). Under `graphql-default`
(the reference's `Hasura.RQL.Types.SourceCustomization`, `applyFieldNameCaseCust`,
`applyTypeNameCaseCust`, `applyEnumValueCase`, over `Data.Text.Casing`):

- a field or argument name is camelCased (`field_case`: `author_local_by_pk` ->
  `authorLocalByPk`, `distinct_on` -> `distinctOn`, `_is_null` -> `_isNull`);
- a type name is PascalCased (`type_case`: `author_local_aggregate_fields` ->
  `AuthorLocalAggregateFields`, `String_comparison_exp` -> `StringComparisonExp`);
- an enum value is upper-cased (`enum_case`: `asc_nulls_first` -> `ASC_NULLS_FIRST`).

Words are the parts between underscores, except that a leading underscore stays with the
first word (`fromSnake`: `_is_null` -> `_is`, `null`). A conversion whose result is not a
GraphQL name leaves the name as it was (`transformNameWith`). Under `hasura-default` every
function returns its argument.

Which names are converted (and which are used verbatim: custom root field and column
names, relationship and computed field names) is decided where the names are made: the
IR converts root fields, columns and function arguments (`svc.ir.source_tables`), the
schema the generated types, arguments, fields and enum values
(`svc.schema.naming`); both call these functions.
"""

from __future__ import annotations

import re
from typing import Any

from svc.config import NAMING_CONVENTION, default_naming_convention, experimental_features

HASURA_DEFAULT = "hasura-default"
GRAPHQL_DEFAULT = "graphql-default"

_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*")


def _words(name: str) -> list[str]:
    """`fromSnake`: the parts between underscores, a leading underscore kept on the first."""
    parts = name.split("_")
    if len(parts) > 1 and parts[0] == "":
        return ["_" + parts[1], *parts[2:]]
    return parts


def _upper_first(word: str) -> str:
    return word[:1].upper() + word[1:]


def _checked(converted: str, name: str) -> str:
    return converted if _NAME.fullmatch(converted) else name


def field_case(naming: str, name: str) -> str:
    """`name` (a field or argument name) under `naming`: camelCase for `graphql-default`
    (the first word's first letter lowered, the others' raised), else `name`."""
    if naming != GRAPHQL_DEFAULT:
        return name
    first, *rest = _words(name)
    return _checked(first[:1].lower() + first[1:] + "".join(map(_upper_first, rest)), name)


def type_case(naming: str, name: str) -> str:
    """`name` (a type name) under `naming`: PascalCase for `graphql-default`, else `name`."""
    if naming != GRAPHQL_DEFAULT:
        return name
    return _checked("".join(map(_upper_first, _words(name))), name)


def enum_case(naming: str, name: str) -> str:
    """`name` (an enum value) under `naming`: upper-cased for `graphql-default`, else
    `name`."""
    if naming != GRAPHQL_DEFAULT:
        return name
    return _checked(name.upper(), name)


def source_naming(source: Any, env: dict[str, str] | None = None) -> str:
    """The naming convention a source (its metadata object) is served with: with the
    experimental feature `naming_convention` on (`env`, else the process environment),
    its `customization.naming_convention`, else `SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION`;
    otherwise `hasura-default` (the reference ignores both without the feature)."""
    if NAMING_CONVENTION not in experimental_features(env):
        return HASURA_DEFAULT
    custom = source.get("customization") if isinstance(source, dict) else None
    given = custom.get("naming_convention") if isinstance(custom, dict) else None
    if given in (HASURA_DEFAULT, GRAPHQL_DEFAULT):
        return str(given)
    return default_naming_convention(env) or HASURA_DEFAULT
