"""Test-only system `absent` (see tests/sweep_systems/README.md)."""
