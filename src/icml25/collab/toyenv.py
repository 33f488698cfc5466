"""A controlled collaboration environment where the paper's key ablation is measurable on CPU.

A task is a hidden intent of ``n_slots`` attributes, each one of ``n_values`` options. The user's
opening request states each attribute with probability ``p_stated`` (so some requests are
ambiguous). The assistant, at each turn, either ANSWERs (writes the artifact, guessing every
attribute it does not know) or ASKs about one unknown attribute. The programmatic user answers
questions truthfully, accepts a fully correct artifact (ends the chat), and otherwise names one
wrong attribute with probability ``p_feedback`` (else only says it is not right). Task success =
a fully correct artifact within ``max_turns`` assistant turns; the reward's task metric is the
share of attributes right in the latest artifact (partial credit, as BLEU gives for documents;
0 before any artifact).

The policy is tabular: a softmax over {ANSWER, ASK} given the number of unknown attributes. It is
trained by DPO (closed-form gradient: the softmax normalisers cancel within a pair) on pairs
ranked by MR = mean over S forward samples of ``quality − min(lambda · tokens, 1)`` over a
window of ``w`` rounds. The continuation is played by the initial (uniform) policy, standing in
for the paper's base assistant that continues the forward samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ANSWER, ASK = 0, 1


@dataclass(frozen=True)
class ToyConfig:
    """Sizes and token costs of the environment (tokens are nominal message lengths)."""

    n_slots: int = 3
    n_values: int = 4
    p_stated: float = 0.4
    answer_tokens: int = 60
    question_tokens: int = 15
    user_tokens: int = 12
    lam: float = 5e-4
    p_feedback: float = 0.5
    max_turns: int = 4


def sample_task(cfg: ToyConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(hidden intent, mask of attributes stated in the opening request)."""
    return (rng.integers(cfg.n_values, size=cfg.n_slots),
            rng.random(cfg.n_slots) < cfg.p_stated)


def _probs(theta: np.ndarray, u: int) -> np.ndarray:
    if u == 0:  # nothing to ask about
        return np.array([1.0, 0.0])
    z = theta[u] - theta[u].max()
    e = np.exp(z)
    return e / e.sum()


def _act(theta, u, rng, greedy=False) -> int:
    p = _probs(theta, u)
    return int(np.argmax(p)) if greedy else int(rng.random() < p[ASK])


def _step(cfg, intent, known, action, rng, quality=0.0):
    """Apply an assistant action; return (tokens incl. the user's reply, quality of the latest
    artifact = share of attributes right, like BLEU's partial credit; done)."""
    if action == ASK:
        j = int(np.flatnonzero(~known)[0])
        known[j] = True
        return cfg.question_tokens + cfg.user_tokens, quality, False
    guess = np.where(known, intent, rng.integers(cfg.n_values, size=cfg.n_slots))
    wrong = np.flatnonzero(guess != intent)
    q = 1.0 - wrong.size / cfg.n_slots
    if wrong.size == 0:
        return cfg.answer_tokens, q, True  # user accepts and terminates
    if rng.random() < cfg.p_feedback:  # "no, I wanted X for that one"; else just "not quite"
        known[int(wrong[0])] = True
    return cfg.answer_tokens + cfg.user_tokens, q, False


def mr_of_action(cfg, intent, known, action, window, theta_roll, n_samples, rng) -> float:
    """MR of ``action`` at this state: mean over samples of quality − min(λ·tokens, 1)."""
    total = 0.0
    for _ in range(n_samples):
        k = known.copy()
        tokens, quality, done = _step(cfg, intent, k, action, rng)
        for _ in range(window):
            if done:
                break
            t, quality, done = _step(cfg, intent, k, _act(theta_roll, int((~k).sum()), rng),
                                     rng, quality)
            tokens += t
        total += quality - min(cfg.lam * tokens, 1.0)
    return total / n_samples


def collect_pairs(cfg, window, n_tasks, n_samples, rng, min_gap=0.0):
    """DPO pairs (state u, chosen, rejected) along MR-best paths of ``n_tasks`` tasks."""
    theta0 = np.zeros((cfg.n_slots + 1, 2))
    pairs = []
    for _ in range(n_tasks):
        intent, known = sample_task(cfg, rng)
        for _ in range(cfg.max_turns):
            u = int((~known).sum())
            if u == 0:
                break
            mr = [mr_of_action(cfg, intent, known, a, window, theta0, n_samples, rng)
                  for a in (ANSWER, ASK)]
            best = int(np.argmax(mr))
            if abs(mr[1] - mr[0]) >= min_gap and mr[0] != mr[1]:
                pairs.append((u, best, 1 - best))
            _, _, done = _step(cfg, intent, known, best, rng)
            if done:
                break
    return pairs


def train_dpo_tabular(cfg, pairs, beta=1.0, lr=0.5, epochs=200) -> np.ndarray:
    """Tabular DPO from a uniform reference; gradient in closed form."""
    theta = np.zeros((cfg.n_slots + 1, 2))
    if not pairs:
        return theta
    arr = np.array(pairs)
    for _ in range(epochs):
        grad = np.zeros_like(theta)
        z = beta * (theta[arr[:, 0], arr[:, 1]] - theta[arr[:, 0], arr[:, 2]])
        g = beta / (1.0 + np.exp(z))  # −d loss / d margin
        np.add.at(grad, (arr[:, 0], arr[:, 1]), -g)
        np.add.at(grad, (arr[:, 0], arr[:, 2]), g)
        theta -= lr * grad / len(arr)
    return theta


def evaluate(cfg, theta, n_tasks, rng, greedy=True) -> dict[str, float]:
    """Task success, interactivity (share of ambiguous chats where it asked first) and tokens."""
    succ, asked, amb, toks = 0, 0, 0, 0.0
    for _ in range(n_tasks):
        intent, known = sample_task(cfg, rng)
        tokens, quality, done = 0, 0.0, False
        ambiguous = bool((~known).any())
        amb += ambiguous
        for turn in range(cfg.max_turns):
            a = _act(theta, int((~known).sum()), rng, greedy)
            if turn == 0 and ambiguous and a == ASK:
                asked += 1
            t, quality, done = _step(cfg, intent, known, a, rng, quality)
            tokens += t
            if done:
                break
        succ += done  # the user accepted a fully correct artifact
        toks += tokens
    return {"success": succ / n_tasks, "interactivity": asked / max(amb, 1),
            "tokens": toks / n_tasks}
