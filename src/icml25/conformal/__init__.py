"""Conformal prediction as Bayesian quadrature (Snell & Griffiths, ICML 2025).

The risk of a predictor, given n calibration losses in [0, B], is bounded above by
``L+ = sum_i U_i l_(i) + U_{n+1} B`` with U ~ Dirichlet(1, ..., 1): :class:`RiskPosterior`
gives its whole distribution (exact Beta for 0/1 losses, Monte Carlo with common random numbers
otherwise). :func:`calibrate` picks lambda with the paper's rule (``bq``), conformal risk control
(``crc``), RCPS (``rcps``) or split conformal (``split``); the estimators wrap scikit-learn models.

Rules (:mod:`~icml25.conformal.rules`) and conformity scores (:mod:`~icml25.conformal.scores`) are
strategy objects in registries: every ``method=`` / ``conformity_score=`` takes a name or an
instance. The estimators calibrate per group (Mondrian, ``groups=``) or per class
(``class_conditional=True``) on request; ``ConformalRegressor(cv=K)`` is CV+ (``"jackknife+"``:
leave-one-out), with no separate calibration set.

Beyond exchangeable data and monotone losses: :class:`AdaptiveConformal` (ACI, step size gamma)
and :class:`AggregatedAdaptiveConformal` for sequential data under shift; :class:`LearnThenTest`
and :class:`PrecisionController` for risks that are not monotone in lambda (family-wise error
control with fixed-sequence, Bonferroni or Holm testing); :class:`WeightedConformalRegressor`
for covariate shift (Tibshirani et al. 2019); :class:`ConformalPredictiveSystem` for predictive
distributions and p-values; :mod:`icml25.conformal.metrics` for coverage and size.
"""

from icml25.conformal._validation import InfeasibleRiskWarning
from icml25.conformal.calibration import (
    BatchCalibration,
    CalibrationResult,
    calibrate,
    calibrate_many,
    calibrate_scores,
    crc_bound,
    hoeffding_bentkus_pvalue,
    rcps_upper_bound,
)
from icml25.conformal.posterior import RiskPosterior, uniform_order_statistics
from icml25.conformal.rules import (
    RULES,
    BQRule,
    CRCRule,
    RCPSRule,
    Rule,
    RuleSpec,
    SplitRule,
    get_rule,
    minimum_calibration_size,
    register_rule,
)

# Modules that import scikit-learn (or are rarely needed) load on first use, so that
# ``import icml25.conformal`` and the reproductions stay light.
_LAZY = {
    "ConformalClassifier": "estimators", "ConformalRegressor": "estimators",
    "RiskController": "estimators", "false_negative_rate": "estimators",
    "APS": "scores", "CLASSIFICATION_SCORES": "scores", "CQR": "scores", "LAC": "scores",
    "RAPS": "scores", "REGRESSION_SCORES": "scores", "AbsoluteResidual": "scores",
    "ClassificationScore": "scores", "NormalizedResidual": "scores",
    "RegressionScore": "scores", "TopK": "scores",
    "AdaptiveConformal": "adaptive", "AggregatedAdaptiveConformal": "adaptive",
    "plot_coverage_over_time": "adaptive",
    "LearnThenTest": "ltt", "PrecisionController": "ltt", "fwer_control": "ltt",
    "ltt_pvalues": "ltt",
    "WeightedConformalRegressor": "weighted", "DomainClassifierRatio": "weighted",
    "weighted_thresholds": "weighted", "ConformalPredictiveSystem": "predictive",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'icml25.conformal' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"icml25.conformal.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "APS",
    "ConformalPredictiveSystem",
    "DomainClassifierRatio",
    "WeightedConformalRegressor",
    "weighted_thresholds",
    "AdaptiveConformal",
    "AggregatedAdaptiveConformal",
    "LearnThenTest",
    "PrecisionController",
    "fwer_control",
    "ltt_pvalues",
    "plot_coverage_over_time",
    "CLASSIFICATION_SCORES",
    "CQR",
    "LAC",
    "RAPS",
    "REGRESSION_SCORES",
    "RULES",
    "AbsoluteResidual",
    "BQRule",
    "CRCRule",
    "ClassificationScore",
    "NormalizedResidual",
    "RCPSRule",
    "RegressionScore",
    "Rule",
    "RuleSpec",
    "SplitRule",
    "TopK",
    "BatchCalibration",
    "CalibrationResult",
    "ConformalClassifier",
    "ConformalRegressor",
    "InfeasibleRiskWarning",
    "RiskController",
    "RiskPosterior",
    "calibrate",
    "calibrate_many",
    "calibrate_scores",
    "crc_bound",
    "false_negative_rate",
    "get_rule",
    "hoeffding_bentkus_pvalue",
    "minimum_calibration_size",
    "rcps_upper_bound",
    "register_rule",
    "uniform_order_statistics",
]
