"""`hdb_catalog.hdb_action_log`: the calls of asynchronous actions (reference notes,
"hdb_action_log"; the reference's columns, plus `locked` for the worker runtime's claims,
`svc.sql.claim`). Fixed statements, parameters `$n` as text cast in SQL."""

from __future__ import annotations

ACTION_LOG_DDL = """
CREATE TABLE IF NOT EXISTS hdb_catalog.hdb_action_log (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  action_name text,
  input_payload jsonb NOT NULL,
  request_headers jsonb NOT NULL,
  session_variables jsonb NOT NULL,
  response_payload jsonb,
  errors jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  response_received_at timestamptz,
  status text NOT NULL,
  locked timestamptz,
  CHECK (status IN ('created', 'processing', 'completed', 'error'))
);
"""

# $1 action, $2 input (json), $3 request headers (json), $4 session variables (json).
INSERT_CALL_SQL = (
    "INSERT INTO hdb_catalog.hdb_action_log "
    "(action_name, input_payload, request_headers, session_variables, status) "
    "VALUES ($1::text, $2::text::jsonb, $3::text::jsonb, $4::text::jsonb, 'created') "
    "RETURNING id::text"
)
# $1 id: the stored call with its status (for the `<action>(id)` query).
# One row always: the call as json, or null when there is none.
READ_CALL_SQL = (
    "SELECT (SELECT json_build_object('id', id, 'created_at', created_at, 'errors', errors, "
    "'output', response_payload, 'session_variables', session_variables, "
    "'action_name', action_name) "
    "FROM hdb_catalog.hdb_action_log WHERE id = $1::text::uuid)"
)
# $1 id, $2 response (json): the handler answered.
COMPLETE_SQL = (
    "UPDATE hdb_catalog.hdb_action_log SET response_payload = $2::text::jsonb, "
    "status = 'completed', response_received_at = now(), locked = NULL "
    "WHERE id = $1::text::uuid"
)
# $1 id, $2 errors (json): the call failed for good.
FAIL_SQL = (
    "UPDATE hdb_catalog.hdb_action_log SET errors = $2::text::jsonb, status = 'error', "
    "response_received_at = now(), locked = NULL WHERE id = $1::text::uuid"
)
# $1 id: a claimed call is now being processed.
PROCESSING_SQL = (
    "UPDATE hdb_catalog.hdb_action_log SET status = 'processing' WHERE id = $1::text::uuid"
)
# $1 action name: `drop_action` with `clear_data`.
CLEAR_SQL = "DELETE FROM hdb_catalog.hdb_action_log WHERE action_name = $1::text"
