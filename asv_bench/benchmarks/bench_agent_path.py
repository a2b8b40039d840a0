"""The agent path beside ``trim_messages`` with a tiktoken counter (``tools/agent_path.py``'s table).

``timeraw_`` benchmarks run in a new interpreter and time their statement only (their setup
code untimed): the adapter's import beside ``langchain_core.messages``', and the first
``select_messages`` beside the first ``trim_messages`` on the recorded support session, with
the Numba cache asv's setup run made warm.  In one process: a history it has not seen (a new
``dsgc_bench.agent_path.variant`` of the session per sample) and the same history again.
Needs the ``langchain`` and ``tokens`` extras.
"""

from __future__ import annotations

import itertools

from dsgc_bench.agent_path import FRESH, load_session, variant
from dsgc_bench.chat_history import trim_call
from dsgc_fast.memory.token_counts import conversation_tokens


def timeraw_import_adapter():
    return FRESH["import adapter"][1]


def timeraw_import_langchain_core_messages():
    return FRESH["import langchain_core.messages"][1]


def timeraw_first_select_messages():
    return FRESH["first select_messages"][::-1]  # asv's (statement, setup): the setup untimed


def timeraw_first_trim_messages():
    return FRESH["first trim_messages"][::-1]


class NewHistory:
    """One call on a history this process has not seen (a fresh variant per sample)."""

    number = 1
    repeat = 10
    warmup_time = 0
    marks = itertools.count()

    def setup(self):
        from langchain_core.messages import convert_to_messages

        from dsgc_fast.integrations.langchain import select_messages

        chat = load_session()
        self.budget = conversation_tokens(chat) // 4
        select_messages(convert_to_messages(chat), max_tokens=self.budget)  # kernels, encoders, encoding
        fresh = variant(chat, next(self.marks))
        self.held = convert_to_messages(fresh)
        self.trim = trim_call(fresh, self.budget)
        self.select_messages = select_messages

    def time_select_messages_new_history(self):
        self.select_messages(self.held, max_tokens=self.budget)

    def time_trim_messages_new_history(self):
        self.trim()


class SameHistory:
    """The same history again: ``select_messages``' process cache beside ``trim_messages``."""

    def setup(self):
        from langchain_core.messages import convert_to_messages

        from dsgc_fast.integrations.langchain import select_messages

        chat = load_session()
        self.budget = conversation_tokens(chat) // 4
        self.held = convert_to_messages(chat)
        self.trim = trim_call(chat, self.budget)
        self.select_messages = select_messages
        select_messages(self.held, max_tokens=self.budget)

    def time_select_messages_same_history(self):
        self.select_messages(self.held, max_tokens=self.budget)

    def time_trim_messages_same_history(self):
        self.trim()
