"""gnnbench/errors.py: the typed expected failures the CLI turns into one line and exit status 2."""
from __future__ import annotations

import pytest

from gnnbench.errors import BoundaryError, UnavailableError, UserError


def test_boundary_error_names_operator_argument_and_problem():
    err = BoundaryError("isplib.spmm", "out", "must be contiguous (got strides (1, 4))")
    assert str(err) == "isplib.spmm: argument 'out' must be contiguous (got strides (1, 4))"
    assert (err.operator, err.argument) == ("isplib.spmm", "out")
    assert err.problem == "must be contiguous (got strides (1, 4))"


@pytest.mark.parametrize("kind", [BoundaryError, UnavailableError])
def test_every_expected_failure_is_a_user_error(kind):
    assert issubclass(kind, UserError)


def test_boundary_error_is_also_a_type_error():
    """Callers that already catch TypeError for a wrong tensor keep working."""
    with pytest.raises(TypeError):
        raise BoundaryError("k", "x", "has dtype float64, expected float32")
