"""The search's modes and limits, declared once: what ``kb.search.search`` accepts, what the API's
serializers (``kb.serializers``), the console's forms and ``kb_search`` offer. No imports, so the
schema and the forms take them without loading the search engine.

Adding a retrieval mode: name it in ``MODES`` here, give it its function and its row in
``kb.retrieval.RETRIEVAL_MODES`` (a new way to expand: ``EXPANDS`` here and ``kb.expansion.EXPANSIONS``),
and add its tests (``tests/test_search.py``); the API, the console and the command offer it from here
(``tests/test_search_modes.py`` checks that none of them drifts and that every name has its row).
"""

from __future__ import annotations

MODES = ("vector", "keyword", "hybrid")  # retrieval: nearest vectors, full text, both fused (a convex combination of their scores)
EXPANDS = ("parent", "neighbors", "none")  # what each hit grows into
EXPAND_LEVELS = ("leaf", "parent")  # for expand=parent: the hit's own section, or one heading up
DEFAULT_MODE = "hybrid"
DEFAULT_EXPAND = "parent"
DEFAULT_EXPAND_LEVEL = "leaf"
MAX_TOP_K = 100
MAX_QUERY_CHARS = 4000
# The budget fill (issue 30, sixteenth round, docs/benchmarks.md): when the contexts of the first top_k hits leave
# part of the context budget unused, the next top_k hits add their own chunk's text as further contexts while it
# fits (``kb.search.search(budget_fill=...)``). Off until a read on held-out sources decides.
DEFAULT_BUDGET_FILL = False

__all__ = [
    "DEFAULT_BUDGET_FILL",
    "DEFAULT_EXPAND",
    "DEFAULT_EXPAND_LEVEL",
    "DEFAULT_MODE",
    "EXPANDS",
    "EXPAND_LEVELS",
    "MAX_QUERY_CHARS",
    "MAX_TOP_K",
    "MODES",
]
