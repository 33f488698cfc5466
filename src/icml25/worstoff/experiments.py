"""Headline reproductions for ``icml25 reproduce worstoff``."""

from __future__ import annotations

import numpy as np

from icml25.core import Outcome, RunContext, experiment
from icml25.core.verdicts import Close, Overlap

PAPER = ("Fischer-Abaigar, Kern & Perdomo (ICML 2025), "
         "The Value of Prediction in Identifying the Worst-Off")
COMPUTED = "closed form computed in the project notes (not printed in the paper)"


@experiment(
    "worstoff-figure1", paper=PAPER,
    reproduces="Figure 1: R2 = 0.25, alpha = beta = 0.2, steps 0.2",
    published={"V base": 0.436, "V with access +0.2": 0.690, "V with R2 +0.2": 0.544},
    quick={"n": 200_000, "reps": 10}, full={"n": 1_000_000, "reps": 20},
)
def figure1(ctx: RunContext) -> Outcome:
    """Closed-form values of Figure 1 and a Monte Carlo check of each."""
    from icml25.worstoff.montecarlo import monte_carlo_value
    from icml25.worstoff.plots import figure1 as draw
    from icml25.worstoff.theory import par, value

    s = ctx.settings
    cases = {"V base": (0.2, 0.25), "V with access +0.2": (0.4, 0.25),
             "V with R2 +0.2": (0.2, 0.45)}
    rows, data = [], {}
    for label, (alpha, r2) in cases.items():
        v = value(alpha, 0.2, r2)
        mc, se = monte_carlo_value(alpha, 0.2, r2, n=s["n"], reps=s["reps"], rng=ctx.rng)
        mc, se = float(mc), float(se)
        # the paper prints three decimals: agreement is agreement after rounding
        rows.append(ctx.compare(label, round(v, 4), scale="closed form",
                                rule=Close(tol=0.0005, gap=0.005),
                                note=f"Monte Carlo {mc:.4f} +- {se:.4f} ({s['reps']} x "
                                     f"{s['n']:,} draws)"))
        data[label] = {"closed_form": v, "monte_carlo": mc, "mc_se": se}
    p = par(0.2, 0.2, 0.25, 0.2, 0.2)
    rows.append(ctx.compare("PAR (steps 0.2)", round(p, 3), published=round(
        (0.690 - 0.436) / (0.544 - 0.436), 3), scale="closed form",
        # the three V's are rounded to +-0.0005: the derived ratio is uncertain by about 0.03
        rule=Close(tol=0.03, gap=0.1),
        note="published value derived from the three printed V's"))
    ctx.save_figure(draw(), "figure1")
    return Outcome(comparisons=rows, data=data | {"par": p},
                   notes=["Access gains 0.254 recall, prediction 0.108: expanding capacity "
                          "is the better lever here unless it costs > 2.3x as much."])


@experiment(
    "worstoff-heatmaps", paper=PAPER,
    reproduces="Figures 2 and 7: PAR over (alpha, R2) for beta = 0.2 and 0.05, steps 0.01",
    published={"local PAR, alpha=beta=R2=0.2": 2.47, "local PAR, alpha=0.05, beta=R2=0.15": 6.34,
               "PAR (0.01 steps), alpha=0.3, beta=R2=0.2": 1.80},
    quick={"grid": 80}, full={"grid": 300},
)
def heatmaps(ctx: RunContext) -> Outcome:
    """The Gaussian PAR heatmaps, with a few table values from the notes as checks."""
    from icml25.worstoff.plots import par_heatmap
    from icml25.worstoff.theory import local_par, par

    rows, data = [], {}
    for beta in (0.2, 0.05):
        fig, grid = par_heatmap(beta, d=0.01, grid=ctx.settings["grid"])
        ctx.save_figure(fig, f"par_heatmap_beta{beta:g}".replace(".", "p"))
        share = float(np.mean(grid["par"] > 1.0))
        data[f"beta={beta:g}"] = {"share_par_above_1": share,
                                  "share_value_above_0.9": float(np.mean(grid["value"] > 0.9))}
        rows.append(ctx.compare(f"share of grid with PAR > 1, beta={beta:g}", round(share, 3),
                                scale=f"{ctx.settings['grid']}^2 grid, alpha, R2 in [0.01, 0.98]",
                                note="no published number; share of the plane favouring access "
                                     "(descriptive row, not judged)"))
    checks = {"local PAR, alpha=beta=R2=0.2": local_par(0.2, 0.2, 0.2),
              "local PAR, alpha=0.05, beta=R2=0.15": local_par(0.05, 0.15, 0.15),
              "PAR (0.01 steps), alpha=0.3, beta=R2=0.2": par(0.3, 0.2, 0.2)}
    for label, v in checks.items():
        rows.append(ctx.compare(label, round(v, 3), scale="closed form", note=COMPUTED,
                                rule=Close(tol=0.005, gap=0.05)))
    return Outcome(comparisons=rows, data=data, notes=[
        "PAR < 1 (prediction wins) only at tiny R2 with moderate alpha, or at high R2 with "
        "alpha >= beta: prediction is a first- and last-mile effort (Theorem 3.2)."])


@experiment(
    "worstoff-casestudy", paper=PAPER,
    reproduces="Figures 3-5 (long-term unemployment case study) on SYNTHETIC data",
    published={"test R2, boosting (paper: CatBoost)": 0.15,
               "recall, beta=0.15, alpha=0.10": 0.28, "recall, beta=0.15, alpha=0.25": 0.56,
               "extra capacity for 75% recall from alpha=beta=0.15": 0.25},
    quick={"n_per_year": 20_000}, full={"n_per_year": 90_000},
)
def casestudy(ctx: RunContext) -> Outcome:
    """The paper's empirical analysis on a synthetic job-seeker population."""
    from icml25.worstoff.casestudy import analyse
    from icml25.worstoff.plots import delta_alpha_curves, par_curves, recall_curves

    n = ctx.settings["n_per_year"]
    out = analyse(n, ctx.seed)
    grid, alphas = out["alpha_grid"], out["alphas"]
    tag = "SYNTHETIC job-seekers"
    curves = {f"boosting (R2={out['r2_boosting']:.3f})": out["recall"]["boosting"],
              f"depth-4 tree (R2={out['r2_tree']:.3f})": out["recall"]["tree"]}
    ctx.save_figure(recall_curves(grid, curves, theory_r2=out["r2_boosting"],
                                  title=f"{tag}: recall on the longest spells"), "recall_vs_alpha")
    ctx.save_figure(par_curves(alphas, out["par"],
                               title=f"{tag}: empirical PAR, steps 0.1"), "par_regimes")
    ctx.save_figure(delta_alpha_curves(alphas, out["delta_alpha_star"],
                                       title=f"{tag}: extra capacity the tree needs"),
                    "delta_alpha_star")
    scale = f"synthetic, {out['n_test']:,} test spells"

    def ci(pair, shift=0.0):
        return [round(pair[0] - shift, 3), round(pair[1] - shift, 3)]

    # synthetic data shaped like the paper's: our 95% bootstrap interval (test spells
    # resampled) against the published value; a miss by up to 0.1 is the gap between a
    # synthetic population and the real SIAB-R records, not a failure of the method
    r2_ci = ci(out["r2_boosting_ci"])
    rec_ci = {a: ci(out["recall_at_ci"][a]) for a in (0.10, 0.25)}
    cap_ci = ci(out["capacity_75_ci"][0.15], 0.15)
    rows = [
        ctx.compare("test R2, boosting (paper: CatBoost)", round(out["r2_boosting"], 3),
                    scale=scale, rule=Overlap(r2_ci, gap=0.05),
                    note=f"HistGradientBoosting, early stopping on 2012; 95% CI {r2_ci}"),
        ctx.compare("test R2, depth-4 tree", round(out["r2_tree"], 3), scale=scale,
                    note="paper: a few points below CatBoost (no number; not judged)"),
        ctx.compare("recall, beta=0.15, alpha=0.10", round(out["recall_at"][0.10], 3),
                    scale=scale, rule=Overlap(rec_ci[0.10], gap=0.1),
                    note=f"95% CI {rec_ci[0.10]}; paper's value is on real SIAB-R data"),
        ctx.compare("recall, beta=0.15, alpha=0.25", round(out["recall_at"][0.25], 3),
                    scale=scale, rule=Overlap(rec_ci[0.25], gap=0.1),
                    note=f"95% CI {rec_ci[0.25]}; paper's value is on real SIAB-R data"),
        ctx.compare("extra capacity for 75% recall from alpha=beta=0.15",
                    round(out["capacity_75"][0.15] - 0.15, 3), scale=scale,
                    rule=Overlap(cap_ci, gap=0.1), note=f"95% CI {cap_ci}"),
    ]
    return Outcome(comparisons=rows, data=out, notes=[
        "SYNTHETIC DATA: the SIAB-R records are restricted; this population is generated by "
        "icml25.worstoff.casestudy.make_jobseekers. Agreement with the paper's numbers shows the "
        "method behaves alike on data of this shape, not a finding about the German labour market.",
        "PAR regimes: R2 = 0 is random screening improved to R2 = 0.1 by calibrated noise "
        "injection; the model's R2 and 0.9 use residual scaling. nan = neither lever changes "
        "recall (already 1); inf = only access helps.",
    ])
