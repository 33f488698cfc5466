"""The decoder's docstring examples run and print what they claim."""

import doctest

import pytest

from icml25.mdm import compat, decoding, planners
from icml25.nn import model


@pytest.mark.parametrize("module", [decoding, compat, planners, model])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
