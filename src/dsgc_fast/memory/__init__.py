"""The agent-memory wing of dsgc_fast: chat histories and stores on top of the engine.

The engine (``dsgc_fast.engine``, ``stages``, ``graph``, ``pins``, ``kernels``) decides over
arrays; this package turns an agent's messages into blocks and back, and never the reverse:
no engine module imports from here (``tests/test_layering.py``).

``block``
    the block model and its checks (``Block``, ``ArchivedBlock``, ``DeletedBlock``,
    ``checked_block``), with no database code.
``chat``
    the chat rules, once: roles, tool units, turn boundaries, live roots, working ages.
``token_counts``, ``token_approx``, ``content_kinds``
    a block's cost in model tokens, framing included; the content-part kinds and their costs.
``compaction``
    one compaction decision (``decide``) over the blocks' arrays, shared by the store and ``select``.
``digest``, ``digest_blocks``
    value-level retention: a tool result's digest and its cost.
``explain``, ``explain_text``, ``explain_html``
    what a decision kept and why (``CompactionReport``), as data, text and a page.
``records``
    message and block records -> ``MemoryStore.add`` arguments and blocks -> messages, over
    public data only (``Planner``, ``StoredBlocks``, ``SessionError``, JSONL).
``messages``
    chat messages <-> blocks for a ``MemoryStore`` (records and chat rules applied to a store).
``history``
    ``select``: the stateless decision over a history the caller owns.
``schema``
    the SQLite tables of an archive and ``MIGRATIONS``, the steps from every older version.
``columns``
    ``BlockColumns``: the one column store of blocks (ids, costs, links, referents,
    embeddings, chat facts) that ``MemoryStore`` and ``select`` share.
``store``, ``core``, ``compact_run``, ``recall``, ``erasure``, ``archive``, ``aio``
    ``MemoryStore`` (an agent-owned, archived history), a locked facade over ``StoreCore``
    (the archive, the columns, the encoder), the compaction over the whole history, recall
    and search, deletion; its SQLite archive (connection, transactions, row moves) and the
    asyncio facade.

Public names are re-exported by ``dsgc_fast``; ``dsgc_fast.memory.messages``,
``dsgc_fast.memory.token_counts``, ``dsgc_fast.memory.block`` and
``dsgc_fast.memory.digest_blocks`` are public modules too.
"""
