"""The ``dsgc`` command on the checked-in support-triage session (tests/data)."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dsgc_fast.cli import main
from dsgc_fast.messages import check_messages, read_jsonl

SAMPLE = Path(__file__).parent / "data" / "support_triage.jsonl"
ALL_IDS = [f"t{k:02d}" for k in range(1, 20)]
# budget 60, lexical encoder, the paper's dsgc: the roots t01 and t19 and t12 (pinned by t19's
# "that account") cost 39; then t16 (rank 2) fits, t10 and the t13+t14 unit do not, the t03+t04
# unit fills it.
KEPT_60_PAPER = ["t01", "t03", "t04", "t12", "t16", "t19"]
# the default, the agent policy: the two tool units before the question (t13+t14, the charge
# lookup on the account, age 1; t03+t04, age 2) get working-set support and are kept first.
KEPT_60 = ["t01", "t03", "t04", "t12", "t13", "t14", "t19"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_retain_json_gives_the_expected_kept_set(capsys):
    code, out, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "60")
    assert code == 0 and err == ""
    data = json.loads(out)  # stdout is not a terminal: JSON by default
    assert data["kept"] == KEPT_60 and data["policy"] == "agent" and data["used"] == 58
    why = {d["id"]: d for d in data["decisions"]}
    assert why["t13"]["reason"] == "kept_working" and why["t14"]["reason"] == "kept_closure"
    assert why["t13"]["working"] > why["t03"]["working"] > 0 == why["t16"]["working"]


def test_retain_json_with_the_paper_rule(capsys):
    code, out, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "60", "--policy", "dsgc")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["kept"] == KEPT_60_PAPER and data["evicted"] == [i for i in ALL_IDS if i not in KEPT_60_PAPER]
    assert data["used"] == 60 and data["policy"] == "dsgc" and data["query"] == "Did that account clear KYC?"
    why = {d["id"]: d for d in data["decisions"]}
    assert why["t12"]["reason"] == "kept_pinned" and why["t12"]["chain"] == [["t19", "that account"]]
    assert why["t04"]["reason"] == "kept_closure" and why["t04"]["chain"] == [["t03", "tool_result:call_payout_1"]]
    assert why["t13"]["reason"] == "skipped_no_fit" and why["t13"]["unit"] == ["t14"] and why["t13"]["unit_cost"] == 10


def test_retain_table_is_readable(capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "60", "--policy", "dsgc")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "policy dsgc, budget 60, used 60: kept 6 of 19 blocks, evicted 13"
    assert lines[2].split() == ["id", "decision", "rank", "cost", "score", "relevance", "support", "text", "why"]
    rows = {line.split()[0]: line for line in lines[4:] if line.strip()}
    assert sorted(rows) == ALL_IDS
    assert rows["t12"].split()[1] == "kept" and rows["t12"].endswith("kept: pinned through t19 -uses 'that account'-> t12")
    assert "Urgent one: account 8841-C" in rows["t12"]
    assert rows["t19"].endswith("kept: live root (pinned)")
    assert rows["t13"].endswith("evicted: did not fit the budget (rank 4, cost 10 with its closure t14)")


def test_explain_prints_score_parts_and_chains(capsys):
    code, out, _ = run(capsys, "explain", "--input", str(SAMPLE), "--budget", "60", "--id", "t12", "--id", "t03", "--format", "table")
    assert code == 0
    assert "t12: kept: pinned through t19 -uses 'that account'-> t12" in out
    assert "referent chain: t19 -uses 'that account'-> t12" in out
    assert "support from dependents: t04 (r=" in out
    for part in ("similarity a =", "relevance  r =", "propagated pi =", "score      I ="):
        assert out.count(part) == 2
    code, out, _ = run(capsys, "explain", "--input", str(SAMPLE), "--budget", "60")
    assert [d["id"] for d in json.loads(out)] == ALL_IDS


@pytest.mark.parametrize("policy", ["agent", "dsgc", "similarity", "no_graph", "recency"])
@pytest.mark.parametrize("budget", [40, 60, 80, 120])
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
    code, out, _ = run(capsys, "retain", "--input", str(stripped), "--budget", "60", "--policy", "similarity")
    assert code == 0 and "t12" in json.loads(out)["evicted"]


def test_write_messages_gives_a_valid_message_list(capsys, tmp_path):
    target = tmp_path / "kept.jsonl"
    code, _, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "60", "--write-messages", str(target))
    messages = [m for _, m in read_jsonl(target)]
    check_messages(messages)
    original = {m["dsgc"]["id"]: {k: v for k, v in m.items() if k != "dsgc"} for _, m in read_jsonl(SAMPLE)}
    assert code == 0 and messages == [original[i] for i in KEPT_60]
    # byte for byte: the same keys in the same order as the input lines, minus the annotation
    assert target.read_text().splitlines() == [json.dumps(original[i], ensure_ascii=False) for i in KEPT_60]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"role": "system", "content": "s"}', '{"role": "user", "content": "a"}', '{"role": "user", "content": '],
         "line 3: invalid JSON"),
        (['{"role": "user", "content": "a", "dsgc": {"id": "u1"}}', '{"text": "note", "depends_on": ["u9"]}'],
         "line 2: unknown dependency id 'u9'"),
        (['{"role": "user", "content": "a", "dsgc": {"id": "u1"}}', '{"role": "user", "content": "b", "dsgc": {"id": "u1"}}'],
         "line 2: duplicate block id 'u1'"),
        (['{"role": "user", "content": "a"}', '{"role": "tool", "tool_call_id": "c7", "content": "r"}'],
         "line 2: tool result for call 'c7' has no matching assistant tool call"),
    ],
)
def test_input_errors_name_the_line_without_a_traceback(capsys, tmp_path, lines, message):
    session = tmp_path / "bad.jsonl"
    session.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "retain", "--input", str(session), "--budget", "50")
    assert code == 2 and out == ""
    assert err.startswith(f"dsgc: {session}: {message}") and "Traceback" not in err


def test_budget_too_small_and_missing_files_exit_cleanly(capsys, tmp_path):
    code, out, err = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "10")
    assert code == 1 and out == "" and err.startswith("dsgc: budget too small: pinned blocks")
    assert "'t01', 't12', 't19'" in err
    code, _, err = run(capsys, "retain", "--input", str(tmp_path / "none.jsonl"), "--budget", "10")
    assert code == 2 and "No such file" in err
    code, _, err = run(capsys, "explain", "--input", str(SAMPLE), "--budget", "60", "--id", "t99")
    assert code == 2 and "'t99' is not a block" in err


def test_the_command_runs_as_a_process_and_is_the_declared_console_script():
    scripts = {e.name: e.value for e in importlib.metadata.entry_points(group="console_scripts")}
    assert scripts["dsgc"] == "dsgc_fast.cli:main"
    done = subprocess.run(
        [sys.executable, "-m", "dsgc_fast.cli", "retain", "--input", str(SAMPLE), "--budget", "60"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["kept"] == KEPT_60
    bad = subprocess.run(
        [sys.executable, "-m", "dsgc_fast.cli", "retain", "--input", str(SAMPLE), "--budget", "-3"],
        capture_output=True, text=True, check=False,
    )
    assert bad.returncode == 2 and "budget must be >= 0" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.sentence
def test_sentence_encoder_keeps_the_account_block(capsys):
    pytest.importorskip("sentence_transformers")
    code, out, _ = run(capsys, "retain", "--input", str(SAMPLE), "--budget", "60", "--encoder", "sentence")
    data = json.loads(out)
    assert code == 0 and "t12" in data["kept"] and data["used"] <= 60
