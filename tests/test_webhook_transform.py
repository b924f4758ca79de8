"""The `test_webhook_transform` metadata operation on a real `svc serve`
(`svc.api.actions.ops.test_webhook_transform`, `svc.outbound.transform`), and the
validation of transforms at apply time.

Expected answers follow the reference's `server/tests-py/queries/v1/metadata/
test_webhook_transform*.yaml` (each case names its file) and, for what those files do not
cover, the reference's source (`Hasura/RQL/DDL/Webhook/Transform/*.hs`, `Metadata.hs`
`runTestWebhookTransform`). Header lists are compared without their order: the reference
lists `add_headers` in its HashMap's order, svc in the order written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url, prefix="twt"))
    try:
        yield s
    finally:
        s.stop()


def run(srv: ServerProcess, args: dict[str, Any]) -> tuple[int, Any]:
    r = srv.client.post("/v1/metadata", json={"type": "test_webhook_transform", "args": args})
    return r.status_code, r.json()


def same(got: Any, expected: dict[str, Any]) -> None:
    """Equal, header lists compared as multisets."""
    assert isinstance(got, dict), got
    assert sorted(map(tuple, got["headers"])) == sorted(map(tuple, expected["headers"]))
    rest = {k: v for k, v in got.items() if k != "headers"}
    assert rest == {k: v for k, v in expected.items() if k != "headers"}


def test_v2_url_method_query_headers_and_body(srv: ServerProcess) -> None:
    # test_webhook_transform_success.yaml (ba9ef069)
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "request_transform": {
                "version": 2,
                "url": "http://www.google.com",
                "template_engine": "Kriti",
                "body": {"action": "transform", "template": '"hello_{{ $body.hello }}"'},
                "method": "POST",
                "query_params": {"foo": "bar"},
                "request_headers": {
                    "add_headers": {"foo": "bar", "content-type": "application/json"}
                },
            },
        },
    )
    assert status == 200, body
    same(
        body,
        {
            "body": "hello_world",
            "headers": [["content-type", "application/json"], ["foo", "bar"]],
            "method": "POST",
            "webhook_url": "http://www.google.com?foo=bar",
        },
    )


def test_v1_body_is_a_template_string(srv: ServerProcess) -> None:
    # test_webhook_transform_success_old_body_schema.yaml
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "request_transform": {
                "url": "http://www.google.com",
                "template_engine": "Kriti",
                "body": '"hello_{{ $body.hello }}"',
                "method": "POST",
                "query_params": {"foo": "bar"},
                "request_headers": {
                    "add_headers": {"foo": "bar", "content-type": "application/json"}
                },
            },
        },
    )
    assert status == 200, body
    same(
        body,
        {
            "body": "hello_world",
            "headers": [["content-type", "application/json"], ["foo", "bar"]],
            "method": "POST",
            "webhook_url": "http://www.google.com?foo=bar",
        },
    )


def test_form_urlencoded_body(srv: ServerProcess) -> None:
    # test_webhook_transform_success_form_urlencoded.yaml
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "request_transform": {
                "version": 2,
                "url": "http://www.google.com",
                "template_engine": "Kriti",
                "body": {
                    "action": "x_www_form_urlencoded",
                    "form_template": {"foo": "bar", "baz": "{{$body.hello}}"},
                },
                "method": "POST",
                "query_params": {"foo": "bar"},
                "request_headers": {
                    "add_headers": {
                        "foo": "bar",
                        "content-type": "application/x-www-form-urlencoded",
                    }
                },
            },
        },
    )
    assert status == 200, body
    same(
        body,
        {
            "body": "foo=bar&baz=world",
            "headers": [
                ["content-type", "application/x-www-form-urlencoded"],
                ["foo", "bar"],
            ],
            "method": "POST",
            "webhook_url": "http://www.google.com?foo=bar",
        },
    )


def test_removed_body(srv: ServerProcess) -> None:
    # test_webhook_transform_success_remove_body.yaml
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "request_transform": {
                "version": 2,
                "url": "http://www.google.com",
                "template_engine": "Kriti",
                "body": {"action": "remove"},
                "method": "GET",
                "query_params": {"foo": "bar"},
                "request_headers": {"add_headers": {"foo": "bar"}},
            },
        },
    )
    assert status == 200, body
    same(
        body,
        {
            "headers": [["foo", "bar"]],
            "body": "",
            "method": "GET",
            "webhook_url": "http://www.google.com?foo=bar",
        },
    )


def test_webhook_url_from_the_given_env(srv: ServerProcess) -> None:
    # test_webhook_transform_env_reference_success.yaml (ba9ef069)
    status, body = run(
        srv,
        {
            "env": {"MY_WEBHOOK": "http://www.google.net"},
            "webhook_url": {"from_env": "MY_WEBHOOK"},
            "body": {"hello": "world"},
            "request_transform": {
                "version": 2,
                "url": "http://www.google.com",
                "template_engine": "Kriti",
                "body": {"action": "transform", "template": '"hello_{{ $body.hello }}"'},
                "method": "POST",
                "query_params": {"foo": "bar"},
                "request_headers": {
                    "add_headers": {"foo": "bar", "content-type": "application/json"}
                },
            },
        },
    )
    assert status == 200, body
    assert body["webhook_url"] == "http://www.google.com?foo=bar"
    assert body["body"] == "hello_world"


def test_env_templates_and_missing_variables(srv: ServerProcess) -> None:
    # Metadata.hs interpolateFromEnv: `{{NAME}}` from `env` only
    status, body = run(
        srv,
        {
            "env": {"BASE": "http://example.com"},
            "webhook_url": "{{BASE}}/api",
            "body": None,
            "request_transform": {"version": 2, "url": "{{$base_url}}/v2"},
        },
    )
    assert (status, body["webhook_url"], body["method"]) == (
        200,
        "http://example.com/api/v2",
        "GET",
    )
    status, body = run(
        srv,
        {"webhook_url": "{{NOPE}}/api", "body": {}, "request_transform": {"version": 2}},
    )
    assert status == 400 and body["code"] == "not-found", body
    assert body["error"].startswith("Missing Env Var: NOPE. For security reasons")
    status, body = run(
        srv,
        {"webhook_url": {"from_env": "NOPE"}, "body": {}, "request_transform": {"version": 2}},
    )
    assert (status, body["code"], body["error"]) == (400, "not-found", "Missing Env Var")


def test_untransformed_request_and_session_function(srv: ServerProcess) -> None:
    # test_webhook_transform_custom_functions.yaml (75fa4976), case 1: the original
    # request is `GET` with no headers; the URL gets its `/` path (http-client).
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "session_variables": {"myVariable": "some value"},
            "request_transform": {
                "body": '{{ getSessionVariable("myVariable") }}',
                "template_engine": "Kriti",
            },
        },
    )
    assert status == 200, body
    assert body == {
        "body": "some value",
        "headers": [],
        "method": "GET",
        "webhook_url": "http://localhost:1234/",
    }


def test_function_errors_are_validation_failures(srv: ServerProcess) -> None:
    # test_webhook_transform_custom_functions.yaml (75fa4976), cases 2 and 3
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "session_variables": {"myVariable": "some value"},
            "request_transform": {
                "body": '{{ getSessionVariable("this_variable_doesnt_exist") }}',
                "template_engine": "Kriti",
            },
        },
    )
    assert status == 400, body
    assert body["code"] == "validation-failed"
    assert body["error"] == "request transform validation failed"
    assert body["path"] == "$.args"
    assert body["internal"] == [
        {
            "error_code": "Function Error",
            "source_position": {
                "end_column": 51,
                "start_line": 0,
                "end_line": 0,
                "start_column": 23,
            },
            "message": 'Session variable "this_variable_doesnt_exist" not found',
        }
    ]
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "request_transform": {"body": '{{ fooFunction("myVariable") }}'},
        },
    )
    assert status == 400, body
    assert body["internal"] == [
        {
            "error_code": "Name Error",
            "message": "Variable 'fooFunction' not in scope",
            "source_position": {
                "end_column": 29,
                "end_line": 0,
                "start_column": 4,
                "start_line": 0,
            },
        }
    ]


def test_evaluation_error_with_its_position(srv: ServerProcess) -> None:
    # test_webhook_transform_bad_eval.yaml (caacac4d)
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "request_transform": {
                "version": 2,
                "body": {"action": "transform", "template": "{{ $body.world }}"},
                "template_engine": "Kriti",
            },
        },
    )
    assert status == 400, body
    assert (body["code"], body["error"], body["path"]) == (
        "validation-failed",
        "request transform validation failed",
        "$.args",
    )
    [error] = body["internal"]
    assert error["error_code"] == "Attribute Error"
    assert error["source_position"] == {
        "end_column": 15,
        "start_line": 0,
        "end_line": 0,
        "start_column": 4,
    }


PARSE_ERROR = {
    "error_code": "Parse Error",
    "message": "Unexpected token '}'.",
    "source_position": {"end_column": 15, "end_line": 0, "start_column": 14, "start_line": 0},
}


def test_parse_errors_of_request_and_response_transforms(srv: ServerProcess) -> None:
    # test_webhook_transform_bad_parse.yaml (5578599d), both cases
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "request_transform": {
                "version": 2,
                "body": {"action": "transform", "template": "$body.hello }}"},
                "template_engine": "Kriti",
            },
        },
    )
    assert status == 400, body
    assert body == {
        "code": "validation-failed",
        "error": "request transform validation failed",
        "path": "$.args",
        "internal": [PARSE_ERROR],
    }
    status, body = run(
        srv,
        {
            "webhook_url": "http://localhost:1234",
            "body": {"hello": "world"},
            "request_transform": {
                "version": 2,
                "body": {"action": "transform", "template": " {{ $body.hello }}"},
                "template_engine": "Kriti",
            },
            "response_transform": {
                "version": 2,
                "body": {"action": "transform", "template": "$body.hello }}"},
                "template_engine": "Kriti",
            },
        },
    )
    assert status == 400, body
    assert body == {
        "code": "validation-failed",
        "error": "response transform validation failed",
        "path": "$.args",
        "internal": [PARSE_ERROR],
    }


def test_query_params_templates_nulls_and_string_form(srv: ServerProcess) -> None:
    # Transform/QueryParams.hs: a key or value rendering to "null" drops the parameter, a
    # null value is the key alone; a string template is the whole query (parseQuery);
    # http-types renderQuery escapes all but alphanumerics and -_.~
    base = {"webhook_url": "http://h.io/p?orig=1", "body": {"id": 7, "q": "a b&c"}}
    status, body = run(
        srv,
        {
            **base,
            "request_transform": {
                "version": 2,
                "query_params": {
                    "id": "{{$body.id}}",
                    "q": "{{$body.q}}",
                    "gone": "{{$body.missing}}",
                    "flag": None,
                },
            },
        },
    )
    assert status == 400, body  # a missing key is an Attribute Error, not null
    status, body = run(
        srv,
        {
            **base,
            "request_transform": {
                "version": 2,
                "query_params": {
                    "id": "{{$body.id}}",
                    "q": "{{$body.q}}",
                    "gone": "{{$body?.missing}}",
                    "flag": None,
                },
            },
        },
    )
    assert status == 200, body
    assert body["webhook_url"] == "http://h.io/p?id=7&q=a%20b%26c&flag"
    status, body = run(
        srv,
        {
            **base,
            "request_transform": {"version": 2, "query_params": "x={{$body.id}}&y=a+b"},
        },
    )
    assert (status, body["webhook_url"]) == (200, "http://h.io/p?x=7&y=a%20b")
    # without a query_params transform the original query stays
    status, body = run(srv, {**base, "request_transform": {"version": 2, "method": "put"}})
    assert (status, body["webhook_url"], body["method"]) == (200, "http://h.io/p?orig=1", "put")


def test_context_variables_and_header_removal(srv: ServerProcess) -> None:
    # Transform/Request.hs: $base_url, $query_params ([[key, value]]), $session_variables;
    # Transform/Headers.hs: remove_headers by name in any case, add_headers appended
    status, body = run(
        srv,
        {
            "webhook_url": "http://h.io/p?a=1",
            "body": {"x": 1},
            "session_variables": {"X-Hasura-Role": "user"},
            "request_headers": [["X-Drop", "1"], ["X-Keep", "2"]],
            "request_transform": {
                "version": 2,
                "body": {
                    "action": "transform",
                    "template": '{"u": {{$base_url}}, "q": {{$query_params}}, '
                    '"role": {{$session_variables["x-hasura-role"]}}}',
                },
                "request_headers": {
                    "remove_headers": ["x-DROP"],
                    "add_headers": {"X-Role": "{{$session_variables['x-hasura-role']}}"},
                },
            },
        },
    )
    assert status == 200, body
    assert body["body"] == {"u": "http://h.io/p?a=1", "q": [["a", "1"]], "role": "user"}
    assert body["headers"] == [["x-keep", "2"], ["x-role", "user"]]


def test_malformed_transforms_and_bad_urls(srv: ServerProcess) -> None:
    # Types/Webhook/Transform.hs FromJSON (version 1 or 2; body actions);
    # Transform/Url.hs: the rendered URL must parse
    status, body = run(
        srv, {"webhook_url": "http://h.io", "body": {}, "request_transform": {"version": 3}}
    )
    assert (status, body["code"]) == (400, "parse-failed"), body
    assert body["error"] == "expected 1 or 2, encountered 3"
    status, body = run(
        srv,
        {
            "webhook_url": "http://h.io",
            "body": {},
            "request_transform": {"version": 2, "body": {"action": "nope"}},
        },
    )
    assert (status, body["code"], body["error"]) == (
        400,
        "parse-failed",
        "invalid transform action",
    )
    status, body = run(
        srv,
        {
            "webhook_url": "http://h.io",
            "body": {},
            "request_transform": {"version": 2, "url": "not a url {{$body}}"},
        },
    )
    assert (status, body["code"]) == (400, "validation-failed"), body
    assert body["internal"][0]["error_code"] == "TransformationError"
    assert body["internal"][0]["message"].startswith("Invalid URL: ")
    status, body = run(srv, {"webhook_url": "nope", "body": {}, "request_transform": {}})
    assert status == 400, body
    assert body["internal"][0]["error_code"] == "Request Initialization Error"


def test_create_action_refuses_a_template_that_does_not_parse(srv: ServerProcess) -> None:
    # Metadata.hs: validateTransforms before create_action / update_action /
    # pg_create_event_trigger / create_cron_trigger (Transform/Validation.hs)
    r = srv.client.post(
        "/v1/metadata",
        json={
            "type": "create_action",
            "args": {
                "name": "act",
                "definition": {
                    "handler": "http://127.0.0.1:9",
                    "output_type": "String",
                    "type": "query",
                    "request_transform": {
                        "version": 2,
                        "body": {"action": "transform", "template": "$body.hello }}"},
                    },
                },
            },
        },
    )
    assert r.status_code == 400, r.text
    assert r.json() == {
        "code": "validation-failed",
        "error": "request transform validation failed",
        "path": "$.args",
        "internal": [PARSE_ERROR],
    }
    r = srv.client.post(
        "/v1/metadata",
        json={
            "type": "create_cron_trigger",
            "args": {
                "name": "c",
                "webhook": "http://127.0.0.1:9",
                "schedule": "0 0 * * *",
                "include_in_metadata": True,
                "response_transform": {
                    "version": 2,
                    "body": {"action": "transform", "template": "{{"},
                },
            },
        },
    )
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "response transform validation failed"
