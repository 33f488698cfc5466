"""A SYNTHETIC stand-in for the paper's long-term-unemployment case study.

The paper uses German administrative records (SIAB-R 7521), which are restricted and cannot be
shipped. This module generates a synthetic population of job-seekers with the same *shape* of
problem: numeric and categorical covariates (demographics, labour-market history, last job),
a right-skewed unemployment duration in days capped at 24 months, spells starting 2010-2015 and the
paper's temporal split (train 2010-2011, validate 2012, test 2015). The noise level was chosen so
that a gradient-boosted regressor reaches a test R^2 near the paper's 0.15 (see
``NOISE_SD``); nothing here is estimated from real data, and its numbers are not findings about
any real labour market.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = [
    "CAP_DAYS",
    "NOISE_SD",
    "JobSeekers",
    "make_jobseekers",
    "temporal_split",
    "fit_models",
]

CAP_DAYS = 730  # durations are capped at 24 months, as in the paper
# Standard deviation of the unexplained part of log-duration. Chosen (by hand, on seed 0) so that
# HistGradientBoosting with early stopping reaches a 2015 test R^2 of about 0.15 on capped days.
NOISE_SD = 1.15
YEARS = np.arange(2010, 2016)

NUMERIC = [
    "age", "female", "foreign", "health_limitation", "vocational_training", "children",
    "days_employed_5y", "prior_spells_5y", "days_since_last_job", "log_last_wage",
    "tenure_last_job_years", "part_time_last_job", "benefit_entitlement_days",
    "regional_unemployment_rate",
]
CATEGORICAL = {"education": 4, "sector": 8, "region": 10, "skill_level": 4}


@dataclasses.dataclass
class JobSeekers:
    """Synthetic spells: features ``X`` (numeric columns, then categorical codes), the outcome
    ``duration`` in days (capped), the spell's start ``year`` and column names."""

    X: np.ndarray
    duration: np.ndarray
    year: np.ndarray
    feature_names: list[str]
    categorical: list[int]  # column indices of categorical codes in X

    def __len__(self) -> int:
        return self.duration.size

    def subset(self, mask: np.ndarray) -> JobSeekers:
        return JobSeekers(self.X[mask], self.duration[mask], self.year[mask],
                          self.feature_names, self.categorical)

    def one_hot(self) -> np.ndarray:
        """Numeric columns plus one-hot categoricals (what the paper feeds its models)."""
        num = np.delete(self.X, self.categorical, axis=1)
        blocks = [num]
        for j, (_, levels) in zip(self.categorical, CATEGORICAL.items(), strict=True):
            codes = self.X[:, j].astype(int)
            blocks.append(np.eye(levels)[codes])
        return np.hstack(blocks)


def make_jobseekers(n_per_year: int = 20_000, seed: int | np.random.Generator = 0) -> JobSeekers:
    """Generate ``n_per_year`` synthetic unemployment spells for each year 2010-2015.

    Duration is log-normal around a non-linear function of the covariates (older, less educated,
    sicker people with thin employment histories in high-unemployment regions stay unemployed
    longer), with a slowly improving labour market over the years, capped at 730 days.
    """
    from icml25.core import make_rng

    if n_per_year < 10:
        raise ValueError("n_per_year must be at least 10")
    rng = make_rng(seed)
    n = n_per_year * YEARS.size
    year = np.repeat(YEARS, n_per_year)
    t = (year - 2010) / 5.0  # 0 .. 1

    region = rng.integers(0, 10, n)
    region_rate = np.linspace(0.04, 0.14, 10)[region] * (1.0 - 0.25 * t)  # labour market improves
    education = rng.choice(4, n, p=[0.2, 0.5, 0.2, 0.1])
    sector = rng.integers(0, 8, n)
    skill = np.clip(education + rng.integers(-1, 2, n), 0, 3)
    age = np.clip(rng.normal(38 + 2.0 * t, 11.0, n), 18, 64)  # workforce ages a little
    female = rng.random(n) < 0.45
    foreign = rng.random(n) < 0.15 + 0.05 * t
    health = rng.random(n) < 0.06 + 0.004 * (age - 18)
    vocational = rng.random(n) < np.array([0.3, 0.8, 0.6, 0.4])[education]
    children = rng.poisson(0.7, n)
    attachment = rng.normal(0.0, 1.0, n)  # latent labour-market attachment, not observed
    days_employed = np.clip(1825 * (0.6 + 0.22 * attachment + rng.normal(0, 0.12, n)), 0, 1825)
    prior_spells = rng.poisson(np.exp(0.2 - 0.6 * attachment))
    since_last = rng.exponential(20.0 + 120.0 * np.exp(-attachment), n)
    log_wage = (7.6 + 0.25 * education + 0.12 * skill + 0.01 * (age - 18) - 0.15 * female
                + 0.1 * attachment + rng.normal(0, 0.35, n))
    tenure = rng.exponential(1.0 + 3.0 * np.clip(days_employed / 1825, 0, 1), n)
    part_time = rng.random(n) < 0.15 + 0.25 * female
    entitlement = np.clip(180 + 180 * (days_employed > 720) + 180 * (age > 50)
                          + rng.integers(-30, 31, n), 90, 720)
    sector_effect = np.array([0.0, 0.1, -0.1, 0.2, -0.05, 0.15, 0.05, -0.15])[sector]

    # Expected log-duration (days): the signal a model can learn.
    mu = (4.3
          # a few strong, threshold-like effects (what case workers know matters most)
          + 0.6 * (age > 50) + 0.55 * health + 0.5 * (days_employed < 700)
          + 0.3 * (prior_spells >= 2) + 0.3 * (education == 0)
          # many weaker, smooth ones
          + 0.004 * (age - 18) - 0.04 * skill + 0.06 * foreign
          + 0.05 * female * (children > 0)
          + 0.0008 * np.minimum(since_last, 400)
          - 0.06 * (log_wage - 8.0) - 0.02 * np.minimum(tenure, 10)
          + 0.05 * part_time + 0.0002 * (entitlement - 360)
          + 2.0 * (region_rate - 0.09) + sector_effect / 3
          - 0.05 * attachment  # part of the signal is unobservable
          - 0.15 * t)
    log_dur = mu + NOISE_SD * rng.standard_normal(n)
    duration = np.minimum(np.ceil(np.exp(log_dur)), CAP_DAYS)

    numeric = np.column_stack([
        age, female, foreign, health, vocational, children, days_employed, prior_spells,
        since_last, log_wage, tenure, part_time, entitlement, region_rate,
    ]).astype(float)
    cats = np.column_stack([education, sector, region, skill]).astype(float)
    X = np.hstack([numeric, cats])
    names = NUMERIC + list(CATEGORICAL)
    categorical = list(range(len(NUMERIC), len(names)))
    return JobSeekers(X, duration, year, names, categorical)


def temporal_split(data: JobSeekers) -> tuple[JobSeekers, JobSeekers, JobSeekers]:
    """The paper's split: train on spells from 2010-2011, validate on 2012, test on 2015."""
    train = data.subset((data.year >= 2010) & (data.year <= 2011))
    val = data.subset(data.year == 2012)
    test = data.subset(data.year == 2015)
    return train, val, test


def fit_models(train: JobSeekers, val: JobSeekers, *, seed: int = 0, max_iter: int = 5000):
    """Fit the two models of the case study and return ``(boosting, tree)``.

    ``boosting``: scikit-learn HistGradientBoosting (native categorical handling), early stopping
    after 20 rounds without improvement on the 2012 validation year (the paper: CatBoost, 5,000
    iterations, 20-round early stopping). ``tree``: a depth-4 decision tree on one-hot features.
    """
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.tree import DecisionTreeRegressor

    mask = np.zeros(train.X.shape[1], bool)
    mask[train.categorical] = True
    boosting = HistGradientBoostingRegressor(
        max_iter=max_iter, learning_rate=0.05, early_stopping=True, n_iter_no_change=20,
        categorical_features=mask, random_state=seed)
    boosting.fit(train.X, train.duration, X_val=val.X, y_val=val.duration)
    tree = DecisionTreeRegressor(max_depth=4, random_state=seed)
    tree.fit(train.one_hot(), train.duration)
    return boosting, tree


BETAS = (0.05, 0.15, 0.25)


def analyse(n_per_year: int = 20_000, seed: int = 0, *, step: float = 0.1,
            alphas: np.ndarray | None = None) -> dict:
    """Run the paper's analysis on the synthetic population and return plain arrays.

    Worst-off = longest durations (``lower_is_worse=False``). For each beta in (0.05, 0.15, 0.25):
    recall vs alpha for both models, PAR (steps ``step``) in three R^2 regimes (0, the boosting
    model's test R^2, and ``1 - step``, built with :func:`predictions_at_r2`), Delta-alpha* of the
    tree against the boosting model, and the capacity for 75 % recall.
    """
    from icml25.worstoff.empirical import (
        capacity_needed,
        delta_alpha_star,
        empirical_par_at_r2,
        empirical_value,
        r2_score,
    )

    data = make_jobseekers(n_per_year, seed)
    train, val, test = temporal_split(data)
    boosting, tree = fit_models(train, val, seed=seed)
    y = test.duration
    p_boost = boosting.predict(test.X)
    p_tree = tree.predict(test.one_hot())
    r2_boost, r2_tree = r2_score(y, p_boost), r2_score(y, p_tree)
    if alphas is None:
        alphas = np.round(np.arange(0.01, 0.41, 0.01), 2)
    grid = np.linspace(0.0, 1.0, 201)
    regimes = {"R2 = 0": 0.0, f"R2 = {r2_boost:.2f} (model)": r2_boost,
               f"R2 = {1 - step:.2f}": 1.0 - step}
    out: dict = {
        "synthetic": True, "n_train": len(train), "n_val": len(val), "n_test": len(test),
        "r2_boosting": r2_boost, "r2_tree": r2_tree, "boosting_iterations": int(boosting.n_iter_),
        "share_capped": float(np.mean(y == CAP_DAYS)), "share_over_365": float(np.mean(y > 365)),
        "alpha_grid": grid, "alphas": alphas, "recall": {"boosting": {}, "tree": {}},
        "par": {name: {} for name in regimes}, "delta_alpha_star": {}, "capacity_75": {},
    }
    for beta in BETAS:
        out["recall"]["boosting"][beta] = empirical_value(y, p_boost, grid, beta,
                                                          lower_is_worse=False)
        out["recall"]["tree"][beta] = empirical_value(y, p_tree, grid, beta, lower_is_worse=False)
        for name, r2 in regimes.items():
            # the paper's regimes are built from the model's raw R^2 (its own procedure)
            out["par"][name][beta] = empirical_par_at_r2(
                y, p_boost, alphas, beta, min(r2, 1.0 - step), step, step,
                lower_is_worse=False, seed=seed, recalibrate=False)
        out["delta_alpha_star"][beta] = delta_alpha_star(y, p_boost, p_tree, alphas, beta,
                                                         lower_is_worse=False)
        out["capacity_75"][beta] = float(capacity_needed(y, p_boost, beta, 0.75,
                                                         lower_is_worse=False))
    out["recall_at"] = {
        a: float(empirical_value(y, p_boost, a, 0.15, lower_is_worse=False)) for a in (0.10, 0.25)
    }
    from icml25.worstoff.uncertainty import bootstrap_evaluation

    ev = bootstrap_evaluation(y, p_boost, [0.10, 0.25], 0.15, recall_targets=[0.75],
                              n_boot=400, seed=seed, lower_is_worse=False, warn=False)
    out["recall_at_ci"] = {0.10: ev.recall_ci[0].tolist(), 0.25: ev.recall_ci[1].tolist()}
    out["capacity_75_ci"] = {0.15: ev.capacity_ci[0].tolist()}
    out["r2_boosting_ci"] = ev.r2_ci.tolist()
    return out
