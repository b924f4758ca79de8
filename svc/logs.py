"""The process's one logging setup: the standard library's `logging`, one JSON object a
line, formatted by python-json-logger (its msgspec formatter).

Every module logs through `logging.getLogger(__name__)` and passes the whole line as a
dict, e.g. `log.error({"type": "worker-log", "level": "error", "worker": w, "message": m})`:
the dict is the line, field for field and in its order (the reference-compatible shapes
tests and docs rely on; nothing is added). `setup()` installs the handler on the `svc`
logger once per process (`svc.cli` for `svc serve` and each of its workers through the app
factories; tests may call it too).

A line logged as a string is written as it is: svc's plain `svc: ...` operator lines
(a worker's shutdown notes, a failed live-query push, a websocket operation's traceback).

Streams: the reference writes its request and websocket lines (`http-log`,
`websocket-log`) to stdout and svc keeps doing so, as it does its plain lines; every
other JSON line goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from pythonjsonlogger.msgspec import MsgspecFormatter

#: The line types written to stdout; all others go to stderr (module docstring).
STDOUT_TYPES = frozenset({"http-log", "websocket-log"})
_ROOT = "svc"


class _DictFormatter(MsgspecFormatter):
    """python-json-logger's msgspec formatter, asked for no fields of the record itself:
    a line logged as a dict is that dict encoded, without the per-record field gathering
    the line would not use (the request line is on the hot path)."""

    def format(self, record: logging.LogRecord) -> str:
        if isinstance(record.msg, dict) and not record.exc_info and not record.stack_info:
            return self.jsonify_log_record(record.msg)
        if isinstance(record.msg, str):  # a plain `svc: ...` line stays plain text
            return record.getMessage()
        return super().format(record)


class _Lines(logging.Handler):
    """Writes each formatted record as one line to stdout or stderr (`STDOUT_TYPES`),
    flushed; a closed stream drops the line silently (there is nowhere left to say so)."""

    def emit(self, record: logging.LogRecord) -> None:
        msg: Any = record.msg
        if isinstance(msg, dict):
            stream = sys.stdout if msg.get("type") in STDOUT_TYPES else sys.stderr
        else:
            stream = sys.stdout
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except (OSError, ValueError):  # stream closed: nothing more to do
            pass


def setup() -> None:
    """Install the JSON line handler on the `svc` logger (idempotent); lines are not passed
    on to the root logger, so an embedding application's handlers see none twice."""
    logger = logging.getLogger(_ROOT)
    if any(isinstance(h, _Lines) for h in logger.handlers):
        return
    handler = _Lines()
    # `fmt=[]`: no fields of the record itself, only the logged dict (module docstring).
    handler.setFormatter(_DictFormatter([]))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)  # which lines are written is decided where they are made
    logger.propagate = False
    # Record attributes no line uses, each costing a call per record (the logging HOWTO,
    # "Optimization"): the caller's frame, thread, process and task names.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
