"""Deliberately broken demo system `demo_head_block` (see demo_head_block.gnn)."""
