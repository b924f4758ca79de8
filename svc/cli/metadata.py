"""`svc metadata export|apply|diff`: metadata as code (spec 2.1, 4.8); options in `svc.cli`.

Each command talks to a running server's `/v1/query` (`export_metadata`,
`replace_metadata`) and reads or writes a config-v2 directory through
`svc.metadata.directory`. Exit status: 0 success (diff: no difference), 1 difference (diff)
or a refused request / unreadable directory, 2 the server could not be reached.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

import httpx

from svc.metadata.directory import (
    ALL_FILES,
    FILES,
    DirectoryError,
    metadata_from_files,
    metadata_to_files,
)
from svc.metadata.model import metadata_from_obj, metadata_to_obj
from svc.session_vars import process_names


def run(args: argparse.Namespace) -> int:
    """Run one `svc metadata` command; returns the exit status."""
    client = Client(args.endpoint, args.admin_secret)
    try:
        if args.metadata_command == "export":
            return export(client, args.dir)
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

    def files(self) -> dict[str, str]:
        """The server's metadata as directory files (`export_metadata`)."""
        return metadata_to_files(metadata_from_obj(self.query("export_metadata", {})))


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
    """Write every file of `files` into `path` (created if needed), byte for byte, and
    remove the file of a kept section (`ALL_FILES` past `FILES`) that `files` lacks;
    other files in `path` are left alone."""
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_bytes(text.encode("utf-8"))
    for name in ALL_FILES[len(FILES) :]:  # a kept section the document no longer has
        if name not in files and (path / name).is_file():
            (path / name).unlink()


def export(client: Client, path: Path) -> int:
    """`svc metadata export`: the server's metadata into `path`."""
    files = client.files()
    write_directory(path, files)
    print(f"svc metadata export: wrote {len(files)} files to {path}", file=sys.stderr)
    return 0


def apply(client: Client, path: Path) -> int:
    """`svc metadata apply`: `replace_metadata` with the directory's document, then
    `get_inconsistent_metadata`: 1 when the server refused it or holds inconsistencies
    afterwards (each printed), 0 otherwise."""
    md = metadata_from_files(read_directory(path))
    client.query("replace_metadata", metadata_to_obj(md))
    report = client.query("get_inconsistent_metadata", {})
    issues = report.get("inconsistent_objects", []) if isinstance(report, dict) else []
    for issue in issues:
        print(f"inconsistent {issue.get('type')}: {issue.get('reason')}", file=sys.stderr)
    if issues:
        print(f"svc metadata apply: applied {path} with inconsistencies", file=sys.stderr)
        return 1
    print(f"svc metadata apply: applied {path}", file=sys.stderr)
    return 0


def diff(client: Client, path: Path) -> int:
    """`svc metadata diff`: unified diff, per file, of the server's canonical files against
    the directory's (both written by `metadata_to_files`, so formatting and order never
    show). Exit 0 when equal, 1 when different."""
    mine = metadata_to_files(metadata_from_files(read_directory(path)))
    theirs = client.files()
    changed = False
    for name, text in mine.items():
        lines = difflib.unified_diff(
            theirs.get(name, "").splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"server/{name}",
            tofile=str(path / name),
        )
        for line in lines:
            changed = True
            sys.stdout.write(line if line.endswith("\n") else line + "\n")
    return 1 if changed else 0
