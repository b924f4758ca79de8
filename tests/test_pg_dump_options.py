"""The pg_dump API takes options by an allow-list (issue 11, finding 7): exact option names
and argument forms, parsed as getopt parses them; abbreviations (`--fi=/path`), files,
other databases and positional arguments are refused with 400 at `$.opts[i]`, and nothing
is written; legitimate options still dump svc's own database. The allow-list itself is
checked directly, then over HTTP against a real server and the machine's pg_dump."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from svc.errors import SvcError
from svc.execute.pg_dump import check_options
from tests.support import ServerProcess, create_database

SQL = """
create table note (id serial primary key, body text not null);
create table secret_stuff (id int);
insert into note (body) values ('svc-own-row'), ('second row');
"""

ACCEPTED = [
    [],
    ["-O", "-x", "--schema-only", "--table", "public.note"],
    ["--schema=public", "--data-only", "--inserts"],
    ["-sOx"],  # combined short flags
    ["-tnote", "-npublic"],  # argument in the same element
    ["-st", "note"],  # flag then an option whose argument is the next element
    ["--table", "--file=/tmp/x"],  # a value, as getopt reads it: a table pattern
    ["-Fp", "--format=plain", "-F", "PLAIN"],
    ["--column-inserts", "--rows-per-insert=2", "--on-conflict-do-nothing"],
    ["-c", "--if-exists", "--no-comments", "--no-tablespaces", "--quote-all-identifiers"],
    ["-E", "UTF8", "--encoding=UTF8", "-N", "x", "--exclude-schema=y", "-T", "z"],
    ["--exclude-table=z", "--exclude-table-data=note", "--disable-triggers"],
]

# (opts, index of the refused element, words of the message)
REFUSED = [
    (["--fi=/tmp/x"], 0, "--fi is not allowed"),  # getopt would take it for --file
    (["--file=/tmp/x"], 0, "--file is not allowed"),
    (["-f", "/tmp/x"], 0, "-f is not allowed"),
    (["-f/tmp/x"], 0, "-f is not allowed"),
    (["-fx"], 0, "-f is not allowed"),
    (["-sf", "/tmp/x"], 0, "-f is not allowed"),  # a refused letter among flags
    (["-O", "-d", "other"], 1, "-d is not allowed"),
    (["--dbname=other"], 0, "--dbname is not allowed"),
    (["--dbn=other"], 0, "--dbn is not allowed"),
    (["-h", "evil.example"], 0, "-h is not allowed"),
    (["--host=evil.example"], 0, "--host is not allowed"),
    (["-p", "1"], 0, "-p is not allowed"),
    (["-U", "postgres"], 0, "-U is not allowed"),
    (["-W"], 0, "-W is not allowed"),
    (["--role=postgres"], 0, "--role is not allowed"),
    (["-j", "4"], 0, "-j is not allowed"),
    (["-Z", "9"], 0, "-Z is not allowed"),
    (["-Fc"], 0, "only plain text"),
    (["--format=directory"], 0, "only plain text"),
    (["-F", "t"], 1, "only plain text"),
    (["--sch"], 0, "--sch is not allowed"),  # abbreviation of --schema(-only)
    (["--schema-only=yes"], 0, "takes no argument"),
    (["-t"], 0, "needs an argument"),
    (["--table"], 0, "needs an argument"),
    (["-s", "postgres"], 1, "is not allowed: only options"),  # a database name
    (["--", "-s"], 0, "is not allowed: only options"),
    (["-"], 0, "is not allowed: only options"),
    ([""], 0, "is not allowed: only options"),
    (["--table=a\x00b"], 0, "NUL"),
    (["--include-foreign-data=srv"], 0, "not allowed"),
    (["--snapshot=x"], 0, "not allowed"),
    (["-V"], 0, "-V is not allowed"),
]


@pytest.mark.parametrize("opts", ACCEPTED)
def test_allow_list_accepts(opts: list[str]) -> None:
    check_options(opts)


@pytest.mark.parametrize(("opts", "index", "words"), REFUSED)
def test_allow_list_refuses(opts: list[str], index: int, words: str) -> None:
    with pytest.raises(SvcError) as caught:
        check_options(opts)
    assert caught.value.code == "bad-request"
    assert caught.value.status == 400
    assert caught.value.path == f"$.opts[{index}]"
    assert words in caught.value.message


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url))
    try:
        assert s.query({"type": "run_sql", "args": {"sql": SQL}}).status_code == 200
        yield s
    finally:
        s.stop()


def dump(s: ServerProcess, opts: list[str], clean_output: bool = False) -> tuple[int, str]:
    r = s.client.post("/v1alpha1/pg_dump", json={"opts": opts, "clean_output": clean_output})
    return r.status_code, r.text


@pytest.mark.parametrize(
    "make",
    [
        lambda p: ["--fi=" + p],
        lambda p: ["--fil", p],
        lambda p: ["-f" + p],
        lambda p: ["-sOf", p],
        lambda p: ["--file=" + p],
    ],
)
def test_no_file_is_written(
    srv: ServerProcess, tmp_path: Path, make: Callable[[str], list[str]]
) -> None:
    target = tmp_path / f"dump-{uuid.uuid4().hex}.sql"
    opts = make(str(target))
    status, text = dump(srv, opts)
    assert status == 400, text
    assert '"code":"bad-request"' in text.replace(" ", "")
    assert not target.exists()


@pytest.mark.parametrize(
    "opts",
    [
        ["-d", "postgres"],
        ["--dbname=postgres"],
        ["--dbname", "postgresql://127.0.0.1:1/elsewhere"],
        ["-h", "127.0.0.1", "-p", "1"],
        ["postgres"],
    ],
)
def test_other_databases_are_refused(srv: ServerProcess, opts: list[str]) -> None:
    status, text = dump(srv, opts)
    assert status == 400, text


def test_legit_options_dump_svcs_own_database(srv: ServerProcess) -> None:
    status, text = dump(srv, ["-O", "-x", "--schema-only", "--table", "public.note"], True)
    assert status == 200, text
    assert "CREATE TABLE public.note" in text and "secret_stuff" not in text
    assert "svc-own-row" not in text  # schema only

    status, text = dump(srv, ["-sOx", "-tnote"])
    assert status == 200, text
    assert "CREATE TABLE public.note" in text and "secret_stuff" not in text

    status, text = dump(srv, ["--data-only", "--column-inserts", "--table=note"])
    assert status == 200, text
    assert "INSERT INTO public.note (id, body) VALUES (1, 'svc-own-row');" in text

    status, text = dump(srv, ["-c", "--if-exists", "-Fp", "-T", "note", "--no-comments"])
    assert status == 200, text
    assert "DROP TABLE IF EXISTS public.secret_stuff;" in text
    assert "CREATE TABLE public.note" not in text

    status, text = dump(srv, ["--inserts", "--rows-per-insert=2", "-a", "-t", "note"])
    assert status == 200, text
    assert "(1, 'svc-own-row')" in text and "(2, 'second row')" in text
