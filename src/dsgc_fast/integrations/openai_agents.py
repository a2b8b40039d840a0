"""OpenAI Agents SDK adapter (extra ``openai-agents``): Responses items in and out of dsgc.

The Agents SDK sends the model a list of Responses-API input items.  One chat message may
span several items (an assistant turn's reasoning, text, tool calls and hosted-tool items),
so items are grouped first.  Every item type has a unit (``ITEM_KINDS``, the table of
``docs/content-types.md``):

* a *call* (``function_call``, ``custom_tool_call``, ``computer_call``, ``local_shell_call``,
  ``shell_call``, ``apply_patch_call``, ``tool_search_call``, ``program``,
  ``mcp_approval_request``) is paired with the later *output* that names it (the same
  ``call_id``; an approval response's ``approval_request_id``);
* a call, a *hosted* item (``web_search_call``, ``file_search_call``, ``mcp_call``,
  ``code_interpreter_call``, ``image_generation_call``, ``item_reference``, ..., and any type
  not in the table) or an assistant output message joins the open assistant group (one
  started by an assistant output message, a call or a hosted item, with no other item since;
  an output message joins only one that has calls: a streamed turn orders its calls first),
  else opens one, as the SDK's ``Converter.items_to_messages`` groups function calls;
* while calls of a group wait for their outputs, every item but an output joins that group;
* a ``reasoning`` item belongs to the next item's group (it must precede what it explains);
* every other item (user, system, developer or plain assistant messages, an output) is a
  group of its own.  A call whose output is not in the list, or an output whose call is not,
  is a hosted item.

Each group stands for one chat message: messages, function calls and outputs as the SDK's
``Converter.items_to_messages`` converts them (``preserve_tool_output_all_content``: images
in outputs are costed), other calls as tool calls (name, and the item's other fields as JSON
arguments), other outputs as tool results (their output), reasoning and hosted items as
content parts of their own kind; the message costs what ``token_counts.message_tokens``
charges it (each content part by the rule of its kind, ``CONTENT_KINDS``).  Then:

* ``InputFilter(budget, ...)`` is a ``RunConfig(call_model_input_filter=...)``: it selects the
  groups to send with ``dsgc_fast.select`` (stateless: nothing is kept between calls but
  ``select``'s encoding cache) and returns the kept items, the input's own objects in their
  input order (the SDK tracks items by identity), with a binding table as a system item after
  the leading system/developer items when escalation produces one.  Trailing reasoning items
  are always kept.  An output ``select`` cut to fit (``on_over_budget="truncate"``) is sent
  as a copy with the cut text when its output may be a string, else whole.
* ``RetainedSession(session, budget, ...)`` is an Agents SDK ``Session`` over any other
  (``SQLiteSession``, ...): it stores every item there and ``get_items`` returns what
  ``InputFilter`` keeps of them.
* ``add_items(store, items)`` adds items to a ``MemoryStore`` (each group one block, its items
  kept in the block's meta) and ``to_items(store)`` gives the active blocks back as items,
  a cut output as cut.

Responses items carry no dsgc annotations; ``annotate(item) -> {"binds": ..., "uses": ...,
"pinned": ...} | None`` supplies them (a group merges its items' annotations).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.exceptions import UserError
from agents.memory import Session
from agents.memory.session_settings import SessionSettings
from agents.models.chatcmpl_converter import Converter
from agents.run_config import CallModelData, ModelInputData

from dsgc_ref.contract import DsgcTypeError, DsgcValueError, check_budget

from ..memory.compaction import BINDING_TABLE_KIND, check_over_budget
from ..memory.messages import ANNOTATION_KEY, add_messages
from ..memory.store import MemoryStore
from ..memory.token_counts import token_counter
from ._annotations import checked_annotation
from ._select import DEFAULT_OVER_BUDGET, select_history

Annotate = Callable[[Any], Mapping[str, Any] | None]
#: annotation fields ``annotate`` may return
ANNOTATION_FIELDS = ("binds", "uses", "pinned")
ITEMS_META = "items"
#: the units an item type can have (module docstring)
UNITS = ("message", "reasoning", "call", "output", "hosted")

logger = logging.getLogger("dsgc.openai_agents")


@dataclass(frozen=True)
class ItemKind:
    """A Responses item type and its unit.

    ``keys`` are the fields naming the call (a call's id, or the call an output answers),
    ``answer`` the output type that answers a call, ``output`` the field of an output that
    holds what it returns, and ``cut`` whether that field may be a string (so a cut output
    can be sent in it).
    """

    kind: str
    unit: str
    keys: tuple[str, ...] = ()
    answer: str = ""
    output: str = ""
    cut: bool = False

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise DsgcValueError(f"unknown unit {self.unit!r}; expected one of {list(UNITS)}")


def _pair(
    call: str,
    output: str,
    field: str,
    cut: bool,
    *,
    call_key: str = "call_id",
    output_keys: tuple[str, ...] = ("call_id",),
) -> tuple[ItemKind, ItemKind]:
    """A call type and the output type that answers it."""
    answered = ItemKind(output, "output", output_keys, output=field, cut=cut)
    return ItemKind(call, "call", (call_key,), answer=output), answered


#: items a hosted tool produced in the model's turn (a call and its result in one), and other items of a turn
_HOSTED_ITEMS = (
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
    "mcp_list_tools",
    "additional_tools",
    "configuration_update",
    "compaction",
    "compaction_trigger",
    "item_reference",
)
#: every Responses item type the filter knows; any other type is a hosted item
ITEM_KINDS: tuple[ItemKind, ...] = (
    ItemKind("message", "message"),
    ItemKind("reasoning", "reasoning"),
    *_pair("function_call", "function_call_output", "output", True),
    *_pair("custom_tool_call", "custom_tool_call_output", "output", True),
    *_pair("computer_call", "computer_call_output", "output", False),
    *_pair("local_shell_call", "local_shell_call_output", "output", True, output_keys=("call_id", "id")),
    *_pair("shell_call", "shell_call_output", "output", False),
    *_pair("apply_patch_call", "apply_patch_call_output", "output", True),
    *_pair("tool_search_call", "tool_search_output", "tools", False),
    *_pair("program", "program_output", "result", True),
    *_pair(
        "mcp_approval_request", "mcp_approval_response", "", False, call_key="id", output_keys=("approval_request_id",)
    ),
    *(ItemKind(kind, "hosted") for kind in _HOSTED_ITEMS),
)
_KIND_OF = {k.kind: k for k in ITEM_KINDS}
_HOSTED = ItemKind("", "hosted")
#: fields of a call item that are not its arguments
_CALL_IDS = ("type", "id", "call_id", "status", "name")


def item_kind(item: Mapping[str, Any]) -> ItemKind:
    """The ``ItemKind`` of a Responses item: a message (with or without ``type``), a kind of ``ITEM_KINDS``, else hosted."""
    kind = item.get("type", "message")
    return _KIND_OF.get(kind, _HOSTED) if isinstance(kind, str) else _HOSTED


def _key(item: Mapping[str, Any], kind: ItemKind) -> str | None:
    """The id that ties a call and its output (None if the item has none)."""
    return next((item[f] for f in kind.keys if isinstance(item.get(f), str) and item[f]), None)


@dataclass(frozen=True)
class ItemGroup:
    """Items that form one chat message (``message`` None for trailing reasoning items)."""

    indices: tuple[int, ...]
    message: dict[str, Any] | None

    def __post_init__(self) -> None:
        if not isinstance(self.indices, tuple) or not all(isinstance(i, int) and i >= 0 for i in self.indices):
            raise DsgcTypeError(f"ItemGroup.indices must be a tuple of item positions, got {self.indices!r}")
        if self.message is not None and not isinstance(self.message, dict):
            raise DsgcTypeError(f"ItemGroup.message must be a message dict or None, got {type(self.message).__name__}")


def _units(items: Sequence[Any]) -> tuple[list[str], dict[int, int]]:
    """Each item's unit, and each paired output's call (a call or output without its partner is hosted)."""
    kinds = [item_kind(item) for item in items]
    waiting: dict[tuple[str, str], int] = {}
    call_of: dict[int, int] = {}
    for k, (item, kind) in enumerate(zip(items, kinds)):
        key = _key(item, kind)
        if kind.unit == "call" and key is not None:
            waiting[(kind.answer, key)] = k  # a reused id: the newest call waits
        elif kind.unit == "output" and key is not None and (kind.kind, key) in waiting:
            call_of[k] = waiting.pop((kind.kind, key))
    paired = set(call_of) | set(call_of.values())
    units = [k.unit if k.unit not in ("call", "output") or i in paired else "hosted" for i, k in enumerate(kinds)]
    return units, call_of


def item_groups(items: Sequence[Any]) -> list[ItemGroup]:
    """Group Responses items into chat messages (see the module docstring)."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise DsgcTypeError(f"items must be a list of Responses input items, got {type(items).__name__}")
    for k, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise DsgcTypeError(f"items[{k}] must be a dict (a Responses input item), got {type(item).__name__}")
        if "type" not in item and "role" not in item:
            raise DsgcValueError(f"items[{k}] has neither a 'type' nor a 'role': it is not a Responses input item")
    units, call_of = _units(items)
    groups: list[list[int]] = []
    pending: list[int] = []
    waiting: set[int] = set()  # calls whose outputs have not come yet
    caller = 0  # the group those calls are in
    open_assistant = has_calls = False
    for k, (item, unit) in enumerate(zip(items, units)):
        if unit == "reasoning":
            pending.append(k)
            continue
        is_call = unit in ("call", "hosted")
        is_output = not Converter.maybe_easy_input_message(item) and bool(Converter.maybe_response_output_message(item))
        if unit == "output":
            target = len(groups)
            open_assistant = False
            waiting.discard(call_of[k])
        elif waiting:
            target = caller
        elif (is_call and open_assistant) or (is_output and open_assistant and has_calls):
            target = len(groups) - 1
        else:
            target = len(groups)
            open_assistant, has_calls = is_call or is_output, False
        if target == len(groups):
            groups.append([])
        groups[target] += [*pending, k]
        has_calls = has_calls or is_call
        if unit == "call":
            waiting.add(k)
            caller = target
        pending = []
    out = [ItemGroup(tuple(g), _group_message([items[k] for k in g], [units[k] for k in g])) for g in groups]
    if pending:
        out.append(ItemGroup(tuple(pending), None))
    return out


def _group_message(items: list[Any], units: list[str]) -> dict[str, Any]:
    """The chat message a group of items stands for: its items' messages merged (module docstring)."""
    pieces = [_item_message(item, unit) for item, unit in zip(items, units)]
    spoken = [p for p, unit in zip(pieces, units) if unit not in ("reasoning", "hosted")]
    message: dict[str, Any] = {"role": spoken[0]["role"] if spoken else "assistant"}
    contents = [p["content"] for p in pieces if p.get("content") not in (None, "", [])]
    if len(contents) == 1:
        message["content"] = contents[0]
    else:
        message["content"] = [part for c in contents for part in _parts(c)] or None
    calls = [call for p in pieces for call in p.get("tool_calls") or ()]
    if calls:
        message["tool_calls"] = calls
    for piece in pieces:
        if "tool_call_id" in piece:
            message["tool_call_id"] = piece["tool_call_id"]
    return message


def _parts(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _item_message(item: Any, unit: str) -> dict[str, Any]:
    """The chat message one item stands for (the SDK's converter where it has one)."""
    kind = item_kind(item)
    if unit in ("reasoning", "hosted"):
        return {"role": "assistant", "content": [item]}
    if unit == "message" or kind.kind in ("function_call", "function_call_output"):
        try:
            (message,) = Converter.items_to_messages([item], preserve_tool_output_all_content=True)
            return dict(message)
        except (UserError, KeyError, TypeError, ValueError):  # a shape it cannot express: the parts as they are
            pass
    if unit == "message":
        return {"role": item.get("role", "user"), "content": item.get("content")}
    key = _key(item, kind)
    if unit == "call":
        arguments = {k: v for k, v in item.items() if k not in _CALL_IDS}
        name = item.get("name") if isinstance(item.get("name"), str) else kind.kind
        call = {"id": key, "type": "function", "function": {"name": name, "arguments": _json(arguments)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "tool", "tool_call_id": key, "content": _output_content(item, kind)}


def _output_content(item: Mapping[str, Any], kind: ItemKind) -> Any:
    """An output's content as a tool result: a string as it is, content parts as they are, else JSON."""
    value = item.get(kind.output) if kind.output else {k: v for k, v in item.items() if k not in _CALL_IDS}
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("type"), str):
        return [value]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, Mapping) and isinstance(v.get("type"), str) for v in value)
    ):
        return value
    return _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _annotated(group: ItemGroup, items: Sequence[Any], annotate: Annotate | None) -> dict[str, Any]:
    """The group's chat message with the merged annotations of its items."""
    message = dict(group.message or {})
    if annotate is None:
        return message
    binds: dict[str, str] = {}
    uses: list[str] = []
    pinned = None
    for k in group.indices:
        found = checked_annotation(annotate(items[k]) or {}, ANNOTATION_FIELDS, f"what annotate(items[{k}]) returned")
        binds.update(found.get("binds") or {})
        uses.extend(u for u in found.get("uses") or () if u not in uses)
        pinned = bool(found["pinned"]) if "pinned" in found else pinned
    annotation = {k: v for k, v in (("binds", binds), ("uses", uses), ("pinned", pinned)) if v not in ({}, [], None)}
    if annotation:
        message[ANNOTATION_KEY] = annotation
    return message


class InputFilter:
    """A ``call_model_input_filter`` that sends the items dsgc keeps within ``budget`` tokens.

    Stateless: each call hands the items' chat messages to ``dsgc_fast.select`` (whose cache
    encodes only messages it has not seen).  The filter keeps nothing of the items itself;
    that cache keeps the rows and words of texts it has seen, so after removing or redacting
    an item (a card number, say) call ``dsgc_fast.forget_texts()`` (the process cache and
    every memo keyed by text) or ``clear()`` the ``cache`` passed in: the filter cannot tell
    an edited history from another conversation's.

    Parameters
    ----------
    budget : int
        Tokens the items sent may cost (each chat message with its framing; the agent's
        instructions are not counted).
    tokenizer : optional
        As ``dsgc_fast.memory.token_counts.token_counter`` takes it.
    annotate : callable, optional
        ``item -> {"binds": ..., "uses": ..., "pinned": ...} | None``.
    on_over_budget : {"truncate", "roots_only", "raise"}
        When the newest user turn alone exceeds the budget: cut its largest tool results
        (default; a cut output is sent as a copy with the cut text where its output may be
        a string, else whole: ``ItemKind.cut``), send the turn as it is, or raise
        ``ReferentEvictionError``.
    **options
        Passed to ``select`` (``params``, ``encoder``, ``cache``, ``policy``, ...).
    """

    def __init__(
        self,
        budget: int,
        *,
        tokenizer: Any = None,
        annotate: Annotate | None = None,
        on_over_budget: str = DEFAULT_OVER_BUDGET,
        **options: Any,
    ) -> None:
        if annotate is not None and not callable(annotate):
            raise DsgcTypeError("annotate must be a callable item -> annotation mapping (or None)")
        self.budget = check_budget(budget)
        self.tokenizer = tokenizer
        token_counter(tokenizer)  # a bad tokenizer fails here, not at the first model call
        self.annotate = annotate
        self.on_over_budget = check_over_budget(on_over_budget)
        self.options = options

    def select(self, items: Sequence[Any]) -> list[Any]:
        """The items to send: kept groups' items in input order, a binding table first."""
        groups = item_groups(items)
        spoken = [g for g, group in enumerate(groups) if group.message is not None]
        if not spoken:
            return list(items)
        chat = [_annotated(groups[g], items, self.annotate) for g in spoken]
        chosen = select_history(
            chat, self.budget, tokenizer=self.tokenizer, on_over_budget=self.on_over_budget, **self.options
        )
        cut = {spoken[k]: t.message["content"] for k, t in chosen.truncated.items()}
        cut.update((spoken[k], d.text) for k, d in chosen.digested.items())  # sent as its digest, in place
        kept = [spoken[k] for k in chosen.indices] + [g for g, group in enumerate(groups) if group.message is None]
        sent = {k: _with_cut(items[k], cut[g]) if g in cut else items[k] for g in kept for k in groups[g].indices}
        out = [sent[k] for k in sorted(sent)]
        tables = [{"role": "system", "content": table} for table in chosen.tables]
        _insert_after_lead(out, tables)
        return out

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        return ModelInputData(input=self.select(model_data.input), instructions=model_data.instructions)

    async def filter_async(self, data: CallModelData[Any]) -> ModelInputData:
        """The same filter, run in a worker thread (pass ``filter.filter_async`` for a busy event loop)."""
        return await asyncio.to_thread(self, data)


def _with_cut(item: Any, content: Any) -> Any:
    """``item`` with the text ``select`` cut from it: a copy when it is an output that may hold it.

    Other items of a cut group (a reasoning item before the output), and an output whose
    output cannot be a string (a screenshot, shell output objects), are returned as they are.
    """
    kind = item_kind(item)
    if kind.unit != "output":
        return item
    if not kind.cut:
        logger.warning("a %s cannot be cut to text: it is sent whole, over the budget", kind.kind)
        return item
    return {**item, kind.output: content}


# -- a MemoryStore in Responses items -----------------------------------------------------
def add_items(store: MemoryStore, items: Sequence[Any], *, annotate: Annotate | None = None) -> list[str]:
    """Add Responses items to ``store``, one block per chat message; returns the block ids.

    Each block keeps its items (JSON copies) in ``meta["items"]``, so ``to_items`` gives them
    back as they came.  Trailing reasoning items without the item they precede are refused.
    """
    groups = item_groups(items)
    if groups and groups[-1].message is None:
        raise DsgcValueError("the items end with reasoning items: add them with the item they belong to")
    records = []
    for group in groups:
        message = _annotated(group, items, annotate)
        annotation = dict(message.get(ANNOTATION_KEY) or {})
        annotation["meta"] = {ITEMS_META: [items[k] for k in group.indices]}
        records.append({**message, ANNOTATION_KEY: annotation})
    return add_messages(store, records)


def to_items(store: MemoryStore) -> list[Any]:
    """The active blocks as Responses items, oldest first.

    A binding table comes as a system item after the leading system/developer items (as
    ``to_messages`` places it); a plain block as a system item at its position; an output
    that compaction cut (``on_over_budget="truncate"``) as sent, cut.  Raises
    ``ValueError`` for a chat-message block that was not added by ``add_items``.
    """
    out: list[Any] = []
    tables = []
    for block in store.blocks(embeddings=False):
        if ITEMS_META in block.meta:
            cut = block.meta["message"]["content"] if "truncated" in block.meta or "digested" in block.meta else None
            out.extend(block.meta[ITEMS_META] if cut is None else [_with_cut(i, cut) for i in block.meta[ITEMS_META]])
        elif "message" in block.meta:
            raise DsgcValueError(
                f"block {block.id!r} holds a chat message, not Responses items: add sessions with add_items"
            )
        elif block.meta.get("kind") == BINDING_TABLE_KIND:
            tables.append({"role": "system", "content": block.text})
        else:
            out.append({"role": "system", "content": block.text})
    _insert_after_lead(out, tables)
    return out


def _insert_after_lead(items: list[Any], system_items: list[dict[str, str]]) -> None:
    """Insert ``system_items`` after the leading system/developer items of ``items`` (in place)."""
    lead = 0
    while lead < len(items) and isinstance(items[lead], Mapping) and items[lead].get("role") in ("system", "developer"):
        lead += 1
    items[lead:lead] = system_items


# -- an Agents SDK Session ------------------------------------------------------------------
class RetainedSession:
    """An Agents SDK ``Session`` that stores every item in another and returns the retained history.

    ``Runner.run(agent, input, session=RetainedSession(SQLiteSession("user-1"), 4_000))``:
    ``add_items``, ``pop_item`` and ``clear_session`` act on ``session`` unchanged (it keeps
    the whole history); ``get_items`` reads all of it and returns what ``InputFilter`` with
    the same arguments keeps (the same stateless rule, so every worker over one stored
    session returns the same items).

    Parameters
    ----------
    session : agents.memory.Session
        The session that stores the items (any implementation of the SDK's protocol).
    budget : int
        Tokens the returned history may cost (``InputFilter``'s rule; the new input of a run
        and the instructions are not counted).
    tokenizer, annotate, on_over_budget, **options
        As ``InputFilter`` takes them.
    """

    def __init__(
        self,
        session: Session,
        budget: int,
        *,
        tokenizer: Any = None,
        annotate: Annotate | None = None,
        on_over_budget: str = DEFAULT_OVER_BUDGET,
        **options: Any,
    ) -> None:
        if not isinstance(session, Session):
            raise DsgcTypeError(f"session must be an Agents SDK Session, got {type(session).__name__}")
        self.session = session
        self.filter = InputFilter(
            budget, tokenizer=tokenizer, annotate=annotate, on_over_budget=on_over_budget, **options
        )

    @property
    def session_id(self) -> str:
        """The stored session's id."""
        return self.session.session_id

    @property
    def session_settings(self) -> SessionSettings | None:
        """The stored session's settings."""
        return self.session.session_settings

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The retained history, oldest first; with ``limit``, its newest ``limit`` items.

        The selection runs in a worker thread, so the event loop is never blocked by it.
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise DsgcValueError(f"limit must be a non-negative integer or None, got {limit!r}")
        kept = await asyncio.to_thread(self.filter.select, await self.session.get_items())
        return kept if limit is None else kept[len(kept) - limit :]

    async def add_items(self, items: list[Any]) -> None:
        """Store ``items`` in the underlying session."""
        await self.session.add_items(items)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest stored item (None when the session is empty)."""
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        """Remove every stored item."""
        await self.session.clear_session()
