"""``warmup()``: the agent path's kernels compiled into (or loaded from) Numba's on-disk cache."""

from __future__ import annotations

from . import _config
from .memory.history import SelectCache, select

#: a short agent exchange: system prompt, a question, a tool call and its JSON result, an answer, a follow-up
_CHAT = (
    {"role": "system", "content": "You are a support assistant. Use the tools."},
    {"role": "user", "content": "Is the payout of merchant M-1001 late?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "check_payout", "arguments": '{"merchant": "M-1001"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": '{"merchant": "M-1001", "status": "under review"}'},
    {"role": "assistant", "content": "The payout of M-1001 is under review."},
    {"role": "user", "content": "When was that merchant's payout last updated?"},
)


def warmup() -> str | None:
    """Run ``select`` once on a short agent exchange, so that a later first call finds its kernels cached.

    The first call of a process loads each kernel it runs from Numba's on-disk cache, or
    compiles it (seconds) when the cache lacks it: after an install, an upgrade, or a change
    of CPU.  Run this once after installing (``dsgc warmup``), e.g. in a container image's
    build, so that no agent's first model call pays for compilation.  It also loads the
    default tokenizer.  The result of the call is discarded.

    Returns
    -------
    str or None
        The directory the kernels are cached in (``dsgc_fast._config.cache_dir``), None when
        the on-disk cache is off (``DSGC_NUMBA_CACHE=0``, or no writable location).
    """
    chat = [dict(m) for m in _CHAT]
    select(chat, 60, cache=SelectCache(), on_over_budget="truncate")
    return _config.cache_dir() if _config.CACHE else None
