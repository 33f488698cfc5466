import pytest
from scipy.stats import beta

from icml25.core import clopper_pearson


def test_clopper_pearson_matches_the_beta_quantiles_and_edges():
    lo, hi = clopper_pearson(3, 20)
    assert lo == pytest.approx(beta.ppf(0.025, 3, 18))
    assert hi == pytest.approx(beta.ppf(0.975, 4, 17))
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0
    with pytest.raises(ValueError):
        clopper_pearson(5, 3)
