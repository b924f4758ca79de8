"""Streaming subscriptions as the reference serves them now, against `svc serve`: `x_stream`
offered without any experimental feature (Hasura v2.11.0 CHANGELOG: "server: enable
streaming subscriptions by default"), hidden by `hide_stream_fields`
(`server/src-lib/Hasura/GraphQL/Schema.hs`, `soIncludeStreamFields`), and
`/v1alpha1/config` reporting `streaming_queries` and `experimental_features`
(`server/src-lib/Hasura/Server/API/Config.hs`, `ServerConfig`)."""

from __future__ import annotations

from typing import Any

from tests.support import ServerProcess, create_database

STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": "create table item (id int primary key)"}},
    {"type": "track_table", "args": "item"},
]
ROOTS = "{ __schema { subscriptionType { fields { name } } } }"
ADMIN = {"X-Svc-Role": "admin"}


def _serve(pg_url: str, *args: str, env: dict[str, str]) -> ServerProcess:
    server = ServerProcess(create_database(pg_url), "--workers", "1", *args, env=env)
    assert server.query({"type": "bulk", "args": STEPS}).status_code == 200
    return server


def _subscription_roots(server: ServerProcess) -> set[str]:
    body = server.client.post("/v1/graphql", json={"query": ROOTS}, headers=ADMIN).json()
    return {f["name"] for f in body["data"]["__schema"]["subscriptionType"]["fields"]}


def test_default_streams_and_config(pg_url: str) -> None:
    """No variable: `item_stream` is there; the config reports the reference's defaults
    (`batch_size` 100, `refetch_delay` 1 second) and no experimental feature."""
    server = _serve(pg_url, env={"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": ""})
    try:
        assert "item_stream" in _subscription_roots(server)
        config = server.client.get("/v1alpha1/config", headers=ADMIN).json()
        assert config["streaming_queries"] == {"batch_size": 100, "refetch_delay": 1}
        assert config["experimental_features"] == []
        keys = list(config)
        assert keys.index("live_queries") + 1 == keys.index("streaming_queries")
    finally:
        server.stop()


def test_hide_stream_fields_and_options_in_config(pg_url: str) -> None:
    """`hide_stream_fields` hides `item_stream` (not `item`); the streaming options reach
    the config (refetch interval in seconds), and the features named (any case, unknown
    ones left out) are listed once each, `streaming_subscriptions` accepted."""
    env = {
        "SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "Streaming_Subscriptions, bogus, hide_stream_fields,"
        " streaming_subscriptions",
        "SVC_GRAPHQL_STREAMING_QUERIES_MULTIPLEXED_BATCH_SIZE": "7",
    }
    args = ("--streaming-queries-multiplexed-refetch-interval", "250")
    server = _serve(pg_url, *args, env=env)
    try:
        roots = _subscription_roots(server)
        assert "item" in roots and "item_stream" not in roots
        config = server.client.get("/v1alpha1/config", headers=ADMIN).json()
        assert config["streaming_queries"] == {"batch_size": 7, "refetch_delay": 0.25}
        assert config["live_queries"] == {"batch_size": 100, "refetch_delay": 1}
        assert config["experimental_features"] == ["streaming_subscriptions", "hide_stream_fields"]
    finally:
        server.stop()
