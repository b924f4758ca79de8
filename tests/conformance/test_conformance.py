"""The conformance corpus must keep passing every case listed in `baseline.json`.

`SVC_CONFORMANCE_UPDATE_BASELINE=1` grows the baseline with today's passes (never shrinks it).
"""

from __future__ import annotations

import os

import httpx
import pytest

from tests.conformance.runner import (
    CORPUS,
    LAST_RUN_PATH,
    SKIP_REASON,
    SUPERSEDED,
    UPDATE_BASELINE_ENV,
    RunResult,
    compare_body,
    compare_step,
    format_summary,
    json_diff,
    missing_from_baseline,
    read_baseline,
    update_baseline,
)

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=SKIP_REASON)


def test_baseline_cases_pass(conformance_run: RunResult) -> None:
    """Every baseline case passes; with the update variable set, the baseline grows first."""
    print()
    print(format_summary(conformance_run))
    print(f"per-case results: {LAST_RUN_PATH}")
    if os.environ.get(UPDATE_BASELINE_ENV) == "1":
        ids = update_baseline(conformance_run)
        print(f"baseline.json: {len(ids)} cases")
    missing = list(missing_from_baseline(conformance_run, read_baseline()))
    assert not missing, f"{len(missing)} baseline case(s) no longer pass:\n" + "\n".join(
        f"  {case_id}: {reason}" for case_id, reason in missing
    )


def test_superseded_cases_fail_as_the_newer_reference(conformance_run: RunResult) -> None:
    """Each baseline case the reference has since changed (`runner.SUPERSEDED`) fails
    with exactly the difference the newer reference's answer makes; a pass, or another
    failure, is an error."""
    for case_id, (difference, reason) in SUPERSEDED.items():
        if case_id not in conformance_run.results:
            continue  # its directory is not run (`SVC_CONFORMANCE_ONLY`)
        result = conformance_run.results[case_id]
        assert difference in result, f"{case_id}: {result!r}, expected {difference!r} ({reason})"


def test_every_directory_reported(conformance_run: RunResult) -> None:
    """The pass-rate data covers each directory and each case once."""
    rates = conformance_run.rates()
    assert rates, "no case directories found"
    assert sum(total for _, total in rates.values()) == len(conformance_run.results)


def test_json_diff_rules() -> None:
    """Numbers compare by value, booleans are not numbers, key order does not matter."""
    assert json_diff({"a": 2, "b": [1, "x"]}, {"b": [1, "x"], "a": 2.0}) is None
    assert json_diff({"a": 1}, {"a": True}) == "$.a: expected 1, got true"
    assert json_diff({"a": "1"}, {"a": 1}) == '$.a: expected "1", got 1'
    assert json_diff({"a": [1]}, {"a": [1], "b": 0}) == "$.b: unexpected key (got 0)"


def test_error_bodies_compare_by_code() -> None:
    """Error messages and paths are not contract; codes and statuses are."""
    url = "/v1/graphql"
    exp = {"errors": [{"extensions": {"code": "validation-failed", "path": "$"}, "message": "x"}]}
    same = {
        "errors": [{"extensions": {"code": "validation-failed", "path": "$.a"}, "message": "y"}]
    }
    other = {"errors": [{"extensions": {"code": "bad-request"}, "message": "z"}]}
    assert compare_body(url, exp, same) is None
    assert compare_body(url, exp, other) is not None
    assert compare_body(url, [exp, {"data": {"a": 1}}], [same, {"data": {"a": 1}}]) is None
    step = {"url": "/v1/query", "status": 400, "response": {"code": "not-exists", "error": "e"}}
    body = {"code": "not-exists", "error": "other", "path": "$"}
    assert compare_step(step, 400, body, httpx.Headers()) is None
    assert compare_step(step, 200, body, httpx.Headers()) is not None
