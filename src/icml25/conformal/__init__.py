"""Conformal prediction as Bayesian quadrature (Snell & Griffiths, ICML 2025).

The risk of a predictor, given n calibration losses in [0, B], is bounded above by
``L+ = sum_i U_i l_(i) + U_{n+1} B`` with U ~ Dirichlet(1, ..., 1): :class:`RiskPosterior`
gives its whole distribution (exact Beta for 0/1 losses, Monte Carlo with common random numbers
otherwise). :func:`calibrate` picks lambda with the paper's rule (``bq``), conformal risk control
(``crc``), RCPS (``rcps``) or split conformal (``split``); the estimators wrap scikit-learn models.
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
    Rule,
    RuleSpec,
    get_rule,
    minimum_calibration_size,
    register_rule,
)

__all__ = [
    "RULES",
    "Rule",
    "RuleSpec",
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
