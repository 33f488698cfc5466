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
    run_binomial,
    run_heteroskedastic,
    run_multilabel,
)
from icml25.core import Outcome, RunContext, experiment, new_figure

PAPER = "Snell & Griffiths (ICML 2025), Conformal Prediction as Bayesian Quadrature"
COLORS = {"CRC": "#D55E00", "RCPS": "#009E73", "BQ": "#0072B2"}


# --------------------------------------------------------------------------- tolerances
def rate_agreement(k_ours: float, t_ours: int, p_pub: float, t_pub: int = 10_000,
                   sd_extra: float = 0.0) -> tuple[bool, str]:
    """Two-proportion check with a pooled rate (plus an extra SD, e.g. Monte Carlo seed
    spread); returns (agrees, note)."""
    k_pub = p_pub * t_pub
    pooled = (k_ours + k_pub) / (t_ours + t_pub)
    se = math.sqrt(pooled * (1 - pooled) * (1 / t_ours + 1 / t_pub) + sd_extra**2)
    diff = k_ours / t_ours - p_pub
    ok = abs(diff) <= 3 * se + 1e-12
    return ok, (f"diff {100 * diff:+.2f} pts, tolerance 3 SE = {300 * se:.2f} pts: "
                f"{'agrees' if ok else 'DIFFERS'}")


def mean_agreement(ours: float, se_trials: float, sd_pool: float, published: float,
                   unit: str = "") -> tuple[bool, str]:
    tol = 3 * math.sqrt(2 * se_trials**2 + sd_pool**2)
    ok = abs(ours - published) <= tol
    return ok, (f"diff {ours - published:+.4f}{unit}, tolerance {tol:.4f}{unit} "
                f"(3 x sqrt(2 SE_trials^2 + SD_pool^2), SD_pool={sd_pool:.4f}): "
                f"{'agrees' if ok else 'DIFFERS'}")


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
           "mc_seeds": 2},
    full={"trials": 10_000, "n": 10, "alpha": 0.4, "beta": 0.95, "n_draws": 10_000,
          "mc_seeds": 5},
)
def binomial(ctx: RunContext) -> Outcome:
    s = ctx.settings
    rng = ctx.rng
    pool = binomial_pool(10_000 + s["n"], 4, rng)
    methods = (MethodSpec("CRC", "crc"), MethodSpec("RCPS", "rcps"),
               MethodSpec("RCPS-HB", "rcps", concentration="hb"),
               MethodSpec("BQ", "bq", n_draws=s["n_draws"]))
    out = run_binomial(pool, s["n"], s["trials"], s["alpha"], s["beta"], methods, rng=rng,
                       random_state=ctx.seed)
    # Monte Carlo seed study with the authors' 1,000 draws, both Dirichlet indexings.
    seeds = {"paper": [], "official": []}
    for j in range(s["mc_seeds"]):
        mc = (MethodSpec("paper", "bq", n_draws=1_000),
              MethodSpec("official", "bq", n_draws=1_000, variant="official"))
        res = run_binomial(pool, s["n"], s["trials"], s["alpha"], s["beta"], mc,
                           random_state=1_000 + j, cal_idx=out["_cal_idx"])
        for key in seeds:
            seeds[key].append((res[key]["summary"].failures, res[key]["summary"].mean_risk))
    t = s["trials"]
    scale = f"{t:,} trials"
    sm = {k: out[k]["summary"] for k in ("CRC", "RCPS", "RCPS-HB", "BQ")}
    comps = []
    for label, key in (("CRC failure rate (%)", "CRC"), ("RCPS failure rate (%)", "RCPS"),
                       ("BQ failure rate (%)", "BQ")):
        pub = ctx.experiment.published[label]
        _, note = rate_agreement(sm[key].failures, t, pub / 100)
        if key == "BQ":
            note = (f"paper's Dirichlet indexing, {s['n_draws']:,} draws; {note}. The published "
                    "run used the authors' code, whose indexing is more conservative: see the "
                    "next row")
        comps.append(ctx.compare(label, _pct(sm[key].failure_rate), scale=scale,
                                 note=f"{_ci_text(sm[key])}; {note}"))
    off = np.array(seeds["official"], dtype=float)
    pap = np.array(seeds["paper"], dtype=float)
    off_rates = off[:, 0] / t
    seed_sd = float(np.std(off_rates, ddof=1)) if len(off_rates) > 1 else 0.0
    _, note = rate_agreement(float(np.median(off[:, 0])), t, 0.0003, sd_extra=seed_sd)
    comps.append(ctx.compare(
        "BQ failure rate, official indexing (%)", _pct(float(np.median(off_rates))), scale=scale,
        note=(f"authors' indexing, 1,000 shared draws, median over {len(off_rates)} Monte Carlo "
              f"seeds (same calibration sets); range {100 * off_rates.min():.2f}-"
              f"{100 * off_rates.max():.2f}%; {note} (SE includes the seed SD). Paper indexing "
              f"with 1,000 draws: {100 * pap[:, 0].min() / t:.2f}-"
              f"{100 * pap[:, 0].max() / t:.2f}%")))
    # Pool-to-pool SD of a mean realised risk: the pool's empirical survival function at lambda
    # has SD sqrt(r(1-r)/(K N_val)); averaging over trials can only shrink it (upper bound).
    n_vals = 4 * 10_000
    sd_pool = {k: float(np.mean(np.sqrt(out[k]["risk"] * (1 - out[k]["risk"]) / n_vals)))
               for k in ("CRC", "BQ")}
    risk_sd = {k: float(np.std(out[k]["risk"], ddof=1) / math.sqrt(t)) for k in ("CRC", "BQ")}
    _, note = mean_agreement(sm["CRC"].mean_risk, risk_sd["CRC"], sd_pool["CRC"], 0.3363)
    comps.append(ctx.compare("CRC mean realised risk", round(sm["CRC"].mean_risk, 4), scale=scale,
                             note=f"the text's 'mean' read as mean realised risk (= 1 - lambda); "
                                  f"{note}"))
    mc_sd = float(np.std(pap[:, 1], ddof=1)) if len(pap) > 1 else 0.0
    _, note = mean_agreement(sm["BQ"].mean_risk, risk_sd["BQ"],
                             math.hypot(sd_pool["BQ"], mc_sd), 0.1758)
    comps.append(ctx.compare(
        "BQ mean realised risk", round(sm["BQ"].mean_risk, 4), scale=scale,
        note=(f"{note} (SD_pool includes the 1,000-draw Monte Carlo seed SD {mc_sd:.4f}); "
              f"official indexing over seeds: {off[:, 1].min():.4f}-{off[:, 1].max():.4f}, "
              f"paper indexing: {pap[:, 1].min():.4f}-{pap[:, 1].max():.4f}")))
    for key in ("CRC", "RCPS", "BQ"):
        comps.append(ctx.compare(f"{key} mean lambda", round(sm[key].mean_lambda, 4), scale=scale,
                                 note="not tabulated in the paper (a trial fails iff "
                                      "lambda < 0.6)"))
    _binomial_figures(ctx, out, s)
    return Outcome(
        comparisons=comps,
        data={"summaries": {k: v.row() for k, v in sm.items()},
              "mc_seed_study": {"official_failures": off[:, 0].tolist(),
                                "official_mean_risk": off[:, 1].tolist(),
                                "paper_failures": pap[:, 0].tolist(),
                                "paper_mean_risk": pap[:, 1].tolist()},
              "pool_sd_mean_risk_bound": sd_pool,
              "rcps_hb_mean_lambda": sm["RCPS-HB"].mean_lambda},
        notes=[f"Pool: {10_000 + s['n']:,} rows x 4 uniforms generated with numpy (seed "
               f"{ctx.seed}); each trial: random {s['n']} calibration rows, realised risk on the "
               "other 10,000. lambda is searched exactly over each trial's jump points.",
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
    ax.legend(fontsize=8)
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
    ax.legend(fontsize=7)
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
    start = time.perf_counter()
    out = run_heteroskedastic(y, s["n"], s["trials"], s["alpha"], s["beta"], methods, rng=rng,
                              random_state=ctx.seed)
    wall = time.perf_counter() - start
    seeds = []
    for j in range(s["mc_seeds"]):
        mc = (MethodSpec("official", "bq", n_draws=1_000, variant="official"),
              MethodSpec("paper", "bq", n_draws=1_000, exact=False))
        res = run_heteroskedastic(y, s["n"], s["trials"], s["alpha"], s["beta"], mc,
                                  random_state=1_000 + j, cal_idx=out["_cal_idx"])
        seeds.append((res["official"]["summary"].failures, res["paper"]["summary"].failures))
    pool_len = {"CRC": [], "RCPS": [], "BQ": []}
    pool_ses = {"CRC": [], "RCPS": [], "BQ": []}
    for j in range(s["extra_pools"]):
        prng = np.random.default_rng([ctx.seed, 2, j])
        _, yy = heteroskedastic_pool(5_000 + s["n"], prng)
        res = run_heteroskedastic(yy, s["n"], 500, s["alpha"], s["beta"], methods[:3], rng=prng)
        for key in pool_len:
            pool_len[key].append(res[key]["summary"].mean_size)
            pool_ses[key].append(float(np.std(2 * res[key]["lambda"], ddof=1) / math.sqrt(500)))

    t = s["trials"]
    scale = f"{t:,} trials"
    sm = {k: out[k]["summary"] for k in ("CRC", "RCPS", "BQ", "BQ-MC")}
    comps = []
    for key in ("CRC", "RCPS", "BQ"):
        label = f"{key} failure rate (%)"
        _, note = rate_agreement(sm[key].failures, t, ctx.experiment.published[label] / 100)
        extra = ""
        if key == "BQ":
            extra = (f" Exact Beta(k+1, n-k) path. Monte Carlo with {s['n_draws']:,} common draws "
                     f"(exact=False): {_pct(sm['BQ-MC'].failure_rate)}%.")
        comps.append(ctx.compare(label, _pct(sm[key].failure_rate), scale=scale,
                                 note=f"{_ci_text(sm[key])}; {note}.{extra}"))
    for key in ("CRC", "RCPS", "BQ"):
        label = f"{key} mean interval length"
        se = float(np.std(2 * out[key]["lambda"], ddof=1) / math.sqrt(t))
        sd = pool_sd(pool_len[key], pool_ses[key])
        _, note = mean_agreement(sm[key].mean_size, se, sd, ctx.experiment.published[label])
        comps.append(ctx.compare(label, round(sm[key].mean_size, 3), scale=scale, note=note))
    off = np.array(seeds, dtype=float) / t
    from scipy import special

    k_star = int(max(k for k in range(s["n"]) if special.betainc(
        k + 1, s["n"] - k, s["alpha"]) >= s["beta"]))
    p_next = float(special.betainc(k_star + 2, s["n"] - k_star - 1, s["alpha"]))
    _hetero_figures(ctx, out, y, s)
    return Outcome(
        comparisons=comps,
        data={"summaries": {k: v.row() for k, v in sm.items()},
              "wall_time_4_rules_s": round(wall, 3),
              "mc_seed_study_1000_draws": {"official_failure_rate": off[:, 0].tolist(),
                                           "paper_failure_rate": off[:, 1].tolist()},
              "pool_sd_length": {k: pool_sd(v, pool_ses[k]) for k, v in pool_len.items()}},
        notes=[f"All {t:,} trials x 4 rules (CRC, RCPS, BQ exact, BQ Monte Carlo with "
               f"{s['n_draws']:,} draws) took {wall:.2f} s, vectorised across trials.",
               "For 0/1 losses the paper's rule reduces to allowing the largest k misses with "
               f"I_alpha(k+1, n-k) >= beta: k* = {k_star}; the exact path has no Monte Carlo "
               f"noise. At k*+1 the exact probability is {p_next:.4f}, so a 1,000-draw estimate "
               f"(SE {math.sqrt(p_next * (1 - p_next) / 1000):.4f}) can cross beta and allow one "
               f"more miss. Over {len(off)} Monte Carlo seeds on the same calibration sets: "
               f"official indexing {100 * off[:, 0].min():.2f}-{100 * off[:, 0].max():.2f}%, "
               f"paper indexing {100 * off[:, 1].min():.2f}-{100 * off[:, 1].max():.2f}%.",
               "Interval lengths depend on the generated pool (ours: numpy, the authors': JAX "
               "key 0); the tolerance includes the pool-to-pool SD."],
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
    ax.legend(fontsize=7)
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
    ax.legend(fontsize=8)
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
    for key in ("CRC", "RCPS", "BQ"):
        label = f"{key} failure rate (%)"
        _, note = rate_agreement(sm[key].failures, t, ctx.experiment.published[label] / 100)
        comps.append(ctx.compare(label, _pct(sm[key].failure_rate), scale=scale,
                                 note=f"{_ci_text(sm[key])}; {note} (different data)"))
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
    ax.legend(fontsize=7)
    ctx.save_figure(fig, "multilabel_risk_vs_lambda")

    fig, ax = new_figure(size=(5.2, 3.4))
    for key in ("CRC", "RCPS", "BQ"):
        ax.hist(out[key]["risk"], bins=50, alpha=0.5, color=COLORS[key], label=key)
    ax.axvline(s["alpha"], color="black", linestyle="--")
    ax.set_xlabel("realised FNR on the test images")
    ax.set_ylabel("trials")
    ax.legend(fontsize=8)
    ctx.save_figure(fig, "multilabel_realised_risk")
