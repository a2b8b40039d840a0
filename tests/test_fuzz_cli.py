"""Fuzzing the JSONL adapters and the ``dsgc`` command with malformed sessions and options.

Sessions are chat conversations (some valid, from ``test_messages.conversations``) and
garbage records, written as JSONL with lines truncated, invalid UTF-8 spliced in, or
wrong types.  Acceptable outcomes: for the adapters, the ids of every record or a
``SessionError`` naming the line, with nothing added; for the command (run in-process
through ``dsgc_fast.cli.main``, and as a few real processes), exit status 0 with a report
that keeps at most the budget and names every block, or status 1/2 with one ``dsgc: ``
message on stderr and no traceback (argparse usage errors exit 2 too).
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dsgc_fast.cli import main
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory._nesting import MAX_NESTING
from dsgc_fast.memory.block import MAX_COST
from dsgc_fast.memory.messages import SessionError, add_messages, add_records, check_messages, load_session, read_jsonl
from dsgc_fast.memory.store import MemoryStore

from ._cases import examples
from .test_messages import conversations

IDS = ["m0", "m1", "m3", "u1", "zz"]
CALL_IDS = ["call_0", "call_1", "call_2", "c9"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
junk = json_values | st.just(2**70) | st.just(-1) | st.just("\ud800")


def maybe(valid):
    """Mostly ``valid`` values, sometimes any JSON value."""
    return st.one_of(valid, valid, junk)


annotations = st.fixed_dictionaries(
    {},
    optional={
        "id": maybe(st.sampled_from(IDS)),
        "depends_on": maybe(st.lists(st.sampled_from(IDS), max_size=2)),
        "binds": maybe(st.dictionaries(st.sampled_from(["acct", "ticket"]), st.text(max_size=5), max_size=2)),
        "uses": maybe(st.lists(st.sampled_from(["acct", "ticket"]), max_size=2)),
        "pinned": maybe(st.booleans()),
        "cost": maybe(st.integers(0, 50) | st.just(MAX_COST + 1)),
    },
)
tool_calls = st.lists(
    st.fixed_dictionaries(
        {"id": maybe(st.sampled_from(CALL_IDS)), "type": st.just("function")},
        optional={
            "function": maybe(st.fixed_dictionaries({"name": maybe(st.text(max_size=4))}, optional={"arguments": junk}))
        },
    ),
    max_size=2,
)
messages = st.fixed_dictionaries(
    {"role": maybe(st.sampled_from(["system", "user", "assistant", "tool", "developer"]))},
    optional={
        "content": maybe(
            st.none()
            | st.text(max_size=20)
            | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}), max_size=2)
        ),
        "tool_calls": maybe(tool_calls),
        "tool_call_id": maybe(st.sampled_from(CALL_IDS)),
        "dsgc": maybe(annotations),
        "name": st.text(max_size=3),
    },
)
blocks = st.fixed_dictionaries(
    {"text": maybe(st.text(max_size=20))},
    optional={"id": maybe(st.sampled_from(IDS)), "meta": maybe(st.dictionaries(st.text(max_size=3), json_values, max_size=2)),
              "uses": maybe(st.lists(st.sampled_from(["acct"]), max_size=1)), "colour": json_values},
)  # fmt: skip
records = st.one_of(messages, messages, blocks, junk)


@st.composite
def session_lines(draw) -> list[bytes]:
    """JSONL lines: a valid conversation or random records, then some lines damaged (or nested deeply)."""
    if draw(st.integers(0, 2)):  # two in three: a valid conversation
        values = draw(conversations())
    else:
        values = draw(st.lists(records, min_size=1, max_size=8))
    lines = [json.dumps(v, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass") for v in values]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        k = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["truncate", "bad-utf8", "blank", "crlf", "nul", "deep"]))
        if how == "deep" and lines[k].startswith(b"{"):  # a field nested around the limits of each step
            depth = draw(st.sampled_from([99, 101, 500, 800, 3000]))
            lines[k] = b'{"deep": ' + b"[" * depth + b"]" * depth + b", " + lines[k][1:]
        elif how == "truncate":
            lines[k] = lines[k][: draw(st.integers(0, max(len(lines[k]) - 1, 0)))]
        elif how == "bad-utf8":
            at = draw(st.integers(0, len(lines[k])))
            lines[k] = (
                lines[k][:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80abc"])) + lines[k][at:]
            )
        elif how == "blank":
            lines.insert(k, b"   ")
        elif how == "crlf":
            lines[k] += b"\r"
        else:
            lines[k] = b"\x00" + lines[k]
    return lines


def state(store: MemoryStore) -> tuple:
    return store.total, store.ids(), store.archived_ids()


@given(data=st.binary(max_size=300) | session_lines().map(b"\n".join))
@example(data=b"\x1c")  # Unicode calls it whitespace, JSON does not: an error, not a blank line
@example(data=b'{"role": "user", "content": "a"}\n\x0c\n')
@settings(max_examples=examples(2))
def test_fuzz_read_jsonl_any_bytes(data):
    try:
        got = read_jsonl(io.BytesIO(data))
    except SessionError as exc:
        assert str(exc).startswith("line ") and exc.where.startswith("line ")
        return
    lines = data.split(b"\n")
    assert [n for n, _ in got] == [k + 1 for k, line in enumerate(lines) if line.strip(b" \t\r\n")]


@given(lines=session_lines())
@settings(max_examples=examples(3))
def test_fuzz_session_is_added_whole_or_not_at_all(lines):
    store = MemoryStore(encoder=LexicalEncoder())
    store.add("an earlier block", id="m0")
    before = state(store)
    try:
        ids = load_session(store, io.BytesIO(b"\n".join(lines) + b"\n"))
    except SessionError as exc:
        assert exc.where is not None and exc.where.startswith("line ") and str(exc)
        assert state(store) == before
        return
    assert store.total == before[0] + len(ids) and len(set(ids)) == len(ids)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-cli")


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
    return code, out.getvalue(), err.getvalue()


options = st.lists(
    st.one_of(
        st.tuples(st.just("--policy"), st.sampled_from(["dsgc", "similarity", "no_graph", "recency", "lru"])),
        st.tuples(st.just("--selection"), st.sampled_from(["first_fit", "prefix", "best"])),
        st.tuples(st.just("--tau"), st.sampled_from(["0.25", "1e-6", "1e6", "0", "-1", "nan", "inf", "x"])),
        st.tuples(st.just("--lambda-pi"), st.sampled_from(["0", "1", "1e300", "-2", "inf"])),
        st.tuples(st.just("--hops"), st.sampled_from(["1", "3", "0", "-1", "2.5"])),
        st.tuples(st.just("--query"), st.text(max_size=10)),
        st.tuples(st.just("--format"), st.sampled_from(["json", "table", "xml"])),
    ),
    max_size=3,
).map(lambda pairs: [x for pair in pairs for x in pair])


@given(
    lines=session_lines(),
    command=st.sampled_from(["retain", "explain"]),
    budget=st.sampled_from(["0", "5", "40", "1000", "-3", "1.5", "abc", str(2**63), str(2**70)]),
    opts=options,
    write=st.booleans(),
)
@settings(max_examples=examples(3))
def test_fuzz_cli_in_process(workdir, lines, command, budget, opts, write):
    session = workdir / "session.jsonl"
    session.write_bytes(b"\n".join(lines) + b"\n")
    out_path = workdir / "kept.jsonl"
    out_path.unlink(missing_ok=True)
    argv = [command, "--input", str(session), "--budget", budget, *opts]
    if write and command == "retain":
        argv += ["--write-messages", str(out_path)]
    if "--format" not in opts:
        argv += ["--format", "json"]
    code, out, err = run_main(argv)
    assert "Traceback" not in err
    if code != 0:
        assert code in (1, 2) and out == ""
        assert err.startswith("dsgc: ") or err.startswith("usage: dsgc"), err
        return
    if "table" in opts:
        assert out.strip()
        return
    decisions = json.loads(out)
    if command == "retain":
        assert decisions["used"] <= decisions["budget"] == int(budget)
        assert not set(decisions["kept"]) & set(decisions["evicted"])
        assert {d["id"] for d in decisions["decisions"]} == set(decisions["kept"]) | set(decisions["evicted"])
        if write:
            check_messages([json.loads(line) for line in out_path.read_text(encoding="utf-8").splitlines()])
    else:
        assert decisions["schema_version"] == 1 and all(isinstance(d["kept"], bool) for d in decisions["decisions"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"role": "user", "content": "a"}\n{"role": "user", "content": "caf\xc3"}\n', "line 2: invalid UTF-8"),
        (b'{"role": "user", "content": "a"}\n' + b"[" * 100_000 + b"\n", "line 2: invalid JSON: nested too deeply"),
        (b'{"role": "user", "content": "a", "dsgc": {"cost": 99999999999999999999999}}\n', "line 1: cost must be"),
        (b'{"role": "user", "content": "\\ud800"}\n', "line 1: text is not valid Unicode"),
        (b'{"role": "user", "content": "a"}\n{"role": "user", "content": "b", "dsgc": {"cost": -1}}\n', "line 2: cost"),
        # JSON parses but copying or encoding it recursed too deeply: RecursionError, exit 1
        (
            b'{"role": "user", "content": "a", "x": ' + b"[" * 500 + b"]" * 500 + b"}\n",
            "line 1: the message is nested more than 100",
        ),
        (
            b'{"role": "user", "content": "a", "x": ' + b'{"k":' * 800 + b"1" + b"}" * 800 + b"}\n",
            "line 1: the message is nested",
        ),
        (b'{"text": "a", "meta": {"x": ' + b"[" * 700 + b"]" * 700 + b"}}\n", "line 1: meta is nested more than 100"),
        # issue 28, defect 16: an integer over 4,300 digits gave Python's message, naming no file or line
        (
            b'{"role": "user", "content": "a"}\n{"role": "user", "content": "b", "x": ' + b"9" * 5000 + b"}\n",
            "line 2: invalid JSON: Exceeds the limit (4300 digits)",
        ),
    ],
)
def test_input_found_by_fuzzing_exits_2_naming_the_line(workdir, content, message):
    """Regression: these gave RecursionError/OverflowError tracebacks, or a UTF-8 error naming no line."""
    session = workdir / "bad.jsonl"
    session.write_bytes(content)
    code, out, err = run_main(["retain", "--input", str(session), "--budget", "10"])
    assert code == 2 and out == "" and err.startswith(f"dsgc: {session}: {message}"), err


def test_nesting_limit_holds_for_python_values_and_archived_rows(tmp_path):
    deep = "x"
    for _ in range(MAX_NESTING):
        deep = [deep]
    store = MemoryStore(encoder=LexicalEncoder())
    store.add("at the limit", meta={"v": deep[0]})  # 100 levels with the meta object itself
    with pytest.raises(ValueError, match="meta is nested more than 100 levels deep"):
        store.add("one deeper", meta={"v": deep})
    cyclic = {"role": "user", "content": "a"}
    cyclic["self"] = cyclic
    with pytest.raises(SessionError, match="^message 0: Circular reference"):
        add_messages(store, [cyclic])
    path = tmp_path / "deep.db"
    with MemoryStore(encoder=LexicalEncoder(), archive=path) as saved:
        saved.add("a block")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE active SET meta = ?", ('{"v": ' + "[" * 5000 + "]" * 5000 + "}",))
    with pytest.raises(ValueError, match="corrupt.*nested more than 100 levels deep"):
        MemoryStore(encoder=LexicalEncoder(), archive=path)


def test_an_internal_error_shows_its_traceback_and_exits_3(workdir, monkeypatch):
    """A bug is not an input error: its traceback shows, under a status of its own (not 1,
    the budget-too-small status a plain traceback gave)."""
    session = workdir / "ok.jsonl"
    session.write_text('{"role": "user", "content": "a"}\n')

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("dsgc_fast.cli.compact_messages", broken)
    code, out, err = run_main(["retain", "--input", str(session), "--budget", "10"])
    assert code == 3 and out == "" and "Traceback" in err and "RuntimeError: a bug" in err
    assert err.splitlines()[-1].startswith("dsgc: internal error")


def test_huge_budget_exits_2_without_a_traceback(workdir):
    session = workdir / "ok.jsonl"
    session.write_text('{"role": "user", "content": "a"}\n')
    code, _, err = run_main(["retain", "--input", str(session), "--budget", str(2**70)])
    assert code == 2 and err.startswith("dsgc: budget must be at most")


def test_a_failed_batch_adds_none_of_its_records():
    """Regression: a bad record used to leave the valid records before it in the store."""
    store = MemoryStore(encoder=LexicalEncoder())
    with pytest.raises(SessionError, match="^line 2: cost"):
        add_records(store, [("line 1", {"role": "user", "content": "a"}), ("line 2", {"text": "b", "cost": -1})])
    assert store.total == 0 and store.ids() == []
    assert add_records(store, [("line 1", {"role": "user", "content": "a"})]) == ["m0"]


def big_session(n: int) -> bytes:
    """``n`` turns of user / assistant-with-tool-call / tool / answer, one huge message in the middle."""
    lines = [{"role": "system", "content": "You are a support agent."}]
    for k in range(n):
        lines.append({"role": "user", "content": f"turn {k}: did account {k % 97} clear kyc before the refund?"})
        call = {
            "id": f"c{k}",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"acct": k % 97})},
        }
        lines.append({"role": "assistant", "content": None, "tool_calls": [call]})
        lines.append(
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"account {k % 97}: kyc clear, refund pending " * 3}
        )
        lines.append({"role": "assistant", "content": "word " * (200_000 if k == n // 2 else 12)})
    return b"\n".join(json.dumps(line).encode() for line in lines) + b"\n"


@pytest.mark.parametrize(
    ("content", "codes"),
    [
        (None, (0,)),  # a big valid session: 12,000 messages, one of 200,000 words
        (b"\xff\xfe\x00garbage\n", (2,)),
        (b'{"role": "user", "content": "a"}\n' + b"{" * 50_000 + b"\n", (2,)),
        (b'{"role": "user", "content": "a"}\n{"role": "user", "content": "b"', (2,)),  # truncated last line
    ],
)
def test_the_command_as_a_process(workdir, content, codes):
    session = workdir / "proc.jsonl"
    session.write_bytes(big_session(3000) if content is None else content)
    done = subprocess.run(
        [sys.executable, "-m", "dsgc_fast.cli", "retain", "--input", str(session), "--budget", "5000"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode in codes, done.stderr
    assert "Traceback" not in done.stderr
    if done.returncode == 0:
        report = json.loads(done.stdout)
        assert report["used"] <= 5000 and len(report["kept"]) + len(report["evicted"]) == 12001
    else:
        assert done.stderr.startswith("dsgc: ") and done.stderr.count("\n") == 1
