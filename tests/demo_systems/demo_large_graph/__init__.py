"""Deliberately broken demo system `demo_large_graph` (see demo_large_graph.gnn)."""
