"""The correctness gate: a fast wrong kernel is a finding, never a result.

``verify`` drives it; ``conformance`` holds the operator cases and the
float64 oracle comparison; ``isolation`` runs check groups in child
processes; ``model_check`` checks the models against dense formulations;
``quantised`` checks pim's int32 mode; ``status`` looks verification up by
system and build hash.
"""
