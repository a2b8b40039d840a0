"""BFCL replay suite: retention on recorded multi-turn tool-use sessions.

Data: the Berkeley Function Calling Leaderboard (BFCL) v4 multi-turn data and simulated
APIs, read at run time from the installed ``bfcl-eval`` wheel (Apache-2.0, Berkeley Sky
Computing Lab; install with ``pip install --no-deps bfcl-eval``: the APIs need only the
standard library and mpmath).  Nothing of BFCL is copied here.  Only the development
splits ``base`` and ``long_context`` are read (``data.SPLITS`` is a whitelist); the other
multi-turn splits (``data.HELD_OUT``) are the held-out evaluation, refused unless asked for
by name with ``held_out=True`` (``--held-out``).

Data flow (one module per step):

1. ``data.load_sessions(split)``: test entries joined with their ground truth; the tool
   schema of a session is the function docs of its involved classes.
2. ``replay.replay(session)``: the API classes loaded with ``initial_config`` (the
   long-context state for ``long_context``), the ground-truth calls executed turn by turn
   into an OpenAI-style transcript: the user message; per call an assistant message with
   one tool call (``call_<turn>_<step>``, JSON arguments) and its tool message (the return
   value as JSON); a closing assistant message (``"Done."``, or ``"None of the available
   tools can do that."`` for a turn without calls).  ``check.check_all`` runs the same
   calls through BFCL's own executor and compares every result (the suite reports the
   count; 2,345 calls, 0 mismatches with bfcl-eval 2026.3.23).
3. ``points.transcript_points``: one scoring point before every turn k >= 2 (0-based
   t >= 1): blocks = the messages of the earlier turns plus the turn's user message (the
   query, always kept).  Block text = ``dsgc_fast.memory.messages.message_text``; cost =
   ``dsgc_fast.whitespace_cost``.  Budget at fraction f (0.25, 0.5) =
   ``cost(query) + ceil(f * cost(history))``.
4. Needed values (``points``, matching rules in ``values``): the leaf argument values
   (strings and numbers; not booleans, None, or strings without a letter or digit) of
   turn t's ground-truth calls that occur neither in the query nor in the tool schema, but
   in at least one history block.  A value occurs in a block when its normal form (numbers:
   shortest exact decimal; strings: case-folded, whitespace collapsed) occurs in the
   block's view (content; call name plus decoded JSON keys and leaves; decoded tool-result
   JSON), strings as substrings not extended by a letter or digit, numbers as one of the
   view's numbers.
5. Policies (``policies``, ``oracle``, ``agent``), each given the point, the encoder
   (the run's memoizing ``CachedEncoder``) and the budget: message-level
   ``dsgc_fast.retain`` (``recency-prefix``, ``recency-first-fit``, ``similarity``,
   ``dsgc`` with ``trace_edges``), the store (``store-recency``, ``store-dsgc``: the
   paper's rule, the old default; ``store-default``: the agent policy;
   ``store-annotated`` with ``trace_edges`` and ``induce`` annotations),
   ``oracle-units`` (exact budgeted maximum coverage over whole tool units), and the
   NumPy prototypes of agent policies (``agent.CANDIDATES``).
6. Metrics (``metrics``): needed-value recall pooled over values (``sum kept / sum
   needed``), the share of points (with needed values) keeping all, broken tool pairs
   (a call and its result split), tokens used against the budget, per split and pooled;
   ``gap_closed`` = (policy - store-recency) / (oracle - store-recency).
7. Trace facts (``facts``): the share of needed values held by the previous turn; lost
   result-held values whose call the message-level ``dsgc`` kept; the share of needed
   values that are identifiers; the induction audit (induced edges and bindings resting
   only on schema vocabulary).
8. The product-unit tables (``units``, ``anchors``, ``compare``): every policy, anchor and
   oracle charged the store's own per-message cost (``token_counts.block_tokens``: model
   tokens with chat framing by default, or whitespace as before), budgets = the live roots
   plus 10%, 25% or 50% of the rest, each policy scored on the messages it sends (a cleared
   or digested result keeps only the values its text holds): ``select`` with its default and
   with ``policy="recency"``, LangChain's ``ClearToolUsesEdit``, observation masking, the unit
   oracle and a value-level oracle that may keep a result as ``key: value`` lines.
9. ``suite.BfclSuite`` (``dsgc-bench bfcl``): all of the above as a suite of the
   benchmark protocol, with the prototypes also run on the plain and tool-heavy long-range
   conversations of ``dsgc_bench.longrange``, and some of them on the padded points
   (``padded``: every point behind the histories of earlier sessions); files
   ``raw-bfcl.json`` and ``summary-bfcl.json`` (whitespace, as before), ``raw-bfcl-units.json``
   and ``summary-bfcl-units.json`` (the product-unit tables), three sections of REPORT.md.
"""

from .data import SPLITS, Session, load_sessions
from .points import Point, transcript_points
from .replay import Transcript, replay

__all__ = ["SPLITS", "Point", "Session", "Transcript", "load_sessions", "replay", "transcript_points"]
