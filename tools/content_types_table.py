"""The page ``docs/content-types.md``: how each content part and Responses item type is counted and kept.

Rendered from the tables the code uses (``dsgc_fast.memory.content_kinds.CONTENT_KINDS`` and
``dsgc_fast.integrations.openai_agents.ITEM_KINDS``), so the page and the code cannot
disagree; ``tests/test_content_types_doc.py`` renders it again and compares.

    python tools/content_types_table.py                             # prints the page
    python tools/content_types_table.py --out docs/content-types.md

Needs the ``openai-agents`` extra.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dsgc_fast.integrations.openai_agents import ITEM_KINDS, ItemKind
from dsgc_fast.memory.content_kinds import (
    AUDIO_BYTES_PER_SECOND_COMPRESSED,
    AUDIO_TOKENS_PER_SECOND,
    CONTENT_KINDS,
    FILE_BYTES_PER_TOKEN,
    IMAGE_TOKENS,
    IMAGE_TOKENS_LOW,
    ContentKind,
)

INTRO = f"""# Content parts and item types

Every content part and every Responses item that LangChain, LangGraph and the OpenAI Agents SDK
produce is counted by a documented rule and sent as it came: dsgc never changes a part, and an
unknown kind never stops the agent. The tables below are rendered from the tables the code
uses (`python tools/content_types_table.py --out docs/content-types.md`); a test renders them
again and compares.

`n(x)` is the tokenizer's count of `x` (`tokenizer=`); `JSON` is the compact JSON of a value
(no spaces). A message costs its chat framing plus its content (`token_counts.message_tokens`).

- **Images** cost {IMAGE_TOKENS:,} tokens, or {IMAGE_TOKENS_LOW} at `detail: "low"` (OpenAI's
  documented low-detail cost). {IMAGE_TOKENS:,} is at or above both providers' documented maxima for
  one image: OpenAI's tile rule (85 + 170 per 512-pixel tile) gives at most 1,445 for GPT-4o-class
  models, Anthropic's width x height / 750 about 1,600 (images are scaled to about 1.15 megapixels).
  It is an estimate, stated as such: give a message an explicit cost (the `dsgc` annotation
  `cost`) when you know better.
- **Audio** with inline data costs `ceil(seconds x {AUDIO_TOKENS_PER_SECOND})`, seconds being the decoded
  bytes over the format's byte rate: 16,000 bytes a second for uncompressed wav/pcm (16-bit mono at
  8 kHz, the least speech APIs take), {AUDIO_BYTES_PER_SECOND_COMPRESSED:,} (16 kbit/s) for any other
  format. {AUDIO_TOKENS_PER_SECOND} tokens a second is the highest documented rate (Gemini; OpenAI's
  is about 10), so the estimate errs high.
- **Files** with inline `text/*` data cost `n` of their text; other inline data one token per
  {FILE_BYTES_PER_TOKEN} decoded bytes (a PDF page costs its text and an image of it, 1,500 to 3,000
  tokens by Anthropic's documentation).
- Audio or a file given only by reference (an id or a URL) has no size dsgc can see: it is counted
  as its JSON and logged once (a `WARNING` on the `dsgc.tokens` logger), like an unknown kind.
- **Unknown kinds** are counted as their JSON, with one `WARNING` per kind and process on the
  `dsgc.tokens` logger; never an exception.
- A tool result that `select` cuts to fit (`on_over_budget="truncate"`) is sent with its text cut;
  its other parts are left out with the cut.
"""

RULES = {
    "text": "n({fields})",
    "image": f"{IMAGE_TOKENS:,} ({IMAGE_TOKENS_LOW} at detail low)",
    "audio": f"inline data: ceil(seconds x {AUDIO_TOKENS_PER_SECOND}); by reference: JSON, logged",
    "file": f"inline text/*: n(text); other inline data: bytes / {FILE_BYTES_PER_TOKEN}; by reference: JSON, logged",
    "call": "n({name}) + n({arguments} as JSON, unless a string)",
    "result": "its `{fields}`: n(text), parts by their rules, else n(JSON)",
    "json": "n(JSON)",
}
KEPT = {
    "text": "unchanged, in its message (in a tool result cut to fit: cut)",
    "image": "unchanged, in its message (left out of a tool result cut to fit)",
}


def content_row(kind: ContentKind) -> str:
    """The table row of one content-part kind."""
    fields = " + ".join(f"`{f}`" for f in kind.fields)
    name, arguments = ([f"`{f}`" for f in kind.fields] + ["", ""])[:2]
    counted = RULES[kind.rule].format(fields=fields, name=name, arguments=arguments)
    if kind.rule == "json" and kind.fields:
        counted += f" of the rest, + {IMAGE_TOKENS:,} for the image in {fields}"
    kept = KEPT.get(kind.rule, KEPT["image"])
    return f"| `{kind.kind}` | {kind.produced_by} | {kind.rule}: {counted} | {kept} |"


def item_row(kind: ItemKind) -> str:
    """The table row of one Responses item type."""
    if kind.unit == "message":
        counted = "the chat message the SDK's converter makes of it, its parts by the content table"
        kept = "a unit of its own; an assistant output message joins the calls of its turn"
    elif kind.unit == "reasoning":
        counted = "as a `reasoning` part: n(summary and reasoning text)"
        kept = "with the item after it; trailing reasoning items are always sent"
    elif kind.unit == "call":
        answer = f"`{kind.answer}`"
        arguments = "`arguments`" if kind.kind == "function_call" else "its other fields as JSON"
        counted = f"a tool call: n(name) + n({arguments})"
        kept = f"with its {answer} (by `{kind.keys[0]}`), in its assistant turn; without it: as a hosted item"
    elif kind.unit == "output":
        counted = "a tool result: " + (
            f"`{kind.output}` (text, parts by the content table, else JSON)" if kind.output else "its fields as JSON"
        )
        cut = "cut to fit as text" if kind.cut else "never cut (sent whole)"
        kept = f"with its call; {cut}; without its call: as a hosted item"
    else:
        counted = "as a content part of its kind (the table above)"
        kept = "in the assistant turn it belongs to"
    return f"| `{kind.kind}` | {kind.unit} | {counted} | {kept} |"


def render() -> str:
    """The whole page."""
    lines = [
        INTRO,
        "## Content parts (LangChain / LangGraph messages, chat messages, the store)",
        "",
        "| kind (`type`) | produced by | counted | kept |",
        "| --- | --- | --- | --- |",
        *(content_row(k) for k in CONTENT_KINDS),
        "",
        "## Responses items (OpenAI Agents SDK: `InputFilter`, `RetainedSession`, `add_items`)",
        "",
        "Items are grouped into units: a call with its output, an assistant turn with its hosted",
        "items, reasoning with the item it explains; a unit is kept or left out whole. Any type not",
        "listed is a hosted item counted as an unknown content part.",
        "",
        "| type | unit | counted | kept |",
        "| --- | --- | --- | --- |",
        *(item_row(k) for k in ITEM_KINDS),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the page here instead of printing it")
    args = parser.parse_args()
    page = render()
    if args.out is None:
        print(page, end="")
    else:
        args.out.write_text(page, encoding="utf-8")


if __name__ == "__main__":
    main()
