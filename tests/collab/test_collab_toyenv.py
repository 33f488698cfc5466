"""Controlled collaboration environment: MR arithmetic and the window-size ablation."""

import numpy as np
import pytest

from icml25.collab.toyenv import (
    ANSWER,
    ASK,
    ToyConfig,
    collect_pairs,
    evaluate,
    mr_of_action,
    train_dpo_tabular,
)

CFG = ToyConfig()


def test_single_turn_mr_matches_closed_form():
    rng = np.random.default_rng(0)
    intent = np.array([0, 1, 2])
    known = np.array([True, False, False])  # u = 2 unknown
    theta0 = np.zeros((CFG.n_slots + 1, 2))
    ask = mr_of_action(CFG, intent, known, ASK, 0, theta0, 10, rng)
    assert ask == pytest.approx(-CFG.lam * (CFG.question_tokens + CFG.user_tokens))
    n = 20000
    ans = mr_of_action(CFG, intent, known, ANSWER, 0, theta0, n, rng)
    p = 1 / CFG.n_values
    quality = (1 + 2 * p) / 3
    p_all = p * p
    tokens = CFG.answer_tokens + CFG.user_tokens * (1 - p_all)
    expected = quality - CFG.lam * tokens
    se = np.sqrt(2 * p * (1 - p) / 9 / n) + 1e-9  # std of the quality mean
    assert abs(ans - expected) < 5 * se
    assert not known[1:].any()  # forward sampling must not touch the real state


def test_window_ablation_direction():
    res = {}
    for w in (0, 2):
        rng = np.random.default_rng(w)
        theta = train_dpo_tabular(CFG, collect_pairs(CFG, w, 200, 3, rng))
        res[w] = evaluate(CFG, theta, 1500, np.random.default_rng(7))
    # 1500 chats: the standard error of a rate is <= 0.013, so these gaps are > 8 se.
    assert res[2]["interactivity"] - res[0]["interactivity"] > 0.5
    assert res[2]["success"] - res[0]["success"] > 0.1
    assert res[2]["tokens"] < 0.8 * res[0]["tokens"]


def test_tabular_dpo_moves_toward_chosen():
    theta = train_dpo_tabular(CFG, [(2, ASK, ANSWER)] * 5 + [(1, ANSWER, ASK)] * 5)
    assert theta[2, ASK] > theta[2, ANSWER] and theta[1, ANSWER] > theta[1, ASK]
    assert np.all(train_dpo_tabular(CFG, []) == 0)
