"""OpenAI Agents SDK adapter (extra ``openai-agents``): Responses items in and out of dsgc.

The Agents SDK sends the model a list of Responses-API input items.  One chat message may
span several items (an assistant turn's reasoning, text and function calls), so items are
grouped first, by the rules the SDK's own ``Converter.items_to_messages`` follows:

* a ``function_call`` (or ``file_search_call``) joins the open assistant group (one started by
  an assistant output message or an earlier call, with no other item since), else opens one;
* an assistant output message joins an open group that already has calls (a streamed turn
  orders its calls first), else opens one;
* a ``reasoning`` item belongs to the next item's group (it must precede what it explains);
* every other item (user, system, developer or plain assistant messages, a
  ``function_call_output``) is a group of its own.

Each group is converted with ``Converter.items_to_messages`` and must give exactly one chat
message (``ValueError`` otherwise).  Then:

* ``InputFilter(budget, ...)`` is a ``RunConfig(call_model_input_filter=...)``: it selects the
  groups to send with ``dsgc_fast.select`` (stateless: nothing is kept between calls but
  ``select``'s encoding cache) and returns the kept items, the input's own objects in their
  order (the SDK tracks items by identity), with a binding table as a system item after the
  leading system/developer items when escalation produces one.  Trailing reasoning items are
  always kept.
* ``add_items(store, items)`` adds items to a ``MemoryStore`` (each group one block, its items
  kept in the block's meta) and ``to_items(store)`` gives the active blocks back as items.

Responses items carry no dsgc annotations; ``annotate(item) -> {"binds": ..., "uses": ...,
"pinned": ...} | None`` supplies them (a group merges its items' annotations).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.models.chatcmpl_converter import Converter
from agents.run_config import CallModelData, ModelInputData

from dsgc_ref.contract import check_budget

from ..compaction import BINDING_TABLE_KIND, check_over_budget
from ..messages import ANNOTATION_KEY, add_messages
from ..store import MemoryStore
from ..token_counts import token_counter
from ._annotations import checked_annotation
from ._mirror import DEFAULT_OVER_BUDGET
from ._select import select_history

Annotate = Callable[[Any], Mapping[str, Any] | None]
#: annotation fields ``annotate`` may return
ANNOTATION_FIELDS = ("binds", "uses", "pinned")
ITEMS_META = "items"


@dataclass(frozen=True)
class ItemGroup:
    """Items that form one chat message (``message`` None for trailing reasoning items)."""

    indices: tuple[int, ...]
    message: dict[str, Any] | None

    def __post_init__(self) -> None:
        if not isinstance(self.indices, tuple) or not all(isinstance(i, int) and i >= 0 for i in self.indices):
            raise TypeError(f"ItemGroup.indices must be a tuple of item positions, got {self.indices!r}")
        if self.message is not None and not isinstance(self.message, dict):
            raise TypeError(f"ItemGroup.message must be a message dict or None, got {type(self.message).__name__}")


def item_groups(items: Sequence[Any]) -> list[ItemGroup]:
    """Group Responses items into chat messages (see the module docstring)."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise TypeError(f"items must be a list of Responses input items, got {type(items).__name__}")
    groups: list[list[int]] = []
    pending: list[int] = []
    open_assistant = has_calls = False
    for k, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(f"items[{k}] must be a dict (a Responses input item), got {type(item).__name__}")
        if Converter.maybe_reasoning_message(item):
            pending.append(k)
            continue
        is_call = bool(Converter.maybe_function_tool_call(item) or Converter.maybe_file_search_call(item))
        is_output = not Converter.maybe_easy_input_message(item) and bool(Converter.maybe_response_output_message(item))
        if (is_call and open_assistant) or (is_output and open_assistant and has_calls):
            groups[-1] += [*pending, k]
        else:
            groups.append([*pending, k])
            open_assistant, has_calls = is_call or is_output, False
        has_calls = has_calls or is_call
        pending = []
    out = []
    for group in groups:
        messages = Converter.items_to_messages([items[k] for k in group])
        if len(messages) != 1:
            raise ValueError(f"items {group} convert to {len(messages)} chat messages, expected one")
        out.append(ItemGroup(tuple(group), dict(messages[0])))
    if pending:
        out.append(ItemGroup(tuple(pending), None))
    return out


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
    encodes only messages it has not seen).

    Parameters
    ----------
    budget : int
        Tokens the items sent may cost (each chat message with its framing; the agent's
        instructions are not counted).
    tokenizer : optional
        As ``dsgc_fast.token_counts.token_counter`` takes it.
    annotate : callable, optional
        ``item -> {"binds": ..., "uses": ..., "pinned": ...} | None``.
    on_over_budget : {"truncate", "roots_only", "raise"}
        When the newest user turn alone exceeds the budget: cut its largest tool results
        (default; a cut ``function_call_output`` is sent as a copy with the cut output), send
        the turn as it is, or raise ``ReferentEvictionError``.
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
            raise TypeError("annotate must be a callable item -> annotation mapping (or None)")
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
        kept = {spoken[k] for k in chosen.indices} | {g for g, group in enumerate(groups) if group.message is None}
        out = [_cut_item(items[k], cut[g]) if g in cut else items[k] for g in sorted(kept) for k in groups[g].indices]
        tables = [] if chosen.binding_table is None else [{"role": "system", "content": chosen.binding_table}]
        _insert_after_lead(out, tables)
        return out

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        return ModelInputData(input=self.select(model_data.input), instructions=model_data.instructions)

    async def filter_async(self, data: CallModelData[Any]) -> ModelInputData:
        """The same filter, run in a worker thread (pass ``filter.filter_async`` for a busy event loop)."""
        return await asyncio.to_thread(self, data)


def _cut_item(item: Mapping[str, Any], content: Any) -> dict[str, Any]:
    """A copy of a ``function_call_output`` item with the output ``select`` cut."""
    if item.get("type") != "function_call_output":
        raise ValueError(f"select cut a message that is not a tool result: {item.get('type')!r}")
    return {**item, "output": content}


# -- a MemoryStore in Responses items -----------------------------------------------------
def add_items(store: MemoryStore, items: Sequence[Any], *, annotate: Annotate | None = None) -> list[str]:
    """Add Responses items to ``store``, one block per chat message; returns the block ids.

    Each block keeps its items (JSON copies) in ``meta["items"]``, so ``to_items`` gives them
    back as they came.  Trailing reasoning items without the item they precede are refused.
    """
    groups = item_groups(items)
    if groups and groups[-1].message is None:
        raise ValueError("the items end with reasoning items: add them with the item they belong to")
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
    ``to_messages`` places it); a plain block as a system item at its position.  Raises
    ``ValueError`` for a chat-message block that was not added by ``add_items``.
    """
    out: list[Any] = []
    tables = []
    for block in store.blocks(embeddings=False):
        if ITEMS_META in block.meta:
            out.extend(block.meta[ITEMS_META])
        elif "message" in block.meta:
            raise ValueError(
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
