"""``icml25 royalties``: Shapley royalty shares and statements from text files."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Shapley royalty shares for training-data creators.",
                  no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  pretty_exceptions_enable=False)

Corpora = Annotated[Path, typer.Option(
    "--corpora", help="Folder with one <holder>.txt file or <holder>/ folder per rights holder.")]
Baseline = Annotated[Path | None, typer.Option(
    "--baseline", help="Public baseline text every coalition's model includes (recommended).")]
Order = Annotated[int, typer.Option(help="n-gram order.")]
Tokenizer = Annotated[str, typer.Option(help="'char' or 'word'.")]
Discount = Annotated[float, typer.Option(help="Kneser-Ney absolute discount in (0, 1).")]
Method = Annotated[str, typer.Option(help="'auto' (exact up to --exact-limit holders), "
                                          "'exact' or 'sampled'.")]
ExactLimit = Annotated[int, typer.Option(help="Most holders for exact values under 'auto'.")]
Seed = Annotated[int, typer.Option(min=0, help="Seed for permutation sampling.")]
Groups = Annotated[Path | None, typer.Option(
    "--groups", help="JSON ownership groups ({owner: [holders]} or [[holders]]): values are "
                     "computed between groups first (mitigates splitting into shells).")]
RelSe = Annotated[float, typer.Option(
    help="Sampling stops when every standard error is below this fraction of v(all).")]
MinEvidence = Annotated[float, typer.Option(
    min=0.0, help="Smallest Shapley value per token of the artifact (nats) that is paid; "
                  "holders below it are held back (0 pays every positive value).")]


@contextmanager
def _clear_errors():
    """Turn input errors into one line on stderr and exit code 2 (no traceback)."""
    from icml25.royalties.errors import RoyaltyInputError

    try:
        yield
    except RoyaltyInputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None


def _groups(path: Path | None):
    if path is None:
        return None
    from icml25.royalties.errors import RoyaltyInputError
    from icml25.royalties.io import read_text

    try:
        data = json.loads(read_text(path, "groups file"))
    except json.JSONDecodeError as exc:
        raise RoyaltyInputError(f"groups file {str(path)!r} is not valid JSON: {exc}") from None
    groups = list(data.values()) if isinstance(data, dict) else data
    if not isinstance(groups, list) or not all(
            isinstance(g, list) and all(isinstance(h, str) for h in g) for g in groups):
        raise RoyaltyInputError("groups must be {owner: [holder, ...]} or [[holder, ...], ...]")
    return groups


def _baseline(path: Path | None):
    from icml25.royalties.io import read_text

    return None if path is None else read_text(path, "baseline")


@app.command()
def shares(
    corpora: Corpora,
    artifact: Annotated[Path, typer.Option("--artifact", help="The generated artifact (text).")],
    baseline: Baseline = None,
    order: Order = 5, tokenizer: Tokenizer = "char", discount: Discount = 0.75,
    method: Method = "auto", exact_limit: ExactLimit = 15, seed: Seed = 0,
    groups: Groups = None, rel_se_tol: RelSe = 0.01, min_evidence: MinEvidence = 0.1,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Shapley values and royalty shares of every holder for one artifact."""
    from icml25.royalties.io import load_artifacts, load_corpora
    from icml25.royalties.ngram import KneserNeyCoalitionLM
    from icml25.royalties.shapley import royalty_shares, shapley_values
    from icml25.royalties.utility import NgramLogRatioUtility

    with _clear_errors():
        corp = load_corpora(corpora)
        from icml25.royalties.errors import RoyaltyInputError

        if artifact.is_dir():
            raise RoyaltyInputError(f"--artifact {str(artifact)!r} is a folder; name one file")
        (text,) = load_artifacts(artifact).values()
        lm = KneserNeyCoalitionLM(order=order, tokenizer=tokenizer, discount=discount)
        lm.fit(corp, _baseline(baseline))
        res = shapley_values(NgramLogRatioUtility(lm, text), method=method,
                             exact_limit=exact_limit, groups=_groups(groups), seed=seed,
                             rel_se_tol=rel_se_tol)
        share, allocated = royalty_shares(res.values)
        from icml25.royalties.ngram import tokenize
        from icml25.royalties.statements import evidence_mask

        n_tokens = len(tokenize(text, tokenizer))
        paid = evidence_mask(res.values, n_tokens, min_evidence)
    held_back = float(share[~paid].sum())
    if as_json:
        typer.echo(json.dumps({**res.to_dict(), "shares": share.tolist(),
                               "allocated": allocated, "n_tokens": n_tokens,
                               "min_evidence": min_evidence, "paid": paid.tolist(),
                               "held_back_share": held_back}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("holder", "Shapley value (nats)", "nats/token", "std. error", "share",
                  "paid")
    for name, v, se, s, p in zip(res.players, res.values, res.std_errors, share, paid,
                                 strict=True):
        table.add_row(name, f"{v:.4f}", f"{v / max(n_tokens, 1):.4f}", f"{se:.4f}",
                      f"{s:.2%}", "yes" if p else "held back")
    console = Console()
    console.print(table)
    extra = (f", {res.n_permutations} orderings, converged={res.converged}"
             if res.method != "exact" else "")
    console.print(f"method={res.method}, v(all)-v(none)={res.grand_value:.3f} nats, "
                  f"{res.n_evaluations} coalitions evaluated{extra}")
    if res.groups is not None:
        declared = [g for g in res.groups if len(g) > 1]
        console.print(f"Owen values over ownership groups: {declared}")
    if not allocated:
        console.print("[yellow]no holder contributed positively: nothing allocated[/]")
    elif held_back > 0:
        console.print(f"{held_back:.1%} of the artifact's amount is held back: those holders' "
                      f"values are below --min-evidence {min_evidence:g} nats per token "
                      f"({n_tokens} tokens)")


@app.command()
def statement(
    corpora: Corpora,
    artifacts: Annotated[Path, typer.Option(
        "--artifacts", help="Folder of the period's artifacts (one .txt file each).")],
    pool: Annotated[str, typer.Option("--pool", help="Royalty pool of the period, e.g. 1000.00")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("statements"),
    baseline: Baseline = None,
    period: Annotated[str, typer.Option(help="Period label, e.g. 2025-Q1.")] = "",
    currency: Annotated[str, typer.Option(help="Currency code, e.g. EUR.")] = "",
    weights: Annotated[Path | None, typer.Option(
        "--weights", help="JSON {artifact: weight} (e.g. revenue); default equal.")] = None,
    order: Order = 5, tokenizer: Tokenizer = "char", discount: Discount = 0.75,
    method: Method = "auto", exact_limit: ExactLimit = 15, seed: Seed = 0,
    groups: Groups = None, rel_se_tol: RelSe = 0.01, min_evidence: MinEvidence = 0.1,
) -> None:
    """Per-holder royalty statements (CSV + JSON) and an audit record for one period."""
    from icml25.royalties.io import load_artifacts, load_corpora, read_text, write_statement
    from icml25.royalties.statements import compute_statement, format_cents

    with _clear_errors():
        from icml25.royalties.errors import RoyaltyInputError
        from icml25.royalties.statements import parse_pool

        parse_pool(pool)  # fail fast, before any counting
        if not artifacts.is_dir():
            raise RoyaltyInputError(f"--artifacts {str(artifacts)!r} is not a folder")
        w = None
        if weights is not None:
            try:
                w = json.loads(read_text(weights, "weights file"))
            except json.JSONDecodeError as exc:
                raise RoyaltyInputError(f"weights file is not valid JSON: {exc}") from None
            if not isinstance(w, dict):
                raise RoyaltyInputError("weights must be a JSON object {artifact: weight}")
        st = compute_statement(
            load_corpora(corpora), load_artifacts(artifacts), pool, baseline=_baseline(baseline),
            period=period, currency=currency, weights=w, order=order, tokenizer=tokenizer,
            discount=discount, method=method, exact_limit=exact_limit, groups=_groups(groups),
            seed=seed, rel_se_tol=rel_se_tol, min_evidence=min_evidence, progress=None)
    paths = write_statement(st, out)
    from rich.console import Console
    from rich.table import Table

    table = Table("holder", f"total {currency}".strip())
    for h, c in zip(st.holders, st.holder_totals_cents, strict=True):
        table.add_row(h, format_cents(c))
    table.add_row("(unallocated)", format_cents(st.unallocated_cents))
    table.add_row("  of which held back (below --min-evidence)", format_cents(st.held_back_cents))
    console = Console()
    console.print(table)
    console.print(f"{len(st.artifacts)} artifacts, pool {format_cents(st.pool_cents)}; "
                  f"wrote {len(paths)} files to {out}")


@app.command()
def verify(
    statement_dir: Annotated[Path, typer.Option(
        "--statement", help="Folder written by 'icml25 royalties statement'.")],
    corpora: Corpora,
    artifacts: Annotated[Path, typer.Option("--artifacts", help="The period's artifacts.")],
    baseline: Baseline = None,
) -> None:
    """Recompute a statement from its audit record and check it reproduces bit for bit."""
    from icml25.royalties.io import load_artifacts, load_corpora, verify_statement

    with _clear_errors():
        differ = verify_statement(statement_dir, load_corpora(corpora),
                                  load_artifacts(artifacts), _baseline(baseline))
    if differ:
        typer.echo("NOT reproduced; files that differ: " + ", ".join(differ), err=True)
        raise typer.Exit(code=1)
    typer.echo(f"reproduced bit for bit: {statement_dir}")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the scenario into.")] =
    Path("royalties-demo"),
    holders: Annotated[int, typer.Option(min=1, max=64, help="Number of holders.")] = 8,
    seed: Seed = 0,
) -> None:
    """Write a generated scenario (corpora/, baseline.txt, artifacts/) to try the commands on."""
    from icml25.royalties.corpus import make_scenario
    from icml25.royalties.io import write_corpus_tree

    sc = make_scenario(seed, n_holders=holders)
    paths = write_corpus_tree(out, sc.corpora, sc.baseline, sc.artifacts)
    first = sorted(sc.artifacts)[0]
    typer.echo(f"wrote {len(sc.corpora)} holders, {len(sc.artifacts)} artifacts to {out}\n"
               f"try: icml25 royalties shares --corpora {paths['corpora']} "
               f"--baseline {paths['baseline']} --artifact {paths['artifacts'] / first}.txt")
