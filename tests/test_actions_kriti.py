"""Kriti as action transforms use it (`svc.outbound.kriti`): values, paths, string
interpolation, `range`, `if`/`else`, and refusals. kriti-lang's own cases are in
`tests/test_kriti.py`; as in kriti-lang, a missing key is an error unless reached through
`?.`, and `{{ if }}` needs its `{{ else }}`."""

from __future__ import annotations

from typing import Any

import pytest

from svc.outbound.kriti import KritiError, render

BODY = {
    "input": {"arg": {"id": "7", "name": "Ada"}},
    "addresses": [{"city": "Bangalore"}, {"city": "Melbourne"}],
    "ids": [1, 2],
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (
            '{"id": {{ $body.input.arg.name }}, "n": {{ $body.input.arg.id }}}',
            {"id": "Ada", "n": "7"},
        ),
        ('{"c": {{ $body.addresses[1].city }}}', {"c": "Melbourne"}),
        ('{"missing": {{ $body?.nope.deeper }}}', {"missing": None}),
        ('"hi {{ $body.input.arg.name }} #{{ $body.ids[0] }}"', "hi Ada #1"),
        (
            '{{ range i, x := $body.ids }} {"id": {{ x }}, "i": {{ i }}} {{ end }}',
            [{"id": 1, "i": 0}, {"id": 2, "i": 1}],
        ),
        (
            "{{ range i, x := $body.addresses }}"
            "{{ if i > 0 }}{{ x.city }}{{ else }}null{{ end }}{{ end }}",
            [None, "Melbourne"],
        ),
        ("{{ if $body.ids[0] == 1 && $body.ids[1] != 1 }} true {{ else }} false {{ end }}", True),
        ("{{ if $body?.nope ?? false }} 1 {{ else }} null {{ end }}", None),
        (
            '[1, 2.5, "x", true, false, null, {"a": []}]',
            [1, 2.5, "x", True, False, None, {"a": []}],
        ),
        ("{{ $session_variables['x-svc-role'] }}", "admin"),
        ("{{ $body?.input?.arg.name }}", "Ada"),
    ],
)
def test_templates(template: str, expected: Any) -> None:
    scope = {"$body": BODY, "$session_variables": {"x-svc-role": "admin"}}
    assert render(template, scope) == expected


@pytest.mark.parametrize(
    "template",
    [
        '{"a": }',
        '{"a": 1',
        "{{ range x := $body.ids }} 1 {{ end }}",
        "{{ if $body.ids > 1 }} 1 {{ end }}",
        "{{ $body.nope }}",
        "{{ if 1 }} 1 {{ else }} 2 {{ end }}",
        "{{ range i, x := $body.input }} 1 {{ end }}",
        "1 2",
        "@",
        "{{ $session_variables.x-svc-role }}",
    ],
)
def test_templates_outside_the_subset_are_refused(template: str) -> None:
    with pytest.raises(KritiError):
        render(template, {"$body": BODY})
