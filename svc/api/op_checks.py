"""Running one metadata operation with its checks: `run_checked` calls the record's
handler, then each check the record declares, in `CHECK_ORDER` (the order of
`svc.api.op_registry.Check`), every one comparing the request's state with the snapshot
taken before the handler ran. A check may refuse (raise `SvcError`: the request's
transaction is rolled back), change the document (`Context.commit`) or amend the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from svc.api import collections, event_triggers, remote_ops, remote_rel_ops, scheduled
from svc.api.op_context import Before, CheckStep, Context, QueryBody
from svc.api.op_registry import CHECK_ORDER, Check, Operation
from svc.api.source_focus import run_handler

STEPS: Mapping[Check, CheckStep] = {
    Check.COLLECTIONS: collections.check_collections,
    Check.REMOTE_RENAMES: remote_rel_ops.follow_renames,
    Check.REMOTE_CONFLICTS: remote_ops.refuse_conflicts,
    Check.INTROSPECT_REMOTES: remote_ops.introspect_remotes,
    Check.REFRESH_REMOTES: remote_ops.refresh_remotes,
    Check.REMOTE_ISSUES: remote_ops.list_remote_issues,
    Check.CRON_EXPORT: scheduled.export_crons,
    Check.CRON_KEEP: scheduled.keep_crons,
    Check.TRIGGER_COLUMNS: event_triggers.check_trigger_columns,
    Check.SYNC_TRIGGERS: event_triggers.sync_triggers,
    Check.RESYNC_TRIGGERS: event_triggers.resync_triggers,
    Check.SYNC_TRIGGERS_DROP_LOG: event_triggers.sync_triggers_drop_log,
}


async def run_checked(op: Operation, ctx: Context, body: QueryBody) -> Any:
    """`op`'s answer to `body`: its handler, then its checks in `CHECK_ORDER`. Raises what
    the handler or a check raises."""
    before = Before.of(ctx)
    result = await run_handler(op.name, op.handler, ctx, body)  # on the source it names
    for check in CHECK_ORDER:
        if check in op.checks:
            result = await STEPS[check](ctx, body, before, result)
    return result
