"""Headline reproductions of Snell & Griffiths (ICML 2025), registered with ``icml25 reproduce``.

Tolerance used to call a number "in agreement" with the published one (stated in every note):
* failure rates: |ours - published| <= 3 * SE of the difference of two binomial proportions over
  the two runs' trials (pooled rate). For miscoverage losses the failure rate is a function of
  ranks only, so it does not depend on which random pool was drawn.
* means (interval length, realised risk): |ours - published| <= 3 * sqrt(2 SE_trials^2 + SD_pool^2)
  where SD_pool is the spread of the mean over independently generated pools (we cannot draw the
  authors' pool: it came from JAX's key 0), estimated by re-running on extra pools.
Monte Carlo rules with the authors' 1,000 shared Dirichlet draws move with the Monte Carlo seed;
we report that spread over several seeds and compare the published value with it.
"""

from __future__ import annotations

import math

import numpy as np

from icml25.conformal.data import (
    binomial_pool,
    heteroskedastic_pool,
    load_multilabel_scores,
    make_multilabel_scores,
)
from icml25.conformal.simulate import (
    MethodSpec,
    binomial_exact_failure,
    run_binomial,
    run_heteroskedastic,
    run_multilabel,
)
from icml25.core import Outcome, RunContext, experiment, new_figure
from icml25.core.figures import legend_outside
from icml25.core.verdicts import Close, Overlap

PAPER = "Snell & Griffiths (ICML 2025), Conformal Prediction as Bayesian Quadrature"
COLORS = {"CRC": "#D55E00", "RCPS": "#009E73", "BQ": "#0072B2"}


# --------------------------------------------------------------------------- tolerances
def rate_agreement(k_ours: float, t_ours: int, p_pub: float, t_pub: int = 10_000,
                   sd_extra: float = 0.0) -> tuple[bool, str]:
    """Two-proportion check with a pooled rate (plus an extra SD, e.g. Monte Carlo seed
    spread); returns (agrees, note)."""
    rule, note = rate_rule(k_ours, t_ours, p_pub, t_pub, sd_extra)
    return rule.judge(100 * k_ours / t_ours, 100 * p_pub) == "agrees", note


def rate_rule(k_ours: float, t_ours: int, p_pub: float, t_pub: int = 10_000,
              sd_extra: float = 0.0) -> tuple[Close, str]:
    """Verdict rule for a failure rate in %: agrees within 3 SE of the difference of two
    binomial proportions (pooled rate; ``sd_extra`` adds e.g. a pool-to-pool SD)."""
    k_pub = p_pub * t_pub
    pooled = (k_ours + k_pub) / (t_ours + t_pub)
    se = math.sqrt(pooled * (1 - pooled) * (1 / t_ours + 1 / t_pub) + sd_extra**2)
    diff = k_ours / t_ours - p_pub
    tol = 3 * se + 1e-12
    ok = abs(diff) <= tol
    return Close(tol=100 * tol), (f"diff {100 * diff:+.2f} pts, tolerance 3 SE = "
                                  f"{300 * se:.2f} pts: {'agrees' if ok else 'DIFFERS'}")


def mean_agreement(ours: float, se_trials: float, sd_pool: float, published: float,
                   unit: str = "") -> tuple[bool, str]:
    rule, note = mean_rule(ours, se_trials, sd_pool, published, unit)
    return rule.judge(ours, published) == "agrees", note


def mean_rule(ours: float, se_trials: float, sd_pool: float, published: float,
              unit: str = "") -> tuple[Close, str]:
    """Verdict rule for a mean: agrees within 3 x sqrt(2 SE_trials^2 + SD_pool^2)."""
    tol = 3 * math.sqrt(2 * se_trials**2 + sd_pool**2)
    ok = abs(ours - published) <= tol
    return Close(tol=tol), (f"diff {ours - published:+.4f}{unit}, tolerance {tol:.4f}{unit} "
                            f"(3 x sqrt(2 SE_trials^2 + SD_pool^2), SD_pool={sd_pool:.4f}): "
                            f"{'agrees' if ok else 'DIFFERS'}")


def _exact_text(ex: dict) -> str:
    if ex["exact"]:
        return f"exact over all calibration sets of this pool {100 * ex['failure_rate']:.3f}%"
    return (f"exact over all calibration sets of this pool in [{100 * ex['low']:.3f}%, "
            f"{100 * ex['high']:.3f}%]")


def pool_sd(means: list[float], ses: list[float]) -> float:
    """Between-pool SD of a mean, with the within-run (trial) sampling variance removed."""
    if len(means) < 2:
        return 0.0
    return math.sqrt(max(0.0, float(np.var(means, ddof=1)) - float(np.mean(np.square(ses)))))


def _pct(x: float) -> float:
    return round(100 * x, 2)


def _ci_text(s) -> str:
    return f"95% CP [{100 * s.ci_low:.2f}%, {100 * s.ci_high:.2f}%]"


# --------------------------------------------------------------------------- binomial
@experiment(
    "conformal-binomial", paper=PAPER, reproduces="Table 1 and Figs. 3-4, synthetic binomial loss",
    published={"CRC failure rate (%)": 21.20, "RCPS failure rate (%)": 0.00,
               "BQ failure rate (%)": 0.03, "BQ failure rate, official indexing (%)": 0.03,
               "CRC mean realised risk": 0.3363, "BQ mean realised risk": 0.1758},
    quick={"trials": 1_000, "n": 10, "alpha": 0.4, "beta": 0.95, "n_draws": 4_000,
           "mc_seeds": 2, "extra_pools": 4},
    full={"trials": 10_000, "n": 10, "alpha": 0.4, "beta": 0.95, "n_draws": 10_000,
          "mc_seeds": 5, "extra_pools": 20},
)
def binomial(ctx: RunContext) -> Outcome:
    s = ctx.settings
    rng = ctx.rng
    pool = binomial_pool(10_000 + s["n"], 4, rng)
    main = (MethodSpec("CRC", "crc"), MethodSpec("RCPS", "rcps"),
            MethodSpec("RCPS-HB", "rcps", concentration="hb"),
            MethodSpec("BQ", "bq", n_draws=s["n_draws"]))
    # Monte Carlo seed study with the authors' 1,000 draws, both Dirichlet indexings, on the
    # same calibration sets, in the same pass (one histogram table per seed and indexing).
    study = tuple(MethodSpec(f"{v}-{j}", "bq", n_draws=1_000, variant=v, random_state=1_000 + j)
                  for j in range(s["mc_seeds"]) for v in ("paper", "official"))
    out = run_binomial(pool, s["n"], s["trials"], s["alpha"], s["beta"], main + study, rng=rng,
                       random_state=ctx.seed)
    t = s["trials"]
    scale = f"{t:,} trials"
    sm = {k: out[k]["summary"] for k in ("CRC", "RCPS", "RCPS-HB", "BQ")}
    ex = {k: out[k]["exact"] for k in ("CRC", "RCPS", "BQ")}
    # Exact CRC failure rate on extra pools: the pool-to-pool SD of the failure rate.
    pool_rates = []
    crc_spec = main[0].spec(s["alpha"], s["beta"], ctx.seed, exact=False)
    for j in range(s["extra_pools"]):
        extra = binomial_pool(10_000 + s["n"], 4, np.random.default_rng([ctx.seed, 1, j]))
        pool_rates.append(binomial_exact_failure(extra, s["n"], s["alpha"], crc_spec)
                          ["failure_rate"])
    sd_pool_rate = float(np.std(pool_rates, ddof=1)) if len(pool_rates) > 1 else 0.0
    comps = []
    for label, key in (("CRC failure rate (%)", "CRC"), ("RCPS failure rate (%)", "RCPS"),
                       ("BQ failure rate (%)", "BQ")):
        pub = ctx.experiment.published[label] / 100
        extra_sd = sd_pool_rate if key == "CRC" else 0.0
        rule, note = rate_rule(sm[key].failures, t, pub, sd_extra=extra_sd)
        note = f"{_ci_text(sm[key])}; {_exact_text(ex[key])}; {note}"
        if key == "CRC":
            note += f" (SE includes the pool-to-pool SD {100 * sd_pool_rate:.2f} pts)"
        if key == "BQ":
            note += (f"; paper's Dirichlet indexing, {s['n_draws']:,} draws. The published run "
                     "used the authors' code, whose indexing is more conservative: next row")
        comps.append(ctx.compare(label, _pct(sm[key].failure_rate), scale=scale, note=note,
                                 rule=rule))
    off = np.array([[out[f"official-{j}"]["summary"].failures,
                     out[f"official-{j}"]["summary"].mean_risk,
                     out[f"official-{j}"]["summary"].ci_low,
                     out[f"official-{j}"]["summary"].ci_high]
                    for j in range(s["mc_seeds"])], dtype=float)
    pap = np.array([[out[f"paper-{j}"]["summary"].failures,
                     out[f"paper-{j}"]["summary"].mean_risk,
                     out[f"paper-{j}"]["exact"]["failure_rate"]]
                    for j in range(s["mc_seeds"])], dtype=float)
    off_rates = off[:, 0] / t
    # The official indexing adds B to the first calibration row's loss, so it has no histogram
    # table and no exact rate: the band is the union of the seeds' 95% Clopper-Pearson intervals.
    band = (100 * float(off[:, 2].min()), 100 * float(off[:, 3].max()))
    comps.append(ctx.compare(
        "BQ failure rate, official indexing (%)", _pct(float(np.median(off_rates))), scale=scale,
        rule=Overlap(ci=band),
        note=(f"authors' indexing, 1,000 shared draws, median over {len(off_rates)} Monte Carlo "
              f"seeds (same calibration sets); range {100 * off_rates.min():.2f}-"
              f"{100 * off_rates.max():.2f}%; rule: the published 0.03% inside the union of the "
              f"seeds' 95% CP intervals [{band[0]:.3f}, {band[1]:.3f}]%. Paper indexing, 1,000 "
              f"draws, exact over all calibration sets per seed: {100 * pap[:, 2].min():.3f}-"
              f"{100 * pap[:, 2].max():.3f}%")))
    # Pool-to-pool SD of a mean realised risk: the pool's empirical survival function at lambda
    # has SD sqrt(r(1-r)/(K N_val)); averaging over trials can only shrink it (upper bound).
    n_vals = 4 * 10_000
    sd_pool = {k: float(np.mean(np.sqrt(out[k]["risk"] * (1 - out[k]["risk"]) / n_vals)))
               for k in ("CRC", "BQ")}
    risk_sd = {k: float(np.std(out[k]["risk"], ddof=1) / math.sqrt(t)) for k in ("CRC", "BQ")}
    rule, note = mean_rule(sm["CRC"].mean_risk, risk_sd["CRC"], sd_pool["CRC"], 0.3363)
    comps.append(ctx.compare("CRC mean realised risk", round(sm["CRC"].mean_risk, 4), scale=scale,
                             rule=rule,
                             note=f"the text's 'mean' read as mean realised risk (= 1 - lambda); "
                                  f"{note}"))
    mc_sd = float(np.std(pap[:, 1], ddof=1)) if len(pap) > 1 else 0.0
    rule, note = mean_rule(sm["BQ"].mean_risk, risk_sd["BQ"], math.hypot(sd_pool["BQ"], mc_sd),
                           0.1758)
    comps.append(ctx.compare(
        "BQ mean realised risk", round(sm["BQ"].mean_risk, 4), scale=scale, rule=rule,
        note=(f"{note} (SD_pool includes the 1,000-draw Monte Carlo seed SD {mc_sd:.4f}); "
              f"official indexing over seeds: {off[:, 1].min():.4f}-{off[:, 1].max():.4f}, "
              f"paper indexing: {pap[:, 1].min():.4f}-{pap[:, 1].max():.4f}")))
    for key in ("CRC", "RCPS", "BQ"):
        comps.append(ctx.compare(f"{key} mean lambda", round(sm[key].mean_lambda, 4), scale=scale,
                                 note="not tabulated in the paper (a trial fails iff "
                                      "lambda < 0.6): no verdict"))
    _binomial_figures(ctx, out, s)
    return Outcome(
        comparisons=comps,
        data={"summaries": {k: v.row() for k, v in sm.items()},
              "exact_failure_rate": {k: v for k, v in ex.items()},
              "crc_exact_failure_rate_extra_pools": pool_rates,
              "mc_seed_study": {"official_failures": off[:, 0].tolist(),
                                "official_mean_risk": off[:, 1].tolist(),
                                "paper_failures": pap[:, 0].tolist(),
                                "paper_mean_risk": pap[:, 1].tolist(),
                                "paper_exact_failure_rate": pap[:, 2].tolist()},
              "pool_sd_mean_risk_bound": sd_pool,
              "rcps_hb_mean_lambda": sm["RCPS-HB"].mean_lambda},
        notes=[f"Pool: {10_000 + s['n']:,} rows x 4 uniforms generated with numpy (seed "
               f"{ctx.seed}); each trial: random {s['n']} calibration rows, realised risk on the "
               "other 10,000. lambda is exact over each trial's jump points: every rule decides "
               "the 1,001 possible loss histograms once and each trial walks its jump points "
               "through that table.",
               "Exact failure rates: over every calibration set of this pool (multivariate "
               "hypergeometric over the loss histograms), given each rule's Monte Carlo draws; "
               f"CRC {_exact_text(ex['CRC'])}, BQ {_exact_text(ex['BQ'])}.",
               "RCPS uses Hoeffding as in the paper; Hoeffding-Bentkus (our default) gives mean "
               f"lambda {sm['RCPS-HB'].mean_lambda:.3f} vs {sm['RCPS'].mean_lambda:.3f}.",
               "The published mean realised risk (0.1758) fits the paper's indexing, the published "
               "BQ failure rate (0.03%) fits the official code's indexing; see the seed study."],
    )


def _binomial_figures(ctx: RunContext, out: dict, s: dict) -> None:
    from icml25.conformal.posterior import RiskPosterior

    fig, ax = new_figure(size=(5.2, 3.4))
    bins = np.linspace(0.3, 1.0, 71)
    for key in ("CRC", "BQ"):
        ax.hist(out[key]["lambda"], bins=bins, alpha=0.55, label=key, color=COLORS[key])
    ax.axvspan(0.3, 1 - s["alpha"], color="grey", alpha=0.15, label="failure (risk > alpha)")
    ax.set_xlabel("chosen lambda")
    ax.set_ylabel("trials")
    ax.set_title("Binomial loss: chosen lambda (paper Fig. 3)")
    legend_outside(ax, "below", fontsize=8)
    ctx.save_figure(fig, "binomial_lambda_hist")

    cal = out["_calibration"][0]
    fig, ax = new_figure(size=(5.2, 3.4))
    for lam in (0.7, 0.8, 0.9):
        losses = (cal > lam).mean(axis=1)
        post = RiskPosterior(losses, 1.0, n_draws=100_000, random_state=ctx.seed)
        draws = post.sample(100_000, rng=ctx.seed)
        ax.hist(draws, bins=120, range=(0, 1), density=True, histtype="step",
                label=f"lambda={lam}: Pr(L+ <= alpha)={post.cdf(s['alpha']):.3f}")
    ax.axvline(s["alpha"], color="black", linestyle="--", label=f"alpha = {s['alpha']}")
    ax.set_xlabel("L+ (upper bound on the risk)")
    ax.set_ylabel("density")
    ax.set_title("Posterior of L+ for one calibration set (paper Fig. 4)")
    legend_outside(ax, "below", fontsize=7)
    ctx.save_figure(fig, "binomial_posterior_density")


# --------------------------------------------------------------------------- heteroskedastic
@experiment(
    "conformal-heteroskedastic", paper=PAPER,
    reproduces="Table 2, heteroskedastic regression (n=200, alpha=0.1)",
    published={"CRC failure rate (%)": 46.19, "RCPS failure rate (%)": 0.00,
               "BQ failure rate (%)": 3.42, "CRC mean interval length": 7.99,
               "RCPS mean interval length": 14.29, "BQ mean interval length": 9.50},
    quick={"trials": 1_000, "n": 200, "alpha": 0.1, "beta": 0.95, "n_draws": 4_000,
           "mc_seeds": 2, "extra_pools": 4},
    full={"trials": 10_000, "n": 200, "alpha": 0.1, "beta": 0.95, "n_draws": 4_000,
          "mc_seeds": 5, "extra_pools": 20},
)
def heteroskedastic(ctx: RunContext) -> Outcome:
    import time

    s = ctx.settings
    rng = ctx.rng
    _, y = heteroskedastic_pool(5_000 + s["n"], rng)
    methods = (MethodSpec("CRC", "crc"), MethodSpec("RCPS", "rcps"), MethodSpec("BQ", "bq"),
               MethodSpec("BQ-MC", "bq", n_draws=s["n_draws"], exact=False))
    study = tuple(MethodSpec(f"{v}-{j}", "bq", n_draws=1_000, variant=v, exact=False,
                             random_state=1_000 + j)
                  for j in range(s["mc_seeds"]) for v in ("official", "paper"))
    start = time.perf_counter()
    out = run_heteroskedastic(y, s["n"], s["trials"], s["alpha"], s["beta"], methods + study,
                              rng=rng, random_state=ctx.seed)
    wall = time.perf_counter() - start
    # Interval lengths depend on the pool: the exact mean length of each extra pool (no trial
    # noise) gives the pool-to-pool SD.
    pool_len = {"CRC": [], "RCPS": [], "BQ": []}
    for j in range(s["extra_pools"]):
        prng = np.random.default_rng([ctx.seed, 2, j])
        _, yy = heteroskedastic_pool(5_000 + s["n"], prng)
        res = run_heteroskedastic(yy, s["n"], 1, s["alpha"], s["beta"], methods[:3], rng=prng)
        for key in pool_len:
            pool_len[key].append(res[key]["exact"]["mean_length"])

    t = s["trials"]
    scale = f"{t:,} trials"
    sm = {k: out[k]["summary"] for k in ("CRC", "RCPS", "BQ", "BQ-MC")}
    ex = {k: out[k]["exact"] for k in ("CRC", "RCPS", "BQ")}
    comps = []
    for key in ("CRC", "RCPS", "BQ"):
        label = f"{key} failure rate (%)"
        rule, note = rate_rule(sm[key].failures, t, ctx.experiment.published[label] / 100)
        extra = ""
        if key == "BQ":
            extra = (f" Exact Beta(k+1, n-k) path. Monte Carlo with {s['n_draws']:,} common draws "
                     f"(exact=False): {_pct(sm['BQ-MC'].failure_rate)}%.")
        comps.append(ctx.compare(
            label, _pct(sm[key].failure_rate), scale=scale, rule=rule,
            note=(f"{_ci_text(sm[key])}; exact over all calibration sets (ranks only, the same "
                  f"for every continuous pool): {100 * ex[key]['failure_rate']:.2f}% (allows "
                  f"k* = {ex[key]['k_star']} misses); {note}.{extra}")))
    for key in ("CRC", "RCPS", "BQ"):
        label = f"{key} mean interval length"
        se = float(np.std(2 * out[key]["lambda"], ddof=1) / math.sqrt(t))
        sd = float(np.std(pool_len[key], ddof=1)) if len(pool_len[key]) > 1 else 0.0
        rule, note = mean_rule(sm[key].mean_size, se, sd, ctx.experiment.published[label])
        comps.append(ctx.compare(
            label, round(sm[key].mean_size, 3), scale=scale, rule=rule,
            note=f"exact mean over all calibration sets of this pool: "
                 f"{ex[key]['mean_length']:.3f}; {note}"))
    seeds = np.array([[out[f"{v}-{j}"]["summary"].failures for v in ("official", "paper")]
                      for j in range(s["mc_seeds"])], dtype=float)
    off = seeds / t
    seed_exact = np.array([[out[f"{v}-{j}"]["exact"]["failure_rate"]
                            for v in ("official", "paper")] for j in range(s["mc_seeds"])])
    from scipy import special

    k_star = ex["BQ"]["k_star"]
    p_next = float(special.betainc(k_star + 2, s["n"] - k_star - 1, s["alpha"]))
    _hetero_figures(ctx, out, y, s)
    return Outcome(
        comparisons=comps,
        data={"summaries": {k: v.row() for k, v in sm.items()},
              "exact": ex,
              "wall_time_all_rules_s": round(wall, 3),
              "mc_seed_study_1000_draws": {"official_failure_rate": off[:, 0].tolist(),
                                           "paper_failure_rate": off[:, 1].tolist(),
                                           "official_exact": seed_exact[:, 0].tolist(),
                                           "paper_exact": seed_exact[:, 1].tolist()},
              "exact_mean_length_extra_pools": pool_len},
        notes=[f"All {t:,} trials x {len(methods) + len(study)} rules (CRC, RCPS, BQ exact, BQ "
               f"Monte Carlo with {s['n_draws']:,} draws, and the 1,000-draw seed study) took "
               f"{wall:.2f} s: for 0/1 losses each rule allows a fixed number k* of misses, "
               "found once, and a trial's lambda is its (n - k*)-th smallest score.",
               "Exact failure rate over all calibration sets: the pool rank of that order "
               "statistic is hypergeometric-like, and a trial fails below a fixed rank, so the "
               f"rate is a hypergeometric tail: CRC {100 * ex['CRC']['failure_rate']:.2f}%, BQ "
               f"{100 * ex['BQ']['failure_rate']:.2f}%, RCPS "
               f"{100 * ex['RCPS']['failure_rate']:.2g}% (for any continuous pool of this size).",
               "For 0/1 losses the paper's rule reduces to allowing the largest k misses with "
               f"I_alpha(k+1, n-k) >= beta: k* = {k_star}; the exact path has no Monte Carlo "
               f"noise. At k*+1 the exact probability is {p_next:.4f}, so a 1,000-draw estimate "
               f"(SE {math.sqrt(p_next * (1 - p_next) / 1000):.4f}) can cross beta and allow one "
               f"more miss. Over {len(off)} Monte Carlo seeds on the same calibration sets: "
               f"official indexing {100 * off[:, 0].min():.2f}-{100 * off[:, 0].max():.2f}% "
               f"(exact {100 * seed_exact[:, 0].min():.2f}-{100 * seed_exact[:, 0].max():.2f}%), "
               f"paper indexing {100 * off[:, 1].min():.2f}-{100 * off[:, 1].max():.2f}% "
               f"(exact {100 * seed_exact[:, 1].min():.2f}-{100 * seed_exact[:, 1].max():.2f}%). "
               "The two indexings coincide here: the calibration scores are taken in sorted "
               "order, so the first loss is 0 and, for 0/1 losses, (l_1 + B, ..., 0) and "
               "(l_1, ..., B) are the same multiset (the authors' code takes the points in random "
               "order, where the first loss is 1 in k/n of the cases).",
               "Interval lengths depend on the generated pool (ours: numpy, the authors': JAX "
               "key 0); the tolerance includes the pool-to-pool SD of the exact mean length over "
               f"{s['extra_pools']} extra pools."],
    )


def _hetero_figures(ctx: RunContext, out: dict, y: np.ndarray, s: dict) -> None:
    from icml25.conformal.calibration import RuleSpec, calibrate

    cal = out["_calibration"][0]
    grid = np.linspace(0, float(cal.max()) * 1.05, 300)
    losses = (cal[:, None] > grid[None, :]).astype(float)
    true_risk = np.array([(np.abs(y) > g).mean() for g in grid])
    fig, ax = new_figure(size=(5.6, 3.6))
    ax.plot(grid, true_risk, color="black", lw=1, label="risk on the whole pool")
    curves = {"CRC": RuleSpec.make("crc", s["alpha"], s["beta"]),
              "RCPS": RuleSpec.make("rcps", s["alpha"], s["beta"], concentration="hoeffding"),
              "BQ": RuleSpec.make("bq", s["alpha"], s["beta"])}
    names = {"CRC": "CRC: posterior mean", "RCPS": "RCPS: Hoeffding UCB",
             "BQ": f"BQ: {s['beta']}-quantile of L+"}
    for key, spec in curves.items():
        ax.plot(grid, spec.statistic(losses.T), color=COLORS[key], label=names[key])
        lam = out[key]["lambda"][0]
        ax.axvline(lam, color=COLORS[key], linestyle=":", lw=1)
    ax.axhline(s["alpha"], color="grey", linestyle="--", label=f"alpha = {s['alpha']}")
    ax.set_ylim(0, 0.5)
    ax.set_xlabel("lambda (interval half-width)")
    ax.set_ylabel("risk bound")
    ax.set_title("Risk vs lambda for one calibration set (dotted: chosen lambda)")
    legend_outside(ax, "below", fontsize=7)
    ctx.save_figure(fig, "heteroskedastic_risk_vs_lambda")

    res = calibrate(losses, grid, s["alpha"], s["beta"], "bq")
    fig, ax = new_figure(size=(5.2, 3.4))
    res.posterior.plot(ax, alpha=s["alpha"], beta=s["beta"],
                       label=f"L+ at lambda = {res.lambda_:.2f}")
    ax.set_title("Posterior of L+ at the BQ threshold")
    ctx.save_figure(fig, "heteroskedastic_posterior")

    fig, ax = new_figure(size=(5.2, 3.4))
    for key in ("CRC", "RCPS", "BQ"):
        ax.hist(out[key]["risk"], bins=60, alpha=0.5, color=COLORS[key], label=key)
    ax.axvline(s["alpha"], color="black", linestyle="--")
    ax.set_xlabel("realised risk (miscoverage on the 5,000 held-out points)")
    ax.set_ylabel("trials")
    legend_outside(ax, "below", fontsize=8)
    ctx.save_figure(fig, "heteroskedastic_realised_risk")


# --------------------------------------------------------------------------- multilabel FNR
@experiment(
    "conformal-multilabel", paper=PAPER,
    reproduces="Table 3, multilabel false-negative rate (MS-COCO shape, generated data)",
    published={"CRC failure rate (%)": 45.05, "RCPS failure rate (%)": 0.00,
               "BQ failure rate (%)": 5.43, "CRC mean set size": 2.92,
               "RCPS mean set size": 3.57, "BQ mean set size": 3.04},
    quick={"trials": 300, "n": 1_000, "alpha": 0.1, "beta": 0.95, "n_draws": 2_000,
           "score_file": None},
    full={"trials": 10_000, "n": 1_000, "alpha": 0.1, "beta": 0.95, "n_draws": 4_000,
          "score_file": None},
)
def multilabel(ctx: RunContext) -> Outcome:
    s = ctx.settings
    rng = ctx.rng
    if s.get("score_file"):
        scores, labels = load_multilabel_scores(s["score_file"])
        source = f"scores read from {s['score_file']}"
    else:
        scores, labels = make_multilabel_scores(rng=rng)
        source = ("GENERATED data of the COCO file's shape (4,952 x 80, ~2.9 labels per image); "
                  "MS-COCO scores cannot be downloaded here, so set sizes are not comparable")
    methods = (MethodSpec("CRC", "crc"), MethodSpec("RCPS", "rcps"),
               MethodSpec("BQ", "bq", n_draws=s["n_draws"]))
    out = run_multilabel(scores, labels, s["n"], s["trials"], s["alpha"], s["beta"], methods,
                         rng=rng, random_state=ctx.seed)
    t = s["trials"]
    scale = f"{t:,} trials"
    sm = {k: out[k]["summary"] for k in ("CRC", "RCPS", "BQ")}
    comps = []
    real = bool(s.get("score_file"))
    for key in ("CRC", "RCPS", "BQ"):
        label = f"{key} failure rate (%)"
        rule, note = rate_rule(sm[key].failures, t, ctx.experiment.published[label] / 100)
        if not real:
            if key == "CRC":
                # On other data CRC's failure rate is not the paper's number: no verdict.
                rule, note = None, note + " (different data: no verdict)"
            else:
                # What carries over to other data is what the guarantee sets: about 1 - beta
                # (BQ) or about 0 (RCPS) of the calibration sets fail (the realised FNR on a
                # finite test set adds a little on top, here as in the paper).
                note += (" (different data: judged because this rate is set by the guarantee, "
                         "not by the data)")
        comps.append(ctx.compare(label, _pct(sm[key].failure_rate), scale=scale, rule=rule,
                                 note=f"{_ci_text(sm[key])}; {note}"))
    for key in ("CRC", "RCPS", "BQ"):
        comps.append(ctx.compare(f"{key} mean set size", round(sm[key].mean_size, 3),
                                 scale=scale, note="generated data: not comparable"))
    _multilabel_figures(ctx, out, scores, labels, s)
    return Outcome(comparisons=comps, data={"summaries": {k: v.row() for k, v in sm.items()}},
                   notes=[source, "Set = classes with score >= lambda; FNR rises with lambda, "
                          "so each rule takes the largest admissible lambda (exact over the "
                          "pool's true-label scores)."])


def _multilabel_figures(ctx: RunContext, out: dict, scores, labels, s: dict) -> None:
    from icml25.conformal.calibration import RuleSpec

    cal_idx = out["_calibration"][0]
    labels = np.asarray(labels).astype(bool)
    keep = labels.any(axis=1)
    sc, lb = scores[keep][cal_idx], labels[keep][cal_idx]
    grid = np.linspace(0, 1, 201)
    losses = np.stack([((sc < g) & lb).sum(1) / lb.sum(1) for g in grid], axis=1)
    fig, ax = new_figure(size=(5.6, 3.6))
    names = {"CRC": "CRC: posterior mean", "RCPS": "RCPS: Hoeffding UCB",
             "BQ": f"BQ: {s['beta']}-quantile of L+"}
    specs = {"CRC": RuleSpec.make("crc", s["alpha"], s["beta"]),
             "RCPS": RuleSpec.make("rcps", s["alpha"], s["beta"], concentration="hoeffding"),
             "BQ": RuleSpec.make("bq", s["alpha"], s["beta"], n_draws=s["n_draws"])}
    ax.plot(grid, losses.mean(0), color="black", lw=1, label="empirical FNR (calibration)")
    for key, spec in specs.items():
        ax.plot(grid, spec.statistic(losses.T), color=COLORS[key], label=names[key])
        ax.axvline(out[key]["lambda"][0], color=COLORS[key], linestyle=":", lw=1)
    ax.axhline(s["alpha"], color="grey", linestyle="--", label=f"alpha = {s['alpha']}")
    ax.set_ylim(0, 0.4)
    ax.set_xlabel("lambda (set = classes with score >= lambda)")
    ax.set_ylabel("false-negative rate bound")
    ax.set_title("Multilabel FNR: risk vs lambda, one calibration set")
    legend_outside(ax, "below", fontsize=7)
    ctx.save_figure(fig, "multilabel_risk_vs_lambda")

    fig, ax = new_figure(size=(5.2, 3.4))
    for key in ("CRC", "RCPS", "BQ"):
        ax.hist(out[key]["risk"], bins=50, alpha=0.5, color=COLORS[key], label=key)
    ax.axvline(s["alpha"], color="black", linestyle="--")
    ax.set_xlabel("realised FNR on the test images")
    ax.set_ylabel("trials")
    legend_outside(ax, "below", fontsize=8)
    ctx.save_figure(fig, "multilabel_realised_risk")
