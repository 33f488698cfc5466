"""The docstring examples run and print what they claim."""

import doctest

import pytest

from icml25.conformal import (
    adaptive,
    calibration,
    cross,
    estimators,
    exact,
    ltt,
    metrics,
    posterior,
    predictive,
    rules,
    scores,
    weighted,
)


@pytest.mark.parametrize("module", [posterior, calibration, estimators, rules, scores, exact,
                                    cross, adaptive, ltt, weighted, predictive, metrics])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
