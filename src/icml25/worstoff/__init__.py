"""Value of prediction vs access in identifying the worst-off.

Fischer-Abaigar, Kern & Perdomo, "The Value of Prediction in Identifying the Worst-Off"
(ICML 2025). Gaussian closed forms (:mod:`.theory`), a fast vectorised bivariate normal CDF
(:mod:`.bvn`), a Monte Carlo check (:mod:`.montecarlo`), empirical tools for a user's own outcomes
and predictions (:mod:`.empirical`), bootstrap intervals for them (:mod:`.uncertainty`) and a
synthetic stand-in for the paper's case study (:mod:`.casestudy`).

>>> from icml25.worstoff import value, par, local_par
>>> round(value(0.2, 0.2, 0.2), 3), round(local_par(0.2, 0.2, 0.2), 2)
(0.406, 2.47)
"""

from icml25.worstoff.bvn import bvn_cdf
from icml25.worstoff.empirical import (
    capacity_needed,
    delta_alpha_star,
    empirical_par,
    empirical_par_at_r2,
    empirical_value,
    improve_predictions,
    predictions_at_r2,
    r2_score,
    recalibrate,
    recalibration,
)
from icml25.worstoff.montecarlo import monte_carlo_value, simulate_gaussian
from icml25.worstoff.theory import (
    dvalue_dalpha,
    dvalue_dr2,
    local_par,
    log_local_par,
    lognormal_r2_level,
    lognormal_r2_log,
    lognormal_value,
    par,
    par_lower_bound,
    policy_curve,
    prop33_factors,
    prop33_region,
    value,
)
from icml25.worstoff.uncertainty import (
    MeaninglessPARWarning,
    ScreeningEvaluation,
    SmoothedPAR,
    bootstrap_delta_alpha_star,
    bootstrap_evaluation,
    par_verdict,
    predictor_problems,
    smoothed_par,
)

__all__ = [
    "MeaninglessPARWarning",
    "ScreeningEvaluation",
    "SmoothedPAR",
    "bootstrap_delta_alpha_star",
    "bootstrap_evaluation",
    "par_verdict",
    "predictor_problems",
    "recalibrate",
    "recalibration",
    "smoothed_par",
    "bvn_cdf",
    "capacity_needed",
    "delta_alpha_star",
    "empirical_par_at_r2",
    "dvalue_dalpha",
    "dvalue_dr2",
    "empirical_par",
    "empirical_value",
    "improve_predictions",
    "local_par",
    "log_local_par",
    "lognormal_r2_level",
    "lognormal_r2_log",
    "lognormal_value",
    "monte_carlo_value",
    "par",
    "par_lower_bound",
    "policy_curve",
    "predictions_at_r2",
    "prop33_factors",
    "prop33_region",
    "r2_score",
    "simulate_gaussian",
    "value",
]
