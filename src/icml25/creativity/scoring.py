"""The exact scorer: coherence, canonical uniqueness, originality and algorithmic creativity.

For N answers T (one per test prompt), with coh = the task's validity rule and canon = its
canonical form (sibling: the triple; triangle: the sorted vertex set; circle/line: the edge list
with nodes renamed by first appearance, i.e. the paper's resolving permutation):

- coherence    = #{coherent} / N
- uniqueness   = #{distinct canon among coherent} / N        (the official code's "diversity")
- memorization = #{coherent whose canon is a training answer's canon} / N
- creativity   = #{distinct canon among coherent and not memorised} / N     (paper Eq. 1)

Unlike the official ``eval_qa.py`` (distinct raw strings), reorderings and, for constructions,
node renamings count once.

``canonical_order=True`` (circle/line only; the other forms are already order-free) compares
the *set* of directed edges with the node names the answer uses: a construction listed in
another edge order counts once, but node renamings now count apart. Merging both is not
offered: every coherent line (circle) is the same directed path (cycle) up to renaming, so
all coherent answers would be one.

Lines that cannot be read at all (empty, tokens outside the task's vocabulary) get an error
and are left out of N.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from icml25.creativity.tasks import END, MARKERS, AnswerError, Example, Task


@dataclasses.dataclass(frozen=True)
class Judgement:
    """One scored answer, as :meth:`Scorer.judge` returns it.

    Parameters
    ----------
    answer : str
        The answer line as given.
    coherent : bool, default=False
        Whether it obeys the task's rule.
    memorized : bool, default=False
        Whether its canonical form is in the training set.
    canonical : object, default=None
        Its canonical form (equal for answers that differ only in order or names).
    error : str or None, default=None
        Set for unreadable lines (then the rest is meaningless).

    Examples
    --------
    >>> from icml25.creativity import Scorer, generate, make_task
    >>> data = generate("line", seed=0, seed_len=4, n_entities=4, length=3, n_train=3)
    >>> scorer = Scorer(make_task("line", 0, n_entities=4, length=3), data.train)
    >>> j = scorer.judge(data.train[0].line())
    >>> j.coherent, j.memorized, j.error
    (True, True, None)
    >>> scorer.judge("oops").error
    "unknown token(s) 'oops'"
    """

    answer: str
    coherent: bool = False
    memorized: bool = False
    canonical: object = None
    error: str | None = None


@dataclasses.dataclass
class ScoreReport:
    """What :meth:`Scorer.score` finds in a batch of answers (the paper's four measures).

    Attributes
    ----------
    creativity : float
        Share of answers that are coherent, unique (up to reordering and renaming) and not
        memorised: the paper's algorithmic creativity.
    coherence : float
        Share of answers that obey the task's rule.
    uniqueness : float
        Share of coherent answers that are distinct.
    memorization : float
        Share of coherent answers found in the training set.
    n : int
        Answers scored.
    n_errors : int
        Answers that could not be parsed.
    judgements : list of Judgement
        One per answer.

    Parameters
    ----------
    creativity, coherence, uniqueness, memorization : float
        The four shares above.
    n : int
        Answers scored.
    n_errors : int
        Unparsable answers.
    judgements : list of Judgement
        One per answer.

    Examples
    --------
    >>> from icml25.creativity import Scorer, generate, make_task
    >>> data = generate("line", seed=0, seed_len=4, n_entities=4, length=3, n_train=3)
    >>> scorer = Scorer(make_task("line", 0, n_entities=4, length=3), data.train)
    >>> report = scorer.score([data.train[0].line(), "oops"])
    >>> report.memorization, report.creativity, report.n, report.n_errors
    (1.0, 0.0, 1, 1)
    """

    creativity: float
    coherence: float
    uniqueness: float
    memorization: float
    n: int
    n_errors: int
    judgements: list[Judgement]

    def summary(self) -> dict:
        """The headline numbers as a JSON-able dict."""
        return {"creativity": self.creativity, "coherence": self.coherence,
                "uniqueness": self.uniqueness, "memorization": self.memorization,
                "n": self.n, "n_errors": self.n_errors}


def answer_tokens(text: str, vocab: set[str]) -> list[str]:
    """The answer tokens of one line, without ``</a>`` and what follows it.

    Parameters
    ----------
    text : str
        A bare answer or a whole line (anything up to the last task marker is dropped).
    vocab : set of str
        The task's tokens (``set(task.vocab())``).

    Returns
    -------
    list of str
        The answer tokens.

    Raises
    ------
    AnswerError
        For an empty answer or tokens outside ``vocab``.

    Examples
    --------
    >>> from icml25.creativity import answer_tokens, make_task
    >>> vocab = set(make_task("line", 0).vocab())
    >>> answer_tokens("ab12 <q> <a_0> <a_1> </a> <pad>", vocab)
    ['<a_0>', '<a_1>']
    """
    words = text.split()
    marks = [i for i, w in enumerate(words) if w in MARKERS]
    if marks:
        words = words[marks[-1] + 1:]
    if END in words:
        words = words[:words.index(END)]
    if not words:
        raise AnswerError("empty answer")
    bad = [w for w in words if w not in vocab]
    if bad:
        raise AnswerError(f"unknown token(s) {', '.join(repr(b) for b in bad[:3])}")
    return words


class Scorer:
    """Scores answers of ``task`` against its training examples (the paper's creativity,
    coherence, uniqueness and memorisation).

    Parameters
    ----------
    task : Task
        The task instance whose rule decides coherence.
    train : iterable of Example
        The training lines (their answers count as memorised).
    canonical_order : bool, default=False
        For circle/line, compare answers as sets of named directed edges instead of the
        renamed edge list.

    Attributes
    ----------
    seen : set
        Canonical forms of the training answers.

    Examples
    --------
    >>> from icml25.creativity.tasks import generate, make_task
    >>> data = generate("line", seed=0, n_train=100, n_test=10)
    >>> Scorer(make_task("line", 0), data.train).score([data.train[0].line()]).memorization
    1.0
    """

    def __init__(self, task: Task, train: Iterable[Example], *,
                 canonical_order: bool = False) -> None:
        self.task = task
        self.canonical_order = canonical_order
        self.vocab = set(task.vocab())
        self.seen = set()
        for ex in train:
            if ex.marker != task.marker:  # triangle's edge lines are knowledge, not answers
                continue
            canon = task.canonical([t for t in ex.answer if t != END], edge_set=canonical_order)
            if canon is not None:
                self.seen.add(canon)

    def judge(self, text: str) -> Judgement:
        try:
            toks = answer_tokens(text, self.vocab)
        except AnswerError as exc:
            return Judgement(text, error=str(exc))
        canon = self.task.canonical(toks, edge_set=self.canonical_order)
        if canon is None:
            return Judgement(text)
        return Judgement(text, coherent=True, memorized=canon in self.seen, canonical=canon)

    def score(self, answers: Sequence[str], *, skip_errors: bool = True) -> ScoreReport:
        """Score all answers; unreadable ones are left out of N (``skip_errors``, for user
        files) or counted as incoherent (for a model's own generations)."""
        judged = [self.judge(a) for a in answers]
        ok = [j for j in judged if j.error is None or not skip_errors]
        n = len(ok)
        coherent = [j for j in ok if j.coherent]
        novel = {j.canonical for j in coherent if not j.memorized}
        denom = max(n, 1)
        return ScoreReport(
            creativity=len(novel) / denom,
            coherence=len(coherent) / denom,
            uniqueness=len({j.canonical for j in coherent}) / denom,
            memorization=sum(j.memorized for j in coherent) / denom,
            n=n, n_errors=sum(j.error is not None for j in judged), judgements=judged)
