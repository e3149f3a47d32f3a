"""Developer documents rendered from the code, and the facts the architecture tests read.

``layers`` reads ``gnnbench/layers.toml`` (the one statement of the layering) and renders
``docs/architecture.md``; ``notes`` indexes every Note into ``docs/notes.md`` and finds citations
that name none. ``python -m gnnbench.house write`` rewrites both documents, ``check`` says which is
stale; ``tests/test_layers.py`` and ``tests/test_notes.py`` keep them current.
"""
__all__ = ["layers", "notes"]
