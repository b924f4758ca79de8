"""`svc metadata export|apply|diff`: metadata as code (spec 2.1, 4.8); options in `svc.cli`.

Each command talks to a running server's `/v1/query` (`export_metadata`,
`replace_metadata`) and reads or writes a metadata directory: config v2 through
`svc.metadata.directory`, config v3 (`version: 3`, `databases/…`, `!include`) through
`svc.metadata.directory_v3`. A directory's `version.yaml` says which (`load_directory`);
`export` writes the version of the directory it writes to, or `--config-version`. Exit
status: 0 success (diff: no difference), 1 difference (diff) or a refused request /
unreadable directory, 2 the server could not be reached.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from svc.cli.progress import Steps
from svc.metadata.directory import (
    ALL_FILES,
    FILES,
    DirectoryError,
    metadata_from_files,
    metadata_to_files,
)
from svc.metadata.directory_v3 import (
    SOURCES_FILE,
    DirectoryDocument,
    directory_version,
    document_to_files_v3,
    metadata_from_directory,
    normalised_document,
    read_directory_v3,
)
from svc.metadata.model import Metadata, metadata_from_obj, metadata_to_obj, plain
from svc.session_vars import process_names


def project_metadata_dir(project: Path) -> Path:
    """The metadata directory of a Hasura CLI project, as the CLI finds it
    (`cli/config.go`: `metadata_directory` of `config.yaml`, default `metadata`); a
    `config.yaml` that cannot be read counts as none."""
    folder = "metadata"
    try:
        loaded = yaml.safe_load((project / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        loaded = None
    if isinstance(loaded, dict) and isinstance(loaded.get("metadata_directory"), str):
        folder = loaded["metadata_directory"]
    return project / folder


def run(args: argparse.Namespace) -> int:
    """Run one `svc metadata` command; returns the exit status. Without `--dir`, the
    directory is the project's (`project_metadata_dir(--project)`)."""
    if args.dir is None:
        args.dir = project_metadata_dir(args.project)
    client = Client(args.endpoint, args.admin_secret)
    try:
        if args.metadata_command == "export":
            return export(client, args.dir, getattr(args, "config_version", None))
        if args.metadata_command == "apply":
            return apply(client, args.dir)
        return diff(client, args.dir)
    except DirectoryError as exc:
        print(f"{args.dir / exc.file}: {exc.path}: {exc.message}", file=sys.stderr)
        return 1
    except RequestFailed as exc:
        print(f"svc metadata {args.metadata_command}: {exc}", file=sys.stderr)
        return exc.status


class RequestFailed(Exception):
    """The server refused a request (`status` 1) or could not be reached (`status` 2)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Client:
    """`POST {endpoint}/v1/query` with the admin secret, if any."""

    def __init__(self, endpoint: str, admin_secret: str | None) -> None:
        self.url = endpoint.rstrip("/") + "/v1/query"
        self.headers = {process_names().admin_secret_header: admin_secret} if admin_secret else {}

    def query(self, type_: str, args: Any) -> Any:
        """The decoded answer of one operation; raises `RequestFailed`.

        A non-200 answer is reported as `code: error (at path)` from the server's
        `{path, error, code}` body (spec 7).
        """
        try:
            r = httpx.post(
                self.url, json={"type": type_, "args": args}, headers=self.headers, timeout=120
            )
        except httpx.HTTPError as exc:
            raise RequestFailed(f"cannot reach {self.url}: {exc}", 2) from None
        try:
            body = r.json()
        except ValueError:
            body = None
        if r.status_code != 200:
            if isinstance(body, dict) and "error" in body:
                where = f" (at {body['path']})" if body.get("path") else ""
                message = f"{body.get('code', r.status_code)}: {body['error']}{where}"
            else:
                message = f"HTTP {r.status_code}: {r.text[:500]}"
            raise RequestFailed(message, 1)
        return body

    def export(self) -> dict[str, Any]:
        """The server's metadata document (`export_metadata`)."""
        answer = self.query("export_metadata", {})
        if not isinstance(answer, dict):
            raise RequestFailed(f"export_metadata answered {type(answer).__name__}", 1)
        return answer

    def files(self, version: int = 2) -> dict[str, str]:
        """The server's metadata as directory files of config `version`."""
        return files_of(self.export(), version)


def files_of(answer: dict[str, Any], version: int) -> dict[str, str]:
    """Directory files of an `export_metadata` answer: config v2 (`metadata_to_files`) or
    v3 (`document_to_files_v3`, with the top-level keys `Metadata` does not hold)."""
    md = metadata_from_obj(answer)
    if version == 3:
        return document_to_files_v3(normalised_document(answer, md))
    return metadata_to_files(md)


class DirectoryFiles(Mapping[str, str]):
    """The files of a directory as `{relative POSIX path: text}`, read when asked for
    (`svc.metadata.directory_v3` reads the files its includes name). A path that does not
    name a file is absent; one whose real path leaves the directory (a symbolic link) or
    that is not UTF-8 text raises `DirectoryError`."""

    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise DirectoryError("", "not a directory")
        self.root = root
        self.real = root.resolve()

    def __getitem__(self, name: str) -> str:
        path = self.root / name
        if not path.is_file():
            raise KeyError(name)
        if not path.resolve().is_relative_to(self.real):
            raise DirectoryError(name, "leaves the metadata directory (a symbolic link)")
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise DirectoryError(name, f"not UTF-8 text: {exc.reason}") from None
        except OSError as exc:
            raise DirectoryError(name, f"cannot be read: {exc.strerror}") from None

    def __iter__(self) -> Iterator[str]:
        for path in sorted(self.root.rglob("*")):
            if path.is_file():
                yield path.relative_to(self.root).as_posix()

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True)
class Loaded:
    """A metadata directory read: its `Metadata`, and for config v3 the document as read
    (`v3`: what `apply` sends, where `svc compile` finds each problem)."""

    md: Metadata
    v3: DirectoryDocument | None = None


def load_directory(path: Path) -> Loaded:
    """Read the directory `path`, config v2 or v3 (`directory_version`); raises
    `DirectoryError`."""
    files = DirectoryFiles(path)
    if directory_version(files) == 3:
        dd = read_directory_v3(files)
        return Loaded(metadata_from_directory(dd), dd)
    return Loaded(metadata_from_files(read_directory(path)))


def is_v3(path: Path) -> bool:
    """Whether `path` is a config v3 directory (false when it does not exist)."""
    try:
        return directory_version(DirectoryFiles(path)) == 3
    except DirectoryError:
        return False


def read_directory(path: Path) -> dict[str, str]:
    """`{file name: text}` of every file of `ALL_FILES` present in `path` (missing ones
    are simply absent); raises `DirectoryError` when `path` is not a directory."""
    if not path.is_dir():
        raise DirectoryError("", "not a directory")
    return {
        name: (path / name).read_text(encoding="utf-8")
        for name in ALL_FILES
        if (path / name).is_file()
    }


def write_directory(path: Path, files: dict[str, str]) -> None:
    """Write every file of `files` into `path` (created if needed, folders too), byte for
    byte, and remove the file of a kept section (`ALL_FILES` past `FILES`) that `files`
    lacks; other files in `path` are left alone."""
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(text.encode("utf-8"))
    for name in ALL_FILES[len(FILES) :]:  # a kept section the document no longer has
        if name not in files and (path / name).is_file():
            (path / name).unlink()


def remove_stale(path: Path, files: Mapping[str, str]) -> list[str]:
    """Remove the YAML files under `path/databases` that `files` (a config v3 export)
    does not hold, and the folders left empty: the databases tree is the writer's, so a
    table dropped since the last export leaves no file behind. Returns their paths."""
    removed: list[str] = []
    root = path / "databases"
    if not root.is_dir():
        return removed
    for walk_dir, _dirs, names in os.walk(root, topdown=False):
        folder = Path(walk_dir)
        for name in names:
            rel = (folder / name).relative_to(path).as_posix()
            if name.endswith((".yaml", ".yml")) and rel not in files:
                (folder / name).unlink()
                removed.append(rel)
        if folder != root and not any(folder.iterdir()):
            folder.rmdir()
    return sorted(removed)


def export(client: Client, path: Path, version: int | None = None) -> int:
    """`svc metadata export`: the server's metadata into `path`, config `version` (default:
    3 when `path` is a config v3 directory, else 2). A config v2 export refuses a document
    holding sources other than `default` (v2 has no place for them) and names the
    top-level keys it has no file for."""
    if version is None:
        version = 3 if is_v3(path) else 2
    answer = client.export()
    removed: list[str] = []
    if version == 3:
        files = files_of(answer, 3)
        write_directory(path, files)
        removed = remove_stale(path, files)
    else:
        md = metadata_from_obj(answer)
        if md.other_sources:
            names = ", ".join(f'"{s.get("name")}"' for s in md.other_sources)
            print(
                f"svc metadata export: the metadata holds sources a config v2 directory "
                f"cannot hold ({names}); export with --config-version 3",
                file=sys.stderr,
            )
            return 1
        lost = _not_in_v2(answer, md)
        if lost:
            print(
                "svc metadata export: not written (config v2 has no file for them; "
                f"--config-version 3 writes them): {', '.join(lost)}",
                file=sys.stderr,
            )
        files = metadata_to_files(md)
        write_directory(path, files)
    more = f", removed {len(removed)} stale files" if removed else ""
    print(f"svc metadata export: wrote {len(files)} files to {path}{more}", file=sys.stderr)
    return 0


def _not_in_v2(answer: dict[str, Any], md: Metadata) -> list[str]:
    """What of an export a config v2 directory does not write: top-level keys `Metadata`
    does not hold, keys of the source `default` other than its connection."""
    lost = sorted(k for k in normalised_document(answer, md) if k not in metadata_to_obj(md))
    attrs = md.default_source or {}
    lost += [
        f"{SOURCES_FILE}: {k}"
        for k, v in attrs.items()
        if k not in ("name", "kind", "configuration") and v not in (None, {}, [])
    ]
    return lost


def apply(client: Client, path: Path) -> int:
    """`svc metadata apply`: `replace_metadata` with the directory's document, then
    `get_inconsistent_metadata`, each inconsistent object printed.

    As the Hasura CLI (`cli/commands/metadata_apply.go`, `projectmetadata`): a config v3
    directory (the document as read, every key of every file) is sent with
    `allow_inconsistent_metadata: true`, so what svc cannot apply is kept and reported
    while the rest serves, and the command warns and exits 0; a config v2 directory is
    sent plain, so the server refuses it when it would be inconsistent (exit 1). Exit 1
    too when inconsistencies remain after a config v2 apply."""
    with Steps("svc metadata apply", 3) as shown:  # a bar on a terminal
        with shown.step("read the directory"):
            loaded = load_directory(path)
        with shown.step("replace_metadata"):
            if loaded.v3 is not None:
                args = {
                    "metadata": plain(loaded.v3.document),
                    "allow_inconsistent_metadata": True,
                }
                client.query("replace_metadata", args)
            else:
                client.query("replace_metadata", metadata_to_obj(loaded.md))
        with shown.step("get_inconsistent_metadata"):
            report = client.query("get_inconsistent_metadata", {})
    issues = report.get("inconsistent_objects", []) if isinstance(report, dict) else []
    for issue in issues:
        print(f"inconsistent {issue.get('type')}: {issue.get('reason')}", file=sys.stderr)
    if issues:
        print(f"svc metadata apply: applied {path}; metadata is inconsistent", file=sys.stderr)
        return 0 if loaded.v3 is not None else 1
    print(f"svc metadata apply: applied {path}", file=sys.stderr)
    return 0


def diff(client: Client, path: Path) -> int:
    """`svc metadata diff`: unified diff, per file, of the server's canonical files against
    the directory's (both written by the writer of the directory's version, so formatting
    and order never show; a file on one side only is compared with an empty one). Exit 0
    when equal, 1 when different."""
    loaded = load_directory(path)
    if loaded.v3 is not None:
        mine = document_to_files_v3(normalised_document(loaded.v3.document, loaded.md))
        theirs = client.files(3)
    else:
        mine = metadata_to_files(loaded.md)
        theirs = client.files(2)
    names = [*mine, *(name for name in theirs if name not in mine)]
    changed = False
    for name in names:
        lines = difflib.unified_diff(
            theirs.get(name, "").splitlines(keepends=True),
            mine.get(name, "").splitlines(keepends=True),
            fromfile=f"server/{name}",
            tofile=str(path / name),
        )
        for line in lines:
            changed = True
            sys.stdout.write(line if line.endswith("\n") else line + "\n")
    return 1 if changed else 0
