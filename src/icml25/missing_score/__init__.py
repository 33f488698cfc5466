"""Score matching with missing data (Givens, Liu & Reeve, ICML 2025) and a graphical-model
estimator that accepts NaN.

Needs the ``torch`` extra. Public names:

- models: ``GaussianModel``, ``ICAModel``, ``EnergyModel`` (any torch energy), ``DensityModel``
- domains: ``Box``, ``HalfSpace`` (truncated score matching)
- objectives: ``iw_loss``, ``em_loss``, ``zeroed_loss``, ``score_matching_loss``,
  ``marginal_terms``, ``Objective``, ``fit_density``
- Gaussian closed forms: ``exact_marginal_loss``, ``marginal_precision``, ``fisher_divergence``,
  ``exact_conditional_sampler``, ``zeroed_population_minimiser``
- estimators: ``MissingScoreGGM`` (``alpha="auto"``: penalty by extended BIC by default, or
  StARS / CV), ``MissingScoreGGMCV`` (penalty by extended BIC, StARS (``stars_index``) or CV,
  ``held_out_loss``, ``ebic_path``, ``extended_bic``, ``observed_loglik``,
  ``support_refit``); baselines ``glasso_mean_impute``, ``glasso_pairwise``, ``em_glasso``,
  ``em_gaussian``
- transforms: ``nonparanormal`` (rank-based Gaussian copula, NaN-aware)
- data: ``star_precision``, ``dense_precision``, ``mcar_mask``, ``sample_gaussian``
"""

from icml25.core import require_extra

require_extra("torch", "torch")

from icml25.missing_score.baselines import (  # noqa: E402
    GlassoPath,
    em_gaussian,
    em_glasso,
    glasso_mean_impute,
    glasso_pairwise,
    glasso_path,
    pairwise_covariance,
)
from icml25.missing_score.data import (  # noqa: E402
    dense_precision,
    mcar_mask,
    sample_gaussian,
    star_precision,
    strong_connection_covariance,
)
from icml25.missing_score.domains import Box, Domain, HalfSpace  # noqa: E402
from icml25.missing_score.estimator import (  # noqa: E402
    MissingScoreGGM,
    TooFewCompleteRowsWarning,
)
from icml25.missing_score.fitting import METHODS, Objective, fit_density  # noqa: E402
from icml25.missing_score.gaussian import (  # noqa: E402
    exact_conditional_sampler,
    exact_marginal_loss,
    fisher_divergence,
    marginal_precision,
    zeroed_population_minimiser,
)
from icml25.missing_score.models import (  # noqa: E402
    DensityModel,
    EnergyModel,
    GaussianModel,
    ICAModel,
)
from icml25.missing_score.objectives import (  # noqa: E402
    em_loss,
    iw_loss,
    marginal_terms,
    score_matching_loss,
    zeroed_loss,
)
from icml25.missing_score.selection import (  # noqa: E402
    DensestPenaltyWarning,
    MissingScoreGGMCV,
    ebic_path,
    extended_bic,
    held_out_loss,
    observed_loglik,
    stars_index,
    support_refit,
)
from icml25.missing_score.transforms import nonparanormal  # noqa: E402
from icml25.missing_score.variational import VariationalImputer  # noqa: E402

__all__ = [
    "DensestPenaltyWarning",
    "GlassoPath",
    "MissingScoreGGM",
    "MissingScoreGGMCV",
    "TooFewCompleteRowsWarning",
    "ebic_path",
    "extended_bic",
    "held_out_loss",
    "observed_loglik",
    "support_refit",
    "stars_index",
    "nonparanormal",
    "dense_precision",
    "em_gaussian",
    "em_glasso",
    "glasso_mean_impute",
    "glasso_pairwise",
    "glasso_path",
    "mcar_mask",
    "pairwise_covariance",
    "sample_gaussian",
    "star_precision",
    "strong_connection_covariance",
    "METHODS",
    "Box",
    "DensityModel",
    "Domain",
    "EnergyModel",
    "GaussianModel",
    "HalfSpace",
    "ICAModel",
    "Objective",
    "VariationalImputer",
    "em_loss",
    "exact_conditional_sampler",
    "exact_marginal_loss",
    "fisher_divergence",
    "fit_density",
    "iw_loss",
    "marginal_precision",
    "marginal_terms",
    "score_matching_loss",
    "zeroed_loss",
    "zeroed_population_minimiser",
]
