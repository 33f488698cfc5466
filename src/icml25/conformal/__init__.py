"""Conformal prediction as Bayesian quadrature (Snell & Griffiths, ICML 2025).

The risk of a predictor, given n calibration losses in [0, B], is bounded above by
``L+ = sum_i U_i l_(i) + U_{n+1} B`` with U ~ Dirichlet(1, ..., 1): :class:`RiskPosterior`
gives its whole distribution (exact Beta for 0/1 losses, Monte Carlo with common random numbers
otherwise). :func:`calibrate` picks lambda with the paper's rule (``bq``), conformal risk control
(``crc``), RCPS (``rcps``) or split conformal (``split``); the estimators wrap scikit-learn models.

Rules (:mod:`~icml25.conformal.rules`) and conformity scores (:mod:`~icml25.conformal.scores`) are
strategy objects in registries: every ``method=`` / ``conformity_score=`` takes a name or an
instance. The estimators calibrate per group (Mondrian, ``groups=``) or per class
(``class_conditional=True``) on request.
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
from icml25.conformal.estimators import (
    ConformalClassifier,
    ConformalRegressor,
    RiskController,
    false_negative_rate,
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
from icml25.conformal.scores import (
    APS,
    CLASSIFICATION_SCORES,
    CQR,
    LAC,
    RAPS,
    REGRESSION_SCORES,
    AbsoluteResidual,
    ClassificationScore,
    NormalizedResidual,
    RegressionScore,
    TopK,
)

__all__ = [
    "APS",
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
