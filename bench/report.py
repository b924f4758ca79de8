"""Targets of issue 6, the printed tables, and the chart."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Issue 6: svc's req/s over PostGraphile v4's, per query.
VS_POSTGRAPHILE = {
    "artist_by_pk": 1.0,
    "albums_tracks_genre_some": 2.5,
    "tracks_media_some": 2.5,
    "search_albums_with_artist": 2.5,
    "albums_tracks_genre_all": 6.0,
    "tracks_media_all": 6.0,
}
# Issue 23: svc's req/s over PostGraphile v4's and v5's on every shared query.
VS_POSTGRAPHILE_ANY = 1.5
VS_LIMIT = 0.85  # svc's req/s over the limit server's (RSGI), every query
VS_LIMIT_ASGI = 0.95  # svc's req/s over the ASGI limit server's, every query
RSS_MB = 100.0  # per svc process under load
WARM_US = 30.0
COLD_MS = 1.0  # three-level query
SCHEMA_S = 1.0  # 1,000 tables
TRACK_MS = 200.0  # with 2,000 tables tracked


@dataclass(frozen=True)
class Target:
    """One target of issue 6 and how this run did; `ok` is None when not measured."""

    name: str
    value: float | None
    bound: str
    ok: bool | None

    def line(self) -> str:
        """`PASS|FAIL|n/a  name: value (bound)`."""
        verdict = "n/a " if self.ok is None else "PASS" if self.ok else "FAIL"
        shown = "not measured" if self.value is None else f"{self.value:,.2f}"
        return f"{verdict}  {self.name}: {shown} (target {self.bound})"


def at_least(name: str, value: float | None, bound: float) -> Target:
    """A target met when `value ≥ bound`."""
    return Target(name, value, f">= {bound:g}", None if value is None else value >= bound)


def at_most(name: str, value: float | None, bound: float) -> Target:
    """A target met when `value ≤ bound`."""
    return Target(name, value, f"<= {bound:g}", None if value is None else value <= bound)


def print_targets(targets: list[Target]) -> None:
    """One PASS/FAIL line per target."""
    print("\nTargets (issue 6):")
    for t in targets:
        print("  " + t.line())


def targets_json(targets: list[Target]) -> list[dict[str, Any]]:
    """The targets as JSON-able objects."""
    return [asdict(t) for t in targets]


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain text table, columns right-aligned except the first."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def fmt(row: list[str]) -> str:
        cells = [row[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        return "  ".join(cells)

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(headers), rule, *(fmt(r) for r in rows)])


def chart(results: dict[str, Any], servers: list[str], path: Path) -> None:
    """Requests per second per query and server (log scale), and svc's ratios."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 8), sharex=True)
    width = 0.8 / len(servers)
    for i, server in enumerate(servers):
        values = [(results[n].get(server) or {}).get("rps", 0) for n in names]
        xs = [x + (i - (len(servers) - 1) / 2) * width for x in range(len(names))]
        top.bar(xs, values, width, label=server)
    top.set_yscale("log")
    top.set_ylabel("requests / s (log)")
    top.legend()
    top.set_title("svc vs PostGraphile v4 and v5 vs limit server (same SQL, RSGI + uvloop)")
    keys = [f"svc/{s}" for s in servers if s != "svc"]
    step = 0.8 / max(1, len(keys))
    for i, key in enumerate(keys):
        values = [results[n].get(key) or 0 for n in names]
        xs = [x + (i - (len(keys) - 1) / 2) * step for x in range(len(names))]
        bottom.bar(xs, values, step, label=key)
    bottom.axhline(1.0, color="grey", linewidth=0.8)
    bottom.axhline(VS_LIMIT, color="tab:orange", linestyle="--", linewidth=0.8)
    bottom.set_ylabel("ratio (svc / other)")
    bottom.legend()
    bottom.set_xticks(range(len(names)), names, rotation=25, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
