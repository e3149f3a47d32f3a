"""Deliberately broken demo system `demo_naive_softmax` (see demo_naive_softmax.gnn)."""
