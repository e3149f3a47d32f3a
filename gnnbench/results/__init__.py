"""Stored runs and what people read from them.

``store`` is the SQLite results store (versioned schema); ``frame`` loads it
as a pandas DataFrame; ``compare`` builds comparison tables with confidence
intervals and marks; ``tables`` renders them; ``plot`` draws figures;
``report`` writes the static HTML report.
"""
