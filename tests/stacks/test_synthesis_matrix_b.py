"""The synthesis matrix's other half: every test of ``test_synthesis_matrix.py`` that runs per configuration, on the
configurations it names :data:`~tests.stacks.test_synthesis_matrix.SECOND_HALF` (the example left out of the optional
stacks in turn, and Sleeper's ``example/basic``). A file of its own so that a second pytest-xdist worker can take
them: each configuration is synthesized in one process only."""

from __future__ import annotations

import pytest

from tests.stacks import test_synthesis_matrix as first_half
from tests.stacks.test_synthesis_matrix import configured, grants, pytest_generate_tests  # noqa: F401

pytestmark = pytest.mark.slow

SECOND = True

globals().update({name: test for name, test in vars(first_half).items() if getattr(test, "matrix", None)})


def should_check_every_configuration_in_one_half_or_the_other() -> None:
    # Given the tests each half runs per configuration, and each half's configurations
    tests = {name for name, test in vars(first_half).items() if getattr(test, "matrix", None)}
    first = set(first_half.configurations("every", False))
    second = set(first_half.configurations("every", True))
    # Then this module runs every such test, and the halves hold every configuration once, the second all it names
    assert tests and tests <= set(globals())
    assert first.isdisjoint(second)
    assert first | second == {first_half.EXAMPLE, *first_half.BY_NAME}
    assert second == first_half.SECOND_HALF
