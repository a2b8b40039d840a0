"""``select`` over an agent's chat history beside LangChain's ``trim_messages`` (tools/select_speed.py).

``time_trim_messages`` needs ``langchain-core`` and the ``tokens`` extra (skipped without them).
"""

from __future__ import annotations

from dsgc_bench.chat_history import chat_history, complete_prefixes, trim_call
from dsgc_fast import SelectCache, select
from dsgc_fast.memory.token_counts import conversation_tokens

from .common import skip_above


class Select:
    params = [[100, 1_000]]
    param_names = ["n"]

    def setup(self, n):
        skip_above(n)
        self.messages = chat_history(n)
        self.budget = conversation_tokens(self.messages) // 4
        self.previous = self.messages[: max(k for k in complete_prefixes(self.messages) if k < n)]
        self.same = SelectCache()
        select(self.messages, self.budget, cache=self.same)

    def time_select_same_history(self, n):
        select(self.messages, self.budget, cache=self.same)

    def time_select_cold(self, n):
        select(self.messages, self.budget, cache=SelectCache())


class SelectGrown:
    """One call after the history grew by its last exchange (the agent loop); a fresh cache per sample."""

    params = [[100, 1_000]]
    param_names = ["n"]
    number = 1
    repeat = 10

    def setup(self, n):
        skip_above(n)
        self.messages = chat_history(n)
        self.budget = conversation_tokens(self.messages) // 4
        self.cache = SelectCache()
        select(
            self.messages[: max(k for k in complete_prefixes(self.messages) if k < n)], self.budget, cache=self.cache
        )

    def time_select_grown(self, n):
        select(self.messages, self.budget, cache=self.cache)


class TrimMessages:
    params = [[100, 1_000]]
    param_names = ["n"]

    def setup(self, n):
        skip_above(n)
        messages = chat_history(n)
        try:
            self.trim = trim_call(messages, conversation_tokens(messages) // 4)
        except ImportError as exc:
            raise NotImplementedError(str(exc)) from None
        self.trim()

    def time_trim_messages(self, n):
        self.trim()
