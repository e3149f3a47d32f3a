"""Test-only broken system `hanger` (see tests/sweep_systems/README.md)."""
