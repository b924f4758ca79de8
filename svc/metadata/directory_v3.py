"""The config v3 metadata directory (the Hasura CLI's format for version 3 metadata):
files ⇄ the metadata document.

The layout `hasura metadata export` writes (`cli/internal/metadataobject` of
hasura/graphql-engine), paths relative to the directory:

    version.yaml                        version: 3
    databases/databases.yaml            the sources: [{name, kind, configuration, …,
                                          tables: "!include default/tables/tables.yaml",
                                          functions: "!include default/functions/functions.yaml"}]
    databases/<source>/tables/tables.yaml         ["!include public_author.yaml", …]
    databases/<source>/tables/<schema>_<table>.yaml          one table entry
    databases/<source>/functions/functions.yaml, <schema>_<function>.yaml
    actions.yaml, actions.graphql       as in config v2 (`svc.metadata.actions_sdl`)
    allow_list.yaml, api_limits.yaml, backend_configs.yaml, cron_triggers.yaml,
    graphql_schema_introspection.yaml, inherited_roles.yaml, metrics_config.yaml,
    network.yaml, opentelemetry.yaml, query_collections.yaml, remote_schemas.yaml,
    rest_endpoints.yaml                 one key of the document each (`TOP_FILES`)

Pure: files come as a mapping `{relative path: text}` (the CLI gives one that reads the
directory on demand, `svc.cli.metadata.DirectoryFiles`), and writing returns one.

Reading (`read_directory_v3`) resolves `!include` in any file, as the CLI does: a YAML tag
(`tables: !include default/tables/tables.yaml`) or a string `"!include <path>"` (how the
CLI writes it; quotes around the path are dropped) is replaced by the named file's
content: parsed when it ends in `.yaml` or `.yml`, its text otherwise. The path is
relative to the including file. An include that leaves the metadata directory, names a
missing file or closes a cycle is refused with a `DirectoryError` naming the including
file, the JSON path of the include in it and the file it names. The result is the
version 3 document the CLI would send (`DirectoryDocument.document`): every key of every
file is kept, including the top-level keys svc does not apply (`inherited_roles`,
`network`, `backend_configs`, `opentelemetry`, `metrics_config`: reported by the model,
not here); a file that is missing or holds nothing (null, `{}`, `[]`, as the CLI writes
for an empty key) gives no key. `DirectoryDocument.locate` says which file and path a
place of the document was read from, so errors and `svc compile` problems name the
per-table file (`databases/default/tables/public_author.yaml: $.select_permissions[0]`).

Writing (`document_to_files_v3`, `metadata_to_files_v3`) is canonical as the config v2
writer is (`svc.metadata.directory`): the same document always gives the same bytes;
tables and functions sorted by `(schema, name)` in their own files named as the CLI names
them (`<schema>_<table>.yaml`; a name that would leave its folder or repeat one already
written, ignoring case, is made unique with `_2`, `_3`, …), the sources in the order
`metadata_to_obj` gives (the served one first), keys in `KEY_ORDER` order, includes
written as the CLI writes them (`"!include …"`, double-quoted). A document of version 2
(no `sources`) is written with one source, `default` of kind `postgres`, whose
`configuration` is `DEFAULT_CONFIGURATION` (the connection a Hasura project's default
source has; svc itself connects to its own database URL).
"""

from __future__ import annotations

import copy
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from svc.errors import SvcError
from svc.metadata.actions_sdl import SdlError, join_actions, split_actions
from svc.metadata.directory import (
    KEY_ORDER,
    SORT_KEYS,
    DirectoryError,
    _Dumper,
    _field,
    _JsonLoader,
    _kind,
    _qualify_names,
    canonical,
    check_entry_name,
    dump_yaml,
    load_yaml,
)
from svc.metadata.model import (
    DEFAULT_SOURCE,
    SERVED_KIND,
    Metadata,
    metadata_from_obj,
    metadata_to_obj,
    served_source,
)

VERSION = 3
VERSION_FILE = "version.yaml"
SOURCES_FILE = "databases/databases.yaml"
ACTIONS_FILE = "actions.yaml"
ACTIONS_SDL_FILE = "actions.graphql"
# Top-level files holding one key of the document each: file → (key, empty value).
TOP_FILES: dict[str, tuple[str, type[list[Any]] | type[dict[str, Any]]]] = {
    "allow_list.yaml": ("allowlist", list),
    "api_limits.yaml": ("api_limits", dict),
    "backend_configs.yaml": ("backend_configs", dict),
    "cron_triggers.yaml": ("cron_triggers", list),
    "graphql_schema_introspection.yaml": ("graphql_schema_introspection", dict),
    "inherited_roles.yaml": ("inherited_roles", list),
    "metrics_config.yaml": ("metrics_config", dict),
    "network.yaml": ("network", dict),
    "opentelemetry.yaml": ("opentelemetry", dict),
    "query_collections.yaml": ("query_collections", list),
    "remote_schemas.yaml": ("remote_schemas", list),
    "rest_endpoints.yaml": ("rest_endpoints", list),
}
FILE_OF_KEY = {key: file for file, (key, _) in TOP_FILES.items()}
# The `configuration` a version 2 document's source is written with (see the module doc).
DEFAULT_CONFIGURATION = {
    "connection_info": {"database_url": {"from_env": "HASURA_GRAPHQL_DATABASE_URL"}}
}
INCLUDE = "!include"

# Keys of a source, in the order the CLI writes them; other keys follow alphabetically,
# then `tables` and `functions`.
SOURCE_KEYS = (
    "name",
    "kind",
    "configuration",
    "query_tags",
    "customization",
    "health_check",
    "logical_models",
    "native_queries",
    "stored_procedures",
)
KEY_ORDER_V3: dict[str, tuple[str, ...]] = {
    **KEY_ORDER,
    "inherited_roles": ("role_name", "role_set"),
}
SORT_KEYS_V3 = {**SORT_KEYS, "inherited_roles": _field("role_name")}

Step = str | int
Steps = tuple[Step, ...]


# -- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Include:
    """A `!include` YAML tag as parsed: the path it names (`None`: not a scalar)."""

    target: str | None


class _IncludeLoader(_JsonLoader):
    """The directory's YAML loader with the `!include` tag."""


def _construct_include(loader: Any, node: yaml.Node) -> _Include:
    if isinstance(node, yaml.ScalarNode):
        return _Include(str(loader.construct_scalar(node)))
    return _Include(None)


_IncludeLoader.add_constructor(INCLUDE, _construct_include)


def _include_target(value: Any) -> str | None:
    """The path an include names, `""` for an include naming nothing, `None` for a value
    that is not an include."""
    if isinstance(value, _Include):
        return (value.target or "").strip().strip('"')
    if isinstance(value, str) and value.startswith(INCLUDE):
        rest = value[len(INCLUDE) :]
        if not rest or rest[0].isspace():
            return rest.strip().strip('"').strip()
    return None


def render_path(steps: Steps) -> str:
    """`$`, `$[3].select_permissions[0]`: a JSON path as `DirectoryError` shows it."""
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)


_STEP = re.compile(r"\[(\d+)\]|\.([^.\[]+)")


def parse_path(path: str) -> Steps:
    """The steps of a JSON path written by `render_path` (or an `SvcError`'s)."""
    return tuple(int(i) if i else k for i, k in _STEP.findall(path.removeprefix("$")))


@dataclass
class DirectoryDocument:
    """A config v3 directory read: the version 3 `document` (includes resolved) and where
    each of its parts was read from (`locate`)."""

    document: dict[str, Any]
    # Document path where a file's content (or a part of actions.yaml) was placed → (file,
    # path inside the file of what was placed there).
    origins: dict[Steps, tuple[str, Steps]] = field(default_factory=dict)

    def locate(self, steps: Steps) -> tuple[str, str]:
        """`(file, JSON path in it)` of the document path `steps`: the deepest include
        or file placed on the way."""
        for n in range(len(steps), -1, -1):
            found = self.origins.get(steps[:n])
            if found is not None:
                file, base = found
                return file, render_path(base + steps[n:])
        if steps[:1] == ("version",):
            return VERSION_FILE, render_path(steps)
        return SOURCES_FILE, "$"

    def relocate(self, exc: SvcError) -> DirectoryError:
        """An error at a path of the document (`metadata_from_obj(…, path="$")`) → at its
        file and place."""
        file, path = self.locate(parse_path(exc.path))
        return DirectoryError(file, exc.message, path)


class _Reader:
    """Loads files of one directory, resolving includes and recording `origins`."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files
        self.origins: dict[Steps, tuple[str, Steps]] = {}

    def load(self, file: str, at: Steps | None) -> Any:
        """The parsed content of `file` (None when missing), placed at document path
        `at` (`None`: the caller records the origins)."""
        text = self.files.get(file)
        if text is None:
            return None
        if at is not None:
            self.origins[at] = (file, ())
        value = load_yaml(file, text, _IncludeLoader)
        return self._resolve(value, file, (), at or (), (file,))

    def _resolve(self, value: Any, file: str, inner: Steps, at: Steps, stack: Steps) -> Any:
        target = _include_target(value)
        if target is not None:
            return self._include(file, inner, target, at, stack)
        if isinstance(value, dict):
            return {
                k: self._resolve(v, file, (*inner, k), (*at, k), stack) for k, v in value.items()
            }
        if isinstance(value, list):
            return [
                self._resolve(v, file, (*inner, i), (*at, i), stack) for i, v in enumerate(value)
            ]
        return value

    def _include(self, file: str, inner: Steps, target: str, at: Steps, stack: Steps) -> Any:
        where = render_path(inner)
        if not target:
            raise DirectoryError(file, f"{INCLUDE} names no file", where)
        named = posixpath.normpath(posixpath.join(posixpath.dirname(file), target))
        if target.startswith("/") or named == ".." or named.startswith("../"):
            raise DirectoryError(file, f"{INCLUDE} {target}: leaves the metadata directory", where)
        if named in stack:
            cycle = " -> ".join([*map(str, stack[stack.index(named) :]), named])
            raise DirectoryError(file, f"{INCLUDE} {target}: include cycle: {cycle}", where)
        text = self.files.get(named)
        if text is None:
            raise DirectoryError(file, f"{INCLUDE} {target}: no such file: {named}", where)
        if at:  # (the whole of actions.yaml sits at no one document path)
            self.origins[at] = (named, ())
        if not named.endswith((".yaml", ".yml")):
            return text
        value = load_yaml(named, text, _IncludeLoader)
        return self._resolve(value, named, (), at, (*stack, named))


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def directory_version(files: Mapping[str, str]) -> int:
    """The `version` of `version.yaml` (an integer, else 0: not a version svc reads); a
    directory without it is version 2, or 3 when it has `databases/databases.yaml`."""
    text = files.get(VERSION_FILE)
    if text is None:
        return VERSION if files.get(SOURCES_FILE) is not None else 2
    value = load_yaml(VERSION_FILE, text)
    version = value.get("version", 2) if isinstance(value, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else 0


def read_directory_v3(files: Mapping[str, str]) -> DirectoryDocument:
    """Read a config v3 directory (see the module doc); raises `DirectoryError` for a file
    that is not valid YAML, has the wrong shape, or an include that cannot be followed.
    Other files are ignored. The order of every list is kept."""
    reader = _Reader(files)
    version = reader.load(VERSION_FILE, None)
    version = version.get("version") if isinstance(version, dict) else version
    if version != VERSION:
        raise DirectoryError(
            VERSION_FILE, f"expected version {VERSION}, got {version!r}", "$.version"
        )
    doc: dict[str, Any] = {"version": VERSION}
    sources = reader.load(SOURCES_FILE, ("sources",))
    if sources is None:
        sources = []
    if not isinstance(sources, list):
        raise DirectoryError(SOURCES_FILE, f"expected a list, got {_kind(sources)}")
    doc["sources"] = sources
    dd = DirectoryDocument(doc, reader.origins)
    _check_sources(dd, sources)

    actions = reader.load(ACTIONS_FILE, None)
    reader.origins[("actions",)] = (ACTIONS_FILE, ("actions",))
    reader.origins[("custom_types",)] = (ACTIONS_FILE, ("custom_types",))
    if actions is None:
        actions = {}
    if not isinstance(actions, dict):
        raise DirectoryError(ACTIONS_FILE, f"expected an object, got {_kind(actions)}")
    if not isinstance(actions.get("actions", []), list | None):
        raise DirectoryError(ACTIONS_FILE, "expected a list", "$.actions")
    if not isinstance(actions.get("custom_types", {}), dict | None):
        raise DirectoryError(ACTIONS_FILE, "expected an object", "$.custom_types")
    try:
        action_list, custom_types = join_actions(actions, files.get(ACTIONS_SDL_FILE) or "")
    except SdlError as exc:
        raise DirectoryError(exc.file, exc.message, exc.path) from None
    if action_list:
        doc["actions"] = action_list
    if custom_types:
        doc["custom_types"] = custom_types

    for file, (key, kind) in TOP_FILES.items():
        value = reader.load(file, (key,))
        if _empty(value):
            continue
        if not isinstance(value, kind):
            shape = "a list" if kind is list else "an object"
            raise DirectoryError(file, f"expected {shape}, got {_kind(value)}")
        doc[key] = value
    return dd


def _check_sources(dd: DirectoryDocument, sources: list[Any]) -> None:
    """Each source an object with a string `name`; the served source's `tables` and
    `functions` lists of objects naming their table or function (before msgspec, whose
    errors would not say which entry)."""
    for k, source in enumerate(sources):
        file, path = dd.locate(("sources", k))
        if not isinstance(source, dict):
            raise DirectoryError(file, f"expected an object, got {_kind(source)}", path)
        if not isinstance(source.get("name"), str):
            raise DirectoryError(file, "expected a source name (a string)", f"{path}.name")
    served = served_source(sources)
    if served is None:
        return
    for key, name_key in (("tables", "table"), ("functions", "function")):
        entries = sources[served].get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            file, path = dd.locate(("sources", served, key))
            raise DirectoryError(file, f"expected a list, got {_kind(entries)}", path)
        for i, entry in enumerate(entries):
            file, path = dd.locate(("sources", served, key, i))
            check_entry_name(file, entry, name_key, path)


def metadata_from_directory(dd: DirectoryDocument) -> Metadata:
    """`Metadata` of a directory read (`metadata_from_obj`), errors at their file."""
    try:
        return metadata_from_obj(dd.document, path="$")
    except SvcError as exc:
        raise dd.relocate(exc) from None


def metadata_from_files_v3(files: Mapping[str, str]) -> Metadata:
    """`Metadata` of a config v3 directory given as `{path: text}`."""
    return metadata_from_directory(read_directory_v3(files))


def normalised_document(doc: Mapping[str, Any], md: Metadata) -> dict[str, Any]:
    """`metadata_to_obj(md)` of the document `doc` (`md` is `doc` read), with the
    top-level keys of `doc` that `Metadata` does not hold (`inherited_roles`, `network`,
    …) as they are: what the directory writer writes, so nothing of `doc` is lost."""
    out = metadata_to_obj(md)
    known = set(Metadata.__struct_fields__) | {"sources"}
    for key, value in doc.items():
        if key not in known and key not in out and not _empty(value):
            out[key] = value
    return out


# -- writing ------------------------------------------------------------------------------


class IncludeTag(str):
    """An include as the CLI writes it (`"!include <path>"`, double-quoted)."""

    __slots__ = ()


class _IncludeDumper(_Dumper):
    """The config v2 dumper, plus includes written double-quoted."""


def _represent_include(dumper: yaml.SafeDumper, value: IncludeTag) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style='"')


_IncludeDumper.add_representer(IncludeTag, _represent_include)


def _dump(value: Any) -> str:
    return dump_yaml(value, _IncludeDumper)


def _canonical(value: Any, key: str) -> Any:
    return canonical(value, key, KEY_ORDER_V3, SORT_KEYS_V3)


_UNSAFE = re.compile(r'[/\\"\x00]')


class _Names:
    """Unique, safe file and folder names in one folder (compared ignoring case)."""

    def __init__(self, *taken: str) -> None:
        self.taken = {t.lower() for t in taken}

    def make(self, stem: str, suffix: str = "") -> str:
        stem = _UNSAFE.sub("_", stem)
        stem = re.sub(r"^\s|\s$", "_", stem)
        if stem in ("", ".", ".."):
            stem = f"_{stem}"
        name, n = stem + suffix, 1
        while name.lower() in self.taken:
            n += 1
            name = f"{stem}_{n}{suffix}"
        self.taken.add(name.lower())
        return name


def _object_stem(name: Any) -> str:
    """`<schema>_<name>` of a table or function name, as the CLI names its file
    (`<dataset>_<name>` without a schema, the parts joined by `_` for a list)."""
    if isinstance(name, list):
        return "_".join(str(part) for part in name)
    if isinstance(name, dict):
        namespace = name.get("schema") or name.get("dataset") or ""
        return f"{namespace}_{name.get('name', '')}"
    return f"public_{name}"


def _entries_files(
    entries: Any, key: str, name_key: str, folder: str, files: dict[str, str]
) -> Any:
    """Write each entry of `entries` (tables or functions of one source) in its own file
    of `folder` with `<folder>/<key>.yaml` including them; the value the source holds
    (its include, or `entries` as they are when they are not a list of objects)."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return _canonical(entries, key)
    names = _Names(f"{key}.yaml")
    includes: list[IncludeTag] = []
    for entry in _canonical(entries, key):
        file = names.make(_object_stem(entry.get(name_key)), ".yaml")
        files[f"{folder}/{key}/{file}"] = _dump(entry)
        includes.append(IncludeTag(f"{INCLUDE} {file}"))
    files[f"{folder}/{key}/{key}.yaml"] = _dump(includes)
    return IncludeTag(f"{INCLUDE} {folder.removeprefix('databases/')}/{key}/{key}.yaml")


def _sources_of(obj: Mapping[str, Any]) -> list[Any]:
    """The sources of an exported document; a version 2 one's tables and functions as
    the source `default` (see the module doc)."""
    if "sources" in obj:
        return list(obj.get("sources") or [])
    source: dict[str, Any] = {
        "name": DEFAULT_SOURCE,
        "kind": SERVED_KIND,
        "configuration": DEFAULT_CONFIGURATION,
        "tables": obj.get("tables") or [],
    }
    if obj.get("functions"):
        source["functions"] = obj["functions"]
    return [source]


def as_version_3(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An exported document (`metadata_to_obj`) in the version 3 shape the reference's
    `export_metadata` answers: `{version: 3, sources: [...], …}` (a version 3 document is
    returned as it is). The served source gets no `configuration` unless the document
    keeps one: svc connects with its own database URL, and a document read back without
    one is the same version 2 document (`metadata_from_obj`)."""
    if "sources" in obj:
        return dict(obj)
    source: dict[str, Any] = {
        "name": DEFAULT_SOURCE,
        "kind": SERVED_KIND,
        "tables": obj.get("tables") or [],
    }
    if obj.get("functions"):
        source["functions"] = obj["functions"]
    rest = {k: v for k, v in obj.items() if k not in ("version", "tables", "functions")}
    return {"version": VERSION, "sources": [source], **rest}


def _source_entry(source: Any, served: bool, folders: _Names, files: dict[str, str]) -> Any:
    """A source of `databases/databases.yaml`, its tables and functions written to their
    files (`served`: the source svc serves, whose table and function names are spelled
    out `{name, schema}` as in config v2; other sources are written as they are)."""
    if not isinstance(source, dict):
        return source
    rank = {k: i for i, k in enumerate(SOURCE_KEYS)}
    keys = sorted(
        (k for k in source if k not in ("tables", "functions")),
        key=lambda k: (rank.get(k, len(SOURCE_KEYS)), str(k)),
    )
    entry = {k: _canonical(source[k], k) for k in keys}
    folder = "databases/" + folders.make(str(source.get("name", "")))
    parts = {"tables": source.get("tables"), "functions": source.get("functions")}
    if served:
        parts = copy.deepcopy(parts)
        _qualify_names(parts)
    if "tables" in source:
        entry["tables"] = _entries_files(parts["tables"], "tables", "table", folder, files)
    functions = parts["functions"]
    if functions or ("functions" in source and not isinstance(functions, list)):
        entry["functions"] = _entries_files(functions, "functions", "function", folder, files)
    return entry


def document_to_files_v3(obj: Mapping[str, Any]) -> dict[str, str]:
    """The config v3 directory of an exported document (`metadata_to_obj`, version 2 or
    3; `normalised_document`): `{path: text}`, deterministic (see the module doc)."""
    files: dict[str, str] = {VERSION_FILE: _dump({"version": VERSION})}
    folders = _Names()
    given = _sources_of(obj)
    k = served_source(given)
    sources = [_source_entry(s, j == k, folders, files) for j, s in enumerate(given)]
    files[SOURCES_FILE] = _dump(sources)
    actions, files[ACTIONS_SDL_FILE] = split_actions(dict(obj))
    files[ACTIONS_FILE] = _dump(_canonical(actions, "actions.yaml"))
    for file, (key, kind) in TOP_FILES.items():
        value = obj.get(key)
        files[file] = _dump(_canonical(kind() if _empty(value) else value, key))
    return dict(sorted(files.items(), key=lambda item: _file_rank(item[0])))


def metadata_to_files_v3(md: Metadata) -> dict[str, str]:
    """The config v3 directory of `md` (`document_to_files_v3(metadata_to_obj(md))`)."""
    return document_to_files_v3(metadata_to_obj(md))


def _file_rank(path: str) -> tuple[int, str]:
    """Directory order: version.yaml, the databases tree, then the top-level files."""
    if path == VERSION_FILE:
        return (0, "")
    if path.startswith("databases/"):
        return (1, "" if path == SOURCES_FILE else path)
    return (2, path)


# -- problems of a config v2 document at their config v3 place ----------------------------


def v3_place(dd: DirectoryDocument, md: Metadata, file: str, path: str) -> tuple[str, str]:
    """Where in the directory `dd` (read as `md`) a problem is written that `svc compile`
    locates in config v2 terms (`tables.yaml: $[3]…`, `functions.yaml`, the top-level
    files) or in the written order of the sources (`databases/databases.yaml: $[k]…`,
    `svc.ir.sources`)."""
    steps = parse_path(path)
    sources = dd.document.get("sources") or []
    k = served_source(sources)
    if file in ("tables.yaml", "functions.yaml"):
        if k is None:
            return file, path
        return dd.locate(("sources", k, file.removesuffix(".yaml"), *steps))
    if file == SOURCES_FILE and steps and isinstance(steps[0], int):
        # `metadata_to_obj` writes the served source first when it says anything
        written = [j for j in range(len(sources)) if j != k]
        if k is not None and (md.default_source is not None or md.tables or md.functions):
            written.insert(0, k)
        if steps[0] < len(written):
            return dd.locate(("sources", written[steps[0]], *steps[1:]))
        return file, path
    if file in TOP_FILES:
        return dd.locate((TOP_FILES[file][0], *steps))
    if file == ACTIONS_FILE and steps and isinstance(steps[0], str):
        return dd.locate(steps)
    return file, path


__all__ = [
    "DEFAULT_CONFIGURATION",
    "SOURCES_FILE",
    "TOP_FILES",
    "VERSION",
    "DirectoryDocument",
    "directory_version",
    "document_to_files_v3",
    "metadata_from_directory",
    "metadata_from_files_v3",
    "metadata_to_files_v3",
    "normalised_document",
    "read_directory_v3",
    "v3_place",
]
