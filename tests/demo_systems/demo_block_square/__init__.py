"""Deliberately broken demo system `demo_block_square` (see demo_block_square.gnn)."""
