"""The ``dsgc`` command on the checked-in support-triage session (tests/data)."""

from __future__ import annotations

import importlib.metadata
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dsgc_fast import cli
from dsgc_fast.cli import main
from dsgc_fast.memory.messages import check_messages, read_jsonl
from dsgc_fast.memory.token_counts import TOKENS_REPLY_PRIMING, conversation_tokens
from dsgc_fast.memory.value_table import HEADER

SAMPLE = Path(__file__).parent / "data" / "support_triage.jsonl"
ALL_IDS = [f"t{k:02d}" for k in range(1, 20)]
# budget 140 o200k_base tokens (the default tokenizer, chat framing included), lexical encoder.
# The roots t01 and t19 and t12 (pinned by t19's "that account") cost 28 + 11 + 29 = 68.
# The default, the agent policy: the value table of the tool units' values (two each of t14's,
# t13's and t04's: 51 tokens) and t16 (rank 4, 19) beside them: 138.
KEPT_140 = ["t01", "t12", "t16", "t19"]
# with --no-values (messages only): the tool unit before the question (t13+t14, the charge lookup
# on the account, age 1, 55 tokens) gets working-set support and is kept first; then t10 (16).
KEPT_140_MESSAGES = ["t01", "t10", "t12", "t13", "t14", "t19"]
# the paper's dsgc: t16 (rank 2) and t10 fit; the t13+t14 unit (rank 4, 55 tokens) and the
# t03+t04 unit (52) do not; t02, lifted by the induced step -> user-message edge t03 -> t02 (the
# call repeats merchant M-2207), and t18 fill it to 140.
KEPT_140_PAPER = ["t01", "t02", "t10", "t12", "t16", "t18", "t19"]
# budget 60 in the paper's whitespace tokens (--tokenizer whitespace): roots and t12 cost 39; the
# value table of the tool units' values (13) and t11 (8) fill it.
KEPT_60_WHITESPACE = ["t01", "t11", "t12", "t19"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_retain_json_gives_the_expected_kept_set(capsys):
    code, out, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140")
    assert code == 0 and err == ""
    data = json.loads(out)  # stdout is not a terminal: JSON by default
    assert data["schema_version"] == 1 and data["over_budget"] is False and data["truncated"] == {}
    assert data["kept"] == KEPT_140 and data["policy"] == "agent" and data["used"] == 138
    assert [source for source, _ in data["value_table"]["entries"]] == ["t14", "t14", "t13", "t13", "t04", "t04"]
    assert data["value_table"]["cost"] == 51
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140", "--no-values")
    data = json.loads(out)
    assert code == 0 and data["kept"] == KEPT_140_MESSAGES and data["used"] == 139 and data["value_table"] is None
    why = {d["id"]: d for d in data["decisions"]}
    assert why["t13"]["reason"] == "kept_working" and why["t14"]["reason"] == "kept_closure"
    assert why["t13"]["working"] > why["t03"]["working"] > 0 == why["t16"]["working"]
    assert [why[i]["cost"] for i in ("t01", "t12", "t19")] == [28, 29, 11]


def test_the_value_table_can_be_turned_off(capsys):
    # budget 120: the default sends t10, t12 and a value table of the newest tool unit's values (36 tokens)
    _, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "120")
    data = json.loads(out)
    assert data["kept"] == ["t01", "t10", "t12", "t19"] and data["value_table"]["cost"] == 36 and data["used"] == 120
    for flag in ("--no-values", "--no-digests"):  # no digests: no table either
        _, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "120", flag)
        data = json.loads(out)
        assert data["value_table"] is None and data["kept"] == ["t01", "t10", "t12", "t16", "t18", "t19"]


def test_retain_json_with_the_paper_rule(capsys):
    code, out, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140", "--policy", "dsgc")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["kept"] == KEPT_140_PAPER and data["evicted"] == [i for i in ALL_IDS if i not in KEPT_140_PAPER]
    assert data["used"] == 140 and data["policy"] == "dsgc" and data["query"] == "Did that account clear KYC?"
    why = {d["id"]: d for d in data["decisions"]}
    assert why["t12"]["reason"] == "kept_pinned" and why["t12"]["chain"] == [["t19", "that account"]]
    assert why["t02"]["reason"] == "kept_relevance" and why["t02"]["support_from"] == [["t03", why["t03"]["relevance"]]]
    assert why["t03"]["reason"] == "skipped_no_fit" and why["t03"]["unit"] == ["t04"] and why["t03"]["unit_cost"] == 52
    assert why["t13"]["reason"] == "skipped_no_fit" and why["t13"]["unit"] == ["t14"] and why["t13"]["unit_cost"] == 55


def test_whitespace_tokens_are_the_papers_cost(capsys):
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "60", "--tokenizer", "whitespace")
    data = json.loads(out)
    assert code == 0 and data["kept"] == KEPT_60_WHITESPACE and data["used"] == 60
    assert data["value_table"]["cost"] == 13
    assert {d["id"]: d["cost"] for d in data["decisions"]}["t19"] == len(["Did", "that", "account", "clear", "KYC?"])
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140", "--tokenizer", "approx")
    assert code == 0 and "t12" in json.loads(out)["kept"]


def test_retain_table_is_readable(capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140", "--policy", "dsgc")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "policy dsgc, budget 140, used 140: kept 7 of 19 blocks, evicted 12"
    assert lines[2].split() == ["id", "decision", "rank", "cost", "score", "relevance", "support", "text", "why"]
    rows = {line.split()[0]: line for line in lines[4:] if line.strip()}
    assert sorted(rows) == ALL_IDS
    assert rows["t12"].split()[1] == "kept" and rows["t12"].endswith(
        "kept: pinned through t19 -uses 'that account'-> t12"
    )
    assert "Urgent one: account 8841-C" in rows["t12"]
    assert rows["t19"].endswith("kept: live root (pinned)")
    assert rows["t13"].endswith("evicted: did not fit the budget (rank 4, cost 55 with its closure t14)")


def test_explain_prints_score_parts_and_chains(capsys):
    code, out, _ = run(
        capsys, "explain", "--input", str(SAMPLE), "--budget", "140", "--id", "t12", "--id", "t03", "--format", "table"
    )
    assert code == 0
    assert "t12: kept: pinned through t19 -uses 'that account'-> t12" in out
    assert "referent chain: t19 -uses 'that account'-> t12" in out
    assert "support from dependents: t04 (r=" in out
    for part in ("similarity a =", "relevance  r =", "propagated pi =", "score      I ="):
        assert out.count(part) == 2
    code, out, _ = run(capsys, "explain", "--input", str(SAMPLE), "--budget", "140")
    data = json.loads(out)
    assert data["schema_version"] == 1 and [d["id"] for d in data["decisions"]] == ALL_IDS


@pytest.mark.parametrize("policy", ["agent", "dsgc", "similarity", "no_graph", "recency"])
@pytest.mark.parametrize("budget", [80, 120, 160, 240])
def test_turn_12_account_block_survives_every_policy_and_budget(capsys, policy, budget):
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", str(budget), "--policy", policy)
    data = json.loads(out)
    assert code == 0 and "t12" in data["kept"] and "t19" in data["kept"]


def test_without_the_referent_annotation_similarity_evicts_turn_12(capsys, tmp_path):
    stripped = tmp_path / "stripped.jsonl"
    lines = []
    for _, message in read_jsonl(SAMPLE):
        message["dsgc"].pop("binds", None)
        message["dsgc"].pop("uses", None)
        lines.append(json.dumps(message))
    stripped.write_text("\n".join(lines) + "\n")
    code, out, _ = run(capsys, "retain", "--input", str(stripped), "--budget", "100", "--policy", "similarity")
    assert code == 0 and "t12" in json.loads(out)["evicted"]


def test_write_messages_gives_a_valid_message_list(capsys, tmp_path):
    target = tmp_path / "kept.jsonl"
    code, _, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140", "--write-messages", str(target))
    messages = [m for _, m in read_jsonl(target)]
    check_messages(messages)
    original = {m["dsgc"]["id"]: {k: v for k, v in m.items() if k != "dsgc"} for _, m in read_jsonl(SAMPLE)}
    table = messages.pop(1)  # the value table follows the leading system message
    assert table["role"] == "system" and table["content"].startswith(HEADER)
    assert code == 0 and messages == [original[i] for i in KEPT_140]
    # byte for byte: the same keys in the same order as the input lines, minus the annotation
    written = target.read_text().splitlines()
    del written[1]
    assert written == [json.dumps(original[i], ensure_ascii=False) for i in KEPT_140]
    assert conversation_tokens([*messages, table]) == 138 + TOKENS_REPLY_PRIMING  # the budget is what the request costs


def test_an_unwritable_output_path_is_refused_before_any_work(capsys, tmp_path):
    missing = tmp_path / "no-such-dir" / "kept.jsonl"
    code, out, err = run(
        capsys, "retain", "--input", str(tmp_path / "absent.jsonl"), "--budget", "140", "--write-messages", str(missing)
    )
    assert code == 2 and out == "" and "does not exist" in err and "absent.jsonl" not in err
    code, _, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140", "--write-messages", str(tmp_path))
    assert code == 2 and "is a directory" in err


def test_input_from_standard_input(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SAMPLE.read_bytes())))
    code, out, _ = run(capsys, "retain", "--input", "-", "--budget", "140")
    assert code == 0 and json.loads(out)["kept"] == KEPT_140
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"role": "robot", "content": "x"}\n')))
    code, _, err = run(capsys, "retain", "--input", "-", "--budget", "140")
    assert code == 2 and err.startswith("dsgc: <stdin>: line 1: unknown role 'robot'")


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"dsgc {importlib.metadata.version('dsgc')}"


def test_over_budget_options(capsys):
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "30", "--on-over-budget", "roots_only")
    data = json.loads(out)
    assert code == 0 and data["over_budget"] is True and data["kept"] == ["t01", "t19"]
    code, _, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "30", "--on-over-budget", "truncate")
    assert code == 0


def test_progress_bar_on_a_terminal_only(capsys, monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.setattr(cli, "PROGRESS_CHUNK", 4)
    code, _, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140")
    assert code == 0 and err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140")
    assert code == 0 and "encoding" in err


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            ['{"role": "system", "content": "s"}', '{"role": "user", "content": "a"}', '{"role": "user", "content": '],
            "line 3: invalid JSON",
        ),
        (
            ['{"role": "user", "content": "a", "dsgc": {"id": "u1"}}', '{"text": "note", "depends_on": ["u9"]}'],
            "line 2: unknown dependency id 'u9'",
        ),
        (
            [
                '{"role": "user", "content": "a", "dsgc": {"id": "u1"}}',
                '{"role": "user", "content": "b", "dsgc": {"id": "u1"}}',
            ],
            "line 2: duplicate block id 'u1'",
        ),
        (
            ['{"role": "user", "content": "a"}', '{"role": "tool", "tool_call_id": "c7", "content": "r"}'],
            "line 2: tool result for call 'c7' has no matching assistant tool call",
        ),
        (
            ['{"role": "system", "content": "s"}', '{"role": "function", "content": "a"}'],
            "line 2: unknown role 'function'",
        ),
        (
            [
                '{"role": "user", "content": "a"}',
                '{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}',
            ],
            r"line 2: tool call(s) ['c1'] have no result",
        ),
    ],
)
def test_input_errors_name_the_line_without_a_traceback(capsys, tmp_path, lines, message):
    session = tmp_path / "bad.jsonl"
    session.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "retain", "--input", str(session), "--budget", "50")
    assert code == 2 and out == ""
    assert err.startswith(f"dsgc: {session}: {message}") and "Traceback" not in err


def test_budget_too_small_and_missing_files_exit_cleanly(capsys, tmp_path):
    code, out, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "40")
    assert code == 1 and out == "" and err.startswith("dsgc: budget too small: pinned blocks")
    assert "'t01', 't12', 't19'" in err
    code, _, err = run(capsys, "retain", "--input", str(tmp_path / "none.jsonl"), "--budget", "10")
    assert code == 2 and "No such file" in err
    code, _, err = run(capsys, "explain", "--input", str(SAMPLE), "--budget", "140", "--id", "t99")
    assert code == 2 and "'t99' is not a block" in err


def test_the_command_runs_as_a_process_and_is_the_declared_console_script():
    scripts = {e.name: e.value for e in importlib.metadata.entry_points(group="console_scripts")}
    assert scripts["dsgc"] == "dsgc_fast.cli:main"
    done = subprocess.run(
        [sys.executable, "-m", "dsgc_fast.cli", "retain", "--input", str(SAMPLE), "--budget", "140"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["kept"] == KEPT_140
    bad = subprocess.run(
        [sys.executable, "-m", "dsgc_fast.cli", "retain", "--input", str(SAMPLE), "--budget", "-3"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "budget must be >= 0" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.sentence
def test_sentence_encoder_keeps_the_account_block(capsys):
    pytest.importorskip("sentence_transformers")
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "140", "--encoder", "sentence")
    data = json.loads(out)
    assert code == 0 and "t12" in data["kept"] and data["used"] <= 140
