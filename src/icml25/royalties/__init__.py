"""Collective licensing with Shapley royalty shares for training-data creators.

Hazra, Majumder & Chakrabarty (ICML 2025 position paper) call for collective licensing with
royalties proportional to each creator's contribution, citing the Shapley Royalty Share of
Wang et al. 2024 (arXiv 2404.13964). This room implements it end to end on CPU:

- :class:`KneserNeyCoalitionLM` — an n-gram model whose counts add across holders, so the
  model of every coalition comes from summed counts;
- :class:`NgramLogRatioUtility` — v(S) = log p_S(x) − log p_∅(x); or plug in any utility
  (:class:`FunctionUtility`) behind a coalition cache (:class:`CachedUtility`);
- :func:`exact_shapley`, :func:`sampled_shapley` (antithetic, standard-error stopping rule),
  :func:`shapley_values` (chooses), :func:`royalty_shares` (clip and normalise);
- :func:`compute_statement` / :func:`write_statement` — per-holder statements with an audit
  record, reproducible bit for bit;
- :func:`split_check`, :func:`merge_check` — manipulation checks; ``groups=`` computes values
  over declared ownership groups (Owen value) as a mitigation.

>>> from icml25.royalties import KneserNeyCoalitionLM, NgramLogRatioUtility, exact_shapley
>>> lm = KneserNeyCoalitionLM(order=3).fit({"ann": "the cat sat", "bob": "a dog ran"},
...                                        baseline="the end")
>>> res = exact_shapley(NgramLogRatioUtility(lm, "the cat ran"))
>>> round(sum(res.values) - res.grand_value, 9)
0.0
"""

from icml25.royalties.corpus import HolderStyle, Scenario, default_holders, make_scenario
from icml25.royalties.errors import RoyaltyInputError
from icml25.royalties.io import (
    load_artifacts,
    load_corpora,
    read_text,
    verify_statement,
    write_corpus_tree,
    write_statement,
)
from icml25.royalties.manipulation import (
    ManipulationResult,
    merge_check,
    merge_holders,
    party_shares,
    split_check,
    split_holder,
)
from icml25.royalties.ngram import KneserNeyCoalitionLM, tokenize
from icml25.royalties.shapley import (
    ShapleyResult,
    coalition_matrix,
    exact_shapley,
    owen_from_table,
    royalty_shares,
    sampled_shapley,
    shapley_from_table,
    shapley_values,
)
from icml25.royalties.statements import (
    RoyaltyStatement,
    allocate,
    compute_statement,
    evidence_mask,
    parse_pool,
    statement_files,
)
from icml25.royalties.utility import (
    CachedUtility,
    CoalitionUtility,
    FunctionUtility,
    NgramLogRatioUtility,
)

__all__ = [
    "CachedUtility",
    "CoalitionUtility",
    "FunctionUtility",
    "HolderStyle",
    "KneserNeyCoalitionLM",
    "ManipulationResult",
    "NgramLogRatioUtility",
    "RoyaltyInputError",
    "RoyaltyStatement",
    "Scenario",
    "ShapleyResult",
    "allocate",
    "coalition_matrix",
    "compute_statement",
    "default_holders",
    "evidence_mask",
    "exact_shapley",
    "load_artifacts",
    "load_corpora",
    "make_scenario",
    "merge_check",
    "merge_holders",
    "owen_from_table",
    "parse_pool",
    "party_shares",
    "read_text",
    "royalty_shares",
    "sampled_shapley",
    "shapley_from_table",
    "shapley_values",
    "split_check",
    "split_holder",
    "statement_files",
    "tokenize",
    "verify_statement",
    "write_corpus_tree",
    "write_statement",
]
