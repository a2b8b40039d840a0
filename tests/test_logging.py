"""The ``dsgc`` logger: one DEBUG record per compaction or selection, a WARNING when the budget
cannot hold the live roots, and nothing printed unless the application configures logging."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

import pytest

import dsgc_fast
from dsgc_fast import MemoryStore, ReferentEvictionError, SelectCache, min_budget, select
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.messages import add_messages, compact_messages

from .test_messages import call

LOGGER = "dsgc.compaction"
LEDGERS = [
    {"role": "system", "content": "rules"},
    {"role": "user", "content": "which region hosts the ledgers?"},
    {"role": "assistant", "content": "They live in the eu-west archive, behind the reporting proxy."},
    {"role": "user", "content": "dump the three ledgers"},
    {"role": "assistant", "content": None, "tool_calls": [call("a1", "dump"), call("a2", "dump"), call("a3", "dump")]},
    {"role": "tool", "tool_call_id": "a1", "content": "alpha row; " * 900},
    {"role": "tool", "tool_call_id": "a2", "content": "beta row; " * 600},
    {"role": "tool", "tool_call_id": "a3", "content": "gamma"},
]


def records(caplog, level=logging.DEBUG):
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == level]


def test_the_package_logs_under_dsgc_and_prints_nothing_by_default():
    handlers = logging.getLogger("dsgc").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
    assert logging.getLogger(LOGGER).parent is logging.getLogger("dsgc")
    assert dsgc_fast.memory.compaction.log.name == LOGGER


def test_a_selection_writes_one_debug_record_with_its_figures(caplog):
    caplog.set_level(logging.DEBUG, logger="dsgc")
    budget = min_budget(LEDGERS)
    got = select(LEDGERS, budget, cache=SelectCache())
    (record,) = records(caplog)
    figures = record.dsgc
    assert figures["path"] == "fits" and figures["budget"] == budget and figures["blocks"] == len(LEDGERS)
    assert figures["kept"] == len(got.indices) and figures["evicted"] == len(LEDGERS) - len(got.indices)
    assert figures["used"] == got.report.used and figures["truncated"] == 0 and figures["evicted"] == 2
    assert f"used {got.report.used} of budget {budget}" in record.getMessage()
    assert records(caplog, logging.WARNING) == []


def test_a_store_compaction_writes_the_same_record_as_the_selection(caplog):
    caplog.set_level(logging.DEBUG, logger="dsgc")
    budget = min_budget(LEDGERS) + 5
    select(LEDGERS, budget, cache=SelectCache())
    store = MemoryStore(encoder=LexicalEncoder())
    add_messages(store, [dict(m) for m in LEDGERS])
    report = compact_messages(store, budget)
    selected, compacted = records(caplog)
    assert compacted.dsgc == selected.dsgc and compacted.dsgc["kept"] == len(report.kept)


@pytest.mark.parametrize(
    ("mode", "budget", "path"),
    [("truncate", 900, "truncate"), ("truncate", 40, "truncate+roots_only"), ("roots_only", 40, "roots_only")],
)
def test_an_over_budget_path_warns_and_says_which(caplog, mode, budget, path):
    caplog.set_level(logging.DEBUG, logger="dsgc")
    got = select(LEDGERS, budget, on_over_budget=mode, cache=SelectCache())
    (debug,) = records(caplog)
    (warning,) = records(caplog, logging.WARNING)
    assert debug.dsgc["path"] == warning.dsgc["path"] == path
    assert debug.dsgc["truncated"] == len(got.truncated) and debug.dsgc["used"] == got.report.used
    assert f"budget {budget} cannot hold the live roots" in warning.getMessage()
    assert ("roots alone" in warning.getMessage()) == got.over_budget


def test_raising_logs_the_path_at_debug_and_leaves_the_warning_to_the_error(caplog):
    caplog.set_level(logging.DEBUG, logger="dsgc")
    with pytest.raises(ReferentEvictionError):
        select(LEDGERS, 40, cache=SelectCache())
    (debug,) = records(caplog)
    assert debug.dsgc["path"] == "raise" and debug.dsgc["budget"] == 40
    assert records(caplog, logging.WARNING) == []


def test_a_warning_path_prints_nothing_without_logging_configured():
    code = textwrap.dedent(
        """
        import json, sys
        from dsgc_fast import SelectCache, select
        messages = json.loads(sys.stdin.read())
        got = select(messages, 40, on_over_budget="roots_only", cache=SelectCache())
        assert got.over_budget
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(LEDGERS), capture_output=True, text=True, check=True
    )
    assert (done.stdout, done.stderr) == ("", "")
