"""The runnable examples in the worstoff docstrings stay true."""

import doctest

import pytest

import icml25.worstoff
from icml25.worstoff import bvn, empirical, theory, uncertainty


@pytest.mark.parametrize("module", [icml25.worstoff, bvn, empirical, theory, uncertainty])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
