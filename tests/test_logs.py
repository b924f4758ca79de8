"""The one logging setup (`svc.logs`): the logged dict is the JSON line, field for field,
on stdout for request and websocket lines and on stderr for the others."""

from __future__ import annotations

import json
import logging

import pytest

from svc import logs


def test_lines_keep_their_shape_and_stream(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup()
    logs.setup()  # idempotent: one handler, one line per record
    http = {"type": "http-log", "level": "info", "request_id": "r", "status": 200}
    worker = {"type": "worker-log", "level": "error", "worker": "w", "message": "boom"}
    logging.getLogger("svc.server.app").info(http)
    logging.getLogger("svc.workers.worker").error(worker)
    out, err = capsys.readouterr()
    assert [json.loads(line) for line in out.splitlines()] == [http]
    assert [json.loads(line) for line in err.splitlines()] == [worker]
    assert list(json.loads(err)) == list(worker)  # field order kept


def test_plain_lines_stay_plain(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup()
    logging.getLogger("svc.api.live.handle").error("svc: live query push failed: 100%")
    out, err = capsys.readouterr()
    assert (out, err) == ("svc: live query push failed: 100%\n", "")
