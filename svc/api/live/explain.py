"""Explain of a subscription (reference notes "Explain of a subscription"):
the multiplexed statement the poller runs, its Postgres plan for one cohort, and that
cohort's variables (the reference's `SubscriptionQueryPlanExplanation`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import msgspec

from svc.api.live.cohort import cohort_vars
from svc.api.live.stream import stream_vars
from svc.execute.db import Database
from svc.sql.live import LiveStatement
from svc.sql.stream import StreamStatement


async def explain_subscription(
    db: Database, live: LiveStatement, variables: Mapping[str, Any], user: Mapping[str, str]
) -> dict[str, Any]:
    """`{sql, plan, variables}`: `sql` the multiplexed statement (`svc.sql.live`), `plan`
    Postgres's `EXPLAIN` lines for it with one cohort, `variables` that cohort's
    `{query, session, synthetic, cursor}` (`session`: only what the statement reads).
    Raises `SvcError` `not-found` for a session variable it reads that `user` lacks, and
    the mapped Postgres error."""
    if isinstance(live, StreamStatement):  # its cursor starts at the initial value
        vars_text = stream_vars(live, variables, user)
    else:
        vars_text = cohort_vars(live, variables, user)
    plan = await db.explain(live.sql, [[str(uuid.uuid4())], [vars_text]])
    return {"sql": live.sql, "plan": plan, "variables": msgspec.json.decode(vars_text)}
