"""The Relay schema (`/v1beta1/relay`) through the JavaScript tools Relay users run:
graphql-js (`buildClientSchema` of the introspection answer, then `validateSchema`: no
error, for admin and for a role with filtered permissions) and Relay's own compiler
(`relay-compiler` 21, a binary shipped in its npm package) accepting the schema's SDL
(graphql-js `printSchema`) with a document using `node`, `@refetchable` on a `Node` type
and a `@connection` over `article_connection` (which needs `edges`, `pageInfo`
`{hasNextPage endCursor …}` and `first`/`after`).

The packages are pinned by tests/node/package-lock.json and installed once (`npm ci`)
into the git-ignored tests/node/node_modules, as `tests/test_ws_node.py` installs its
clients (same xdist group: two `npm ci` at once in one folder fail). Skipped with the
reason when `node`/`npm` are missing or the install fails (offline).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from graphql import get_introspection_query

from tests.support import ROOT, ServerProcess, server_with
from tests.test_relay import USER, steps

NODE_DIR = ROOT / "tests" / "node"
PACKAGES = ("graphql", "relay-compiler")
pytestmark = pytest.mark.xdist_group(name="node-clients")

DOCUMENT = """import {graphql} from 'react-relay';
export const query = graphql`
  query AppQuery($id: ID!) { node(id: $id) { id ...App_article @alias } ...App_list }
`;
export const article = graphql`
  fragment App_article on article @refetchable(queryName: "AppArticleRefetchQuery") {
    id title author { id name }
  }
`;
export const list = graphql`
  fragment App_list on query_root
    @argumentDefinitions(first: {type: "Int", defaultValue: 2}, after: {type: "String"})
    @refetchable(queryName: "AppListPaginationQuery") {
    article_connection(first: $first, after: $after, order_by: {title: asc})
      @connection(key: "App_article_connection") {
      edges { cursor node { id title } }
    }
  }
`;
"""


def _installed() -> bool:
    return all((NODE_DIR / "node_modules" / p / "package.json").exists() for p in PACKAGES)


@pytest.fixture(scope="module")
def node() -> str:
    """The `node` executable once the pinned packages are installed (else skip)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not found (Debian: apt-get install nodejs npm)")
    if not _installed():
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=NODE_DIR,
                capture_output=True,
                text=True,
                timeout=300,
            )
        except subprocess.TimeoutExpired:
            pytest.skip("npm ci timed out (offline?)")
        if done.returncode != 0:
            pytest.skip(f"npm ci failed (offline?): {done.stderr.strip()[-300:]}")
    assert _installed()
    return node


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    with server_with(pg_url, steps()) as s:
        yield s


def _sdl(node: str, s: ServerProcess, tmp: Path, headers: dict[str, str]) -> tuple[Any, Path]:
    """`validateSchema`'s errors for the role's Relay schema, and its SDL file."""
    r = s.client.post("/v1beta1/relay", json={"query": get_introspection_query()}, headers=headers)
    assert r.status_code == 200 and "errors" not in r.json(), r.text
    intro, sdl = tmp / "introspection.json", tmp / "schema.graphql"
    intro.write_text(r.text)
    done = subprocess.run(
        [node, str(NODE_DIR / "relay_schema.mjs"), str(intro), str(sdl)],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["errors"], sdl


@pytest.mark.parametrize("role", ["admin", "user"])
def test_graphql_js_validates_the_relay_schema(
    node: str, srv: ServerProcess, tmp_path: Path, role: str
) -> None:
    errors, sdl = _sdl(node, srv, tmp_path, USER if role == "user" else {})
    assert errors == []
    text = sdl.read_text()
    assert "interface Node" in text and "type article implements Node" in text
    assert "node(" in text and "article_connection(" in text


def test_relay_compiler_accepts_the_relay_schema(
    node: str, srv: ServerProcess, tmp_path: Path
) -> None:
    """`relay-compiler` compiles the document against the SDL: exit 0 and the
    artifacts of the query, both fragments and both refetch queries."""
    errors, sdl = _sdl(node, srv, tmp_path, {})
    assert errors == []
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "App.js").write_text(DOCUMENT)
    config = {"src": "./src", "schema": str(sdl), "language": "javascript"}
    (tmp_path / "relay.config.json").write_text(json.dumps(config))
    done = subprocess.run(
        [str(NODE_DIR / "node_modules" / ".bin" / "relay-compiler")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    made = sorted(p.name for p in (tmp_path / "src" / "__generated__").iterdir())
    assert made == [
        "AppArticleRefetchQuery.graphql.js",
        "AppListPaginationQuery.graphql.js",
        "AppQuery.graphql.js",
        "App_article.graphql.js",
        "App_list.graphql.js",
    ]
