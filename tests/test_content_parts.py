"""Every content-part kind the frameworks produce is counted by its documented rule and passed through.

``EXAMPLES`` holds one part per kind of ``CONTENT_KINDS`` (a test checks that the two name the
same kinds) and the cost its rule gives, written from the rule in the module doc of
``token_counts``.  Reasoning, thinking, images, audio, files and tool-use parts of a LangChain
conversation go through ``select_messages``, ``add_messages`` and ``select`` unchanged; an
unknown kind is counted as its JSON and logged once, never raised.
"""

from __future__ import annotations

import base64
import json
import logging
import math

import pytest

from dsgc_fast import MemoryStore, SelectCache, select
from dsgc_fast.memory.content_kinds import (
    AUDIO_BYTES_PER_SECOND,
    AUDIO_BYTES_PER_SECOND_COMPRESSED,
    AUDIO_TOKENS_PER_SECOND,
    CONTENT_KINDS,
    FILE_BYTES_PER_TOKEN,
    IMAGE_TOKENS,
    IMAGE_TOKENS_LOW,
)
from dsgc_fast.memory.messages import add_messages, to_messages
from dsgc_fast.memory.token_counts import TOKENS_PER_MESSAGE, content_part_tokens, message_tokens, token_counter

COUNT = token_counter("approx")
n = COUNT.count
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(300)).decode()
WAV = base64.b64encode(bytes(48_000)).decode()  # 48,000 bytes: 3 s of 16 kHz 16-bit mono
MP3 = base64.b64encode(bytes(6_000)).decode()
PDF = base64.b64encode(b"%PDF-1.7" + bytes(2_992)).decode()  # 3,000 bytes
NOTE = "a plain text file, counted as its text"
TEXT_FILE = base64.b64encode(NOTE.encode()).decode()


def _json(value) -> int:
    return n(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _audio(size: int, rate: int) -> int:
    return math.ceil(size / rate * AUDIO_TOKENS_PER_SECOND)


RESULT_TEXT = "order 8841 shipped"
HOSTED = {
    "web_search_call": {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "q"}},
    "file_search_call": {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["refunds"]},
    "code_interpreter_call": {"type": "code_interpreter_call", "id": "ci_1", "code": "1+1", "outputs": []},
    "mcp_call": {"type": "mcp_call", "id": "mc_1", "server_label": "crm", "name": "find", "arguments": "{}"},
    "mcp_list_tools": {"type": "mcp_list_tools", "id": "ml_1", "server_label": "crm", "tools": []},
    "mcp_approval_request": {"type": "mcp_approval_request", "id": "mr_1", "name": "find", "arguments": "{}"},
    "mcp_approval_response": {"type": "mcp_approval_response", "approval_request_id": "mr_1", "approve": True},
    "computer_call": {"type": "computer_call", "call_id": "cc_1", "action": {"type": "click", "x": 4, "y": 9}},
    "local_shell_call": {"type": "local_shell_call", "call_id": "lc_1", "action": {"command": ["ls"]}},
    "shell_call": {"type": "shell_call", "call_id": "sh_1", "action": {"commands": ["ls"]}},
    "apply_patch_call": {"type": "apply_patch_call", "call_id": "ap_1", "operation": {"type": "delete_file"}},
    "tool_search_call": {"type": "tool_search_call", "call_id": "ts_1", "arguments": {"query": "refund"}},
    "program": {"type": "program", "id": "p_1", "call_id": "pc_1", "code": "run()", "fingerprint": "f"},
    "additional_tools": {"type": "additional_tools", "role": "developer", "tools": []},
    "configuration_update": {"type": "configuration_update", "id": "cu_1"},
    "compaction": {"type": "compaction", "encrypted_content": "opaque"},
    "compaction_trigger": {"type": "compaction_trigger"},
    "item_reference": {"type": "item_reference", "id": "msg_7"},
    "non_standard": {"type": "non_standard", "value": {"provider": "field"}},
}

#: kind -> (an example part, the cost its rule gives under the approx counter)
EXAMPLES = {
    "text": ({"type": "text", "text": "two words"}, n("two words")),
    "input_text": ({"type": "input_text", "text": "typed in"}, n("typed in")),
    "output_text": ({"type": "output_text", "text": "the answer", "annotations": []}, n("the answer")),
    "refusal": ({"type": "refusal", "refusal": "I cannot help"}, n("I cannot help")),
    "thinking": ({"type": "thinking", "thinking": "check the ledger", "signature": "EqQB"}, n("check the ledger")),
    "redacted_thinking": ({"type": "redacted_thinking", "data": "EmwKAhgB"}, n("EmwKAhgB")),
    "reasoning": (
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "search first"}],
            "encrypted_content": "gAAAAB",
        },
        n("search first"),
    ),
    "summary_text": ({"type": "summary_text", "text": "in short"}, n("in short")),
    "reasoning_text": ({"type": "reasoning_text", "text": "step one"}, n("step one")),
    "image_url": ({"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}, IMAGE_TOKENS),
    "input_image": (
        {"type": "input_image", "image_url": "https://example.invalid/a.png", "detail": "low"},
        IMAGE_TOKENS_LOW,
    ),
    "image": ({"type": "image", "base64": PNG, "mime_type": "image/png"}, IMAGE_TOKENS),
    "computer_screenshot": ({"type": "computer_screenshot", "image_url": f"data:image/png;base64,{PNG}"}, IMAGE_TOKENS),
    "input_audio": (
        {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
        _audio(48_000, AUDIO_BYTES_PER_SECOND["wav"]),
    ),
    "audio": (
        {"type": "audio", "base64": MP3, "mime_type": "audio/mpeg"},
        _audio(6_000, AUDIO_BYTES_PER_SECOND_COMPRESSED),
    ),
    "file": (
        {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "a.pdf"}},
        math.ceil(3_000 / FILE_BYTES_PER_TOKEN),
    ),
    "input_file": ({"type": "input_file", "file_data": f"data:text/plain;base64,{TEXT_FILE}"}, n(NOTE)),
    "document": (
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}},
        math.ceil(3_000 / FILE_BYTES_PER_TOKEN),
    ),
    "tool_use": (
        {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"id": 8841}},
        n("lookup") + n('{"id":8841}'),
    ),
    "server_tool_use": (
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}},
        n("web_search") + n('{"query":"q"}'),
    ),
    "tool_call": ({"type": "tool_call", "id": "t1", "name": "lookup", "args": {"id": 1}}, n("lookup") + n('{"id":1}')),
    "tool_call_chunk": ({"type": "tool_call_chunk", "name": "lookup", "args": '{"id": 1'}, n("lookup") + n('{"id": 1')),
    "server_tool_call": (
        {"type": "server_tool_call", "id": "s1", "name": "web_search", "args": {"q": 1}},
        n("web_search") + n('{"q":1}'),
    ),
    "function_call": (
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"id": 2}'},
        n("lookup") + n('{"id": 2}'),
    ),
    "custom_tool_call": (
        {"type": "custom_tool_call", "call_id": "c2", "name": "sql", "input": "SELECT 1"},
        n("sql") + n("SELECT 1"),
    ),
    "tool_result": (
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [
                {"type": "text", "text": RESULT_TEXT},
                {"type": "image", "base64": PNG, "mime_type": "image/png"},
            ],
        },
        n(RESULT_TEXT) + IMAGE_TOKENS,
    ),
    "web_search_tool_result": (
        {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [{"url": "u", "title": "t"}]},
        _json([{"url": "u", "title": "t"}]),
    ),
    "web_fetch_tool_result": (
        {"type": "web_fetch_tool_result", "tool_use_id": "s2", "content": RESULT_TEXT},
        n(RESULT_TEXT),
    ),
    "code_execution_tool_result": (
        {"type": "code_execution_tool_result", "tool_use_id": "s3", "content": {"stdout": "2"}},
        _json({"stdout": "2"}),
    ),
    "mcp_tool_result": (
        {"type": "mcp_tool_result", "tool_use_id": "m1", "content": [{"type": "text", "text": RESULT_TEXT}]},
        n(RESULT_TEXT),
    ),
    "server_tool_result": (
        {"type": "server_tool_result", "tool_call_id": "s1", "status": "success", "output": RESULT_TEXT},
        n(RESULT_TEXT),
    ),
    "function_call_output": ({"type": "function_call_output", "call_id": "c1", "output": RESULT_TEXT}, n(RESULT_TEXT)),
    "custom_tool_call_output": (
        {"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": RESULT_TEXT}]},
        n(RESULT_TEXT),
    ),
    "computer_call_output": (
        {
            "type": "computer_call_output",
            "call_id": "cc_1",
            "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{PNG}"},
        },
        IMAGE_TOKENS,
    ),
    "local_shell_call_output": ({"type": "local_shell_call_output", "call_id": "lc_1", "output": "a.txt"}, n("a.txt")),
    "shell_call_output": (
        {"type": "shell_call_output", "call_id": "sh_1", "output": [{"stdout": "a.txt", "stderr": ""}]},
        _json([{"stdout": "a.txt", "stderr": ""}]),
    ),
    "apply_patch_call_output": ({"type": "apply_patch_call_output", "call_id": "ap_1", "output": "done"}, n("done")),
    "tool_search_output": ({"type": "tool_search_output", "call_id": "ts_1", "tools": []}, _json([])),
    "program_output": ({"type": "program_output", "id": "po", "call_id": "pc_1", "result": "ok"}, n("ok")),
    "image_generation_call": (
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": PNG},
        _json({"type": "image_generation_call", "id": "ig_1", "status": "completed"}) + IMAGE_TOKENS,
    ),
    **{kind: (part, _json(part)) for kind, part in HOSTED.items()},
}


def test_the_examples_name_every_kind_of_the_table():
    assert set(EXAMPLES) == {k.kind for k in CONTENT_KINDS}
    assert len(CONTENT_KINDS) == len({k.kind for k in CONTENT_KINDS})  # one rule per kind


@pytest.mark.parametrize("kind", [k.kind for k in CONTENT_KINDS])
def test_each_kind_costs_what_its_rule_says_without_a_warning(kind, caplog):
    part, expected = EXAMPLES[kind]
    snapshot = json.dumps(part)
    with caplog.at_level(logging.WARNING, logger="dsgc"):
        assert content_part_tokens(part, COUNT) == expected
        message = {"role": "user", "content": [part]}
        assert message_tokens(message, COUNT) == TOKENS_PER_MESSAGE + n("user") + expected
    assert not caplog.records and json.dumps(part) == snapshot  # no warning; the part is unchanged


def test_images_cost_the_documented_estimate():
    assert (IMAGE_TOKENS_LOW, IMAGE_TOKENS) == (85, 1_600)  # OpenAI's low detail; at or above both maxima
    low = {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png", "detail": "low"}}
    assert content_part_tokens(low, COUNT) == IMAGE_TOKENS_LOW


def test_an_unknown_kind_is_counted_as_json_and_logged_once(caplog):
    part = {"type": "hologram", "frames": [1, 2, 3]}
    with caplog.at_level(logging.WARNING, logger="dsgc"):
        assert content_part_tokens(part, COUNT) == _json(part)
        assert content_part_tokens({**part, "frames": []}, COUNT) == _json({**part, "frames": []})
    (record,) = [r for r in caplog.records if "hologram" in r.getMessage()]
    assert record.name == "dsgc.tokens" and record.levelno == logging.WARNING


def test_a_file_given_by_reference_is_counted_as_json_with_a_warning(caplog):
    part = {"type": "document", "source": {"type": "url", "url": "https://example.invalid/terms.pdf"}}
    with caplog.at_level(logging.WARNING, logger="dsgc"):
        assert content_part_tokens(part, COUNT) == _json(part)
    assert [r.getMessage() for r in caplog.records if "'document' part given without inline data" in r.getMessage()]


def test_malformed_parts_are_named():
    with pytest.raises(TypeError, match="text part must be a string"):
        content_part_tokens({"type": "text", "text": 5}, COUNT)
    with pytest.raises(TypeError, match="thinking part must be a string"):
        content_part_tokens({"type": "thinking"}, COUNT)
    with pytest.raises(TypeError, match="a content part must be JSON"):
        content_part_tokens({"type": "tool_use", "name": "f", "input": {1, 2}}, COUNT)


# -- through the LangChain path -------------------------------------------------------------
lc = pytest.importorskip("langchain_core.messages")


def _conversation():
    return [
        lc.SystemMessage("You read receipts."),
        lc.HumanMessage(
            [
                {"type": "text", "text": "what does this receipt and this note say"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                {"type": "image", "base64": PNG, "mime_type": "image/png"},
                {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
                {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "r.pdf"}},
            ]
        ),
        lc.AIMessage(
            [
                {"type": "thinking", "thinking": "The receipt shows order 8841.", "signature": "EqQB"},
                {"type": "redacted_thinking", "data": "EmwKAhgB"},
                {"type": "text", "text": "Let me look up order 8841."},
            ],
            tool_calls=[{"id": "call_1", "name": "lookup", "args": {"order": "8841"}}],
        ),
        lc.ToolMessage([{"type": "text", "text": RESULT_TEXT}], tool_call_id="call_1"),
        lc.AIMessage(
            [
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "It shipped."}]},
                HOSTED["web_search_call"],
                {"type": "text", "text": "Order 8841 shipped."},
            ]
        ),
        lc.HumanMessage("When did it ship?"),
    ]


def test_langchain_messages_with_every_kind_go_through_select_messages_unchanged():
    from dsgc_fast.integrations.langchain import select_messages

    messages = _conversation()
    snapshot = [m.model_dump() for m in messages]
    sent = select_messages(messages, max_tokens=100_000, tokenizer="approx")
    assert [m.content for m in sent] == [m.content for m in messages]
    assert [m.model_dump() for m in messages] == snapshot
    small = select_messages(messages, max_tokens=400, tokenizer="approx")
    assert small[-1] is messages[-1] and messages[1] not in small  # the image-heavy message costs what it carries


def test_blocks_langchain_cannot_convert_are_sent_unchanged_and_counted(caplog):
    from dsgc_fast.integrations.langchain import select_messages

    odd = [
        {"type": "text-plain", "text": "Order 8841 shipped on 2026-11-02.", "mime_type": "text/plain"},
        {"type": "video", "base64": "AAAA" * 50, "mime_type": "video/mp4"},
    ]
    messages = [lc.HumanMessage(odd), lc.AIMessage("Noted."), lc.HumanMessage("When did it ship?")]
    with caplog.at_level("WARNING", logger="dsgc"):
        sent = select_messages(messages, max_tokens=100_000, tokenizer="approx")
    assert sent == messages and sent[0] is messages[0]  # passed through as they are
    assert any("text-plain" in r.getMessage() or "video" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError):  # LangChain's own converter refuses these blocks
        lc.convert_to_openai_messages(lc.HumanMessage(odd))
    assert select_messages(messages, max_tokens=12, tokenizer="approx")[-1] is messages[-1]


def test_the_converted_messages_go_through_the_store_and_select():
    chat = lc.convert_to_openai_messages(_conversation())
    store = MemoryStore(tokenizer="approx")
    ids = add_messages(store, chat)
    assert [store.get(i).cost for i in ids] == [message_tokens(m, COUNT) for m in chat]
    assert store.get(ids[1]).cost > 2 * IMAGE_TOKENS  # two images, audio and a file
    assert to_messages(store) == chat  # passed through unchanged
    chosen = select(chat, 100_000, tokenizer="approx", cache=SelectCache())
    assert chosen.indices == list(range(len(chat)))
