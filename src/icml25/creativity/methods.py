"""The training methods, one registry (``METHODS``): how a method lays out its training rows,
draws a batch, computes its loss and writes answers. Needs torch; no I/O.

- ``ntp``          causal LM, loss on answer tokens only (prompt and padding ignored)
- ``teacherless``  the repo's hybrid: every example keeps its NTP row and adds rows whose
                   answer inputs are all replaced by ``<dummy>`` while the labels stay the true
                   answer (sibling: +2 single-target rows; triangle: +1 row w.p. 0.5 per
                   triangle line; circle/line: +3 rows). Decoding is plain autoregression.
- ``diffusion``    absorbing-state (masked) diffusion: bidirectional transformer,
                   ``icml25.mdm`` masked-diffusion loss on the answer span, sampled with the
                   prompt clamped (``icml25.mdm.sample``).
- ``diffusion-uniform``  uniform-noise diffusion (SEDD's uniform graph, :mod:`.uniform`):
                   score entropy on the answer span, analytic sampler, the noise level told to
                   the network by a time token in front of the prompt.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from icml25.creativity.tasks import (
    DUMMY,
    EDGE,
    END,
    MARKERS,
    MASK,
    PAD,
    SEED_ALPHABET,
    SEP,
    Example,
    Task,
)
from icml25.creativity.uniform import UniformDiffusion
from icml25.mdm.objective import mask_tokens, mdm_loss
from icml25.mdm.sampler import sample as mdm_sample

IGNORE = -100
TIME_BINS = 64  # uniform diffusion: time tokens <t0>..<t63>, one per 1/64 of [0, 1]


class Vocab:
    """Word-level token ids for one task: a seed word is one token per character.

    Parameters
    ----------
    tokens : sequence of str
        The vocabulary in id order; must contain ``<pad>``, ``<mask>``, ``<dummy>`` and
        ``</a>``.

    Attributes
    ----------
    tokens : list of str
        The tokens in id order.
    index : dict of str to int
        Token -> id.
    pad, mask, dummy, end : int
        The ids of ``<pad>``, ``<mask>``, ``<dummy>`` and ``</a>``.

    Raises
    ------
    KeyError
        When a special token is missing.

    Examples
    --------
    >>> from icml25.creativity import Vocab, make_task
    >>> vocab = Vocab(make_task("line", 0).vocab())
    >>> len(vocab), vocab.prompt("ab", "<q>")
    (54, [8, 9, 4])
    >>> vocab.decode_answer(vocab.encode(["<a_0>", "</a>", "<a_1>"]))
    '<a_0> </a>'
    """

    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.pad, self.mask, self.dummy = (self.index[t] for t in (PAD, MASK, DUMMY))
        self.end = self.index[END]

    def __len__(self) -> int:
        return len(self.tokens)

    def prompt(self, seed: str, marker: str) -> list[int]:
        return [self.index[c] for c in seed] + [self.index[marker]]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        try:
            return [self.index[t] for t in tokens]
        except KeyError as exc:
            raise ValueError(f"token {exc.args[0]!r} is not in the task's vocabulary") from None

    def decode_answer(self, ids: Sequence[int]) -> str:
        """Tokens up to and including the first ``</a>`` (the repo cuts generations there)."""
        out = []
        for i in ids:
            out.append(self.tokens[int(i)])
            if int(i) == self.end:
                break
        return " ".join(out)


def _banned(vocab: Vocab) -> list[int]:
    """Tokens a model may never emit inside an answer: padding, mask, dummy, markers, seeds,
    time tokens."""
    return [vocab.pad, vocab.mask, vocab.dummy, *(vocab.index[m] for m in MARKERS),
            *(vocab.index[c] for c in SEED_ALPHABET),
            *(i for t, i in vocab.index.items() if t.startswith("<t") and t[2:-1].isdigit())]


def _teacherless_targets(task: str, ex: Example,
                         rng: np.random.Generator) -> list[list[int] | None]:
    """Answer positions supervised by each extra dummy-input row (None = all positions)."""
    if task == "sibling":
        return [[1], [2]]  # prompt + 1 dummy -> second sibling; prompt + 2 dummies -> parent
    if task == "triangle":
        return [None] if ex.marker != EDGE and rng.random() < 0.5 else []
    return [None, None, None]  # circle / line: 1 NTP row : 3 teacherless rows


def _causal_rows(task: str, seqs, vocab: Vocab, teacherless: bool,
                 rng: np.random.Generator) -> dict[str, torch.Tensor]:
    length = max(len(p) + len(a) for p, a, _ in seqs)
    inputs, targets = [], []
    for p, a, ex in seqs:
        full = p + a + [vocab.pad] * (length - len(p) - len(a))
        tgt = [IGNORE] * (len(p) - 1) + a + [IGNORE] * (length - len(p) - len(a))
        inputs.append(full[:-1])
        targets.append(tgt)
        if teacherless:
            for positions in _teacherless_targets(task, ex, rng):
                x = list(full[:-1])
                x[len(p):len(p) + len(a) - 1] = [vocab.dummy] * (len(a) - 1)
                if positions is None:
                    y = tgt
                else:
                    y = [IGNORE] * len(tgt)
                    for k in positions:
                        y[len(p) - 1 + k] = a[k]
                inputs.append(x)
                targets.append(y)
    return {"inputs": torch.tensor(inputs), "targets": torch.tensor(targets)}


def _span_rows(seqs, vocab: Vocab, prefix: int) -> dict[str, torch.Tensor]:
    """Diffusion rows: ``prefix`` reserved slots, prompt, answer, padding; ``maskable`` marks
    the answer span and the trailing padding (what the model fills)."""
    length = prefix + max(len(p) + len(a) for p, a, _ in seqs)
    tokens = torch.full((len(seqs), length), vocab.pad, dtype=torch.long)
    maskable = torch.zeros((len(seqs), length), dtype=torch.bool)
    for r, (p, a, _) in enumerate(seqs):
        tokens[r, prefix:prefix + len(p) + len(a)] = torch.tensor(p + a)
        maskable[r, prefix + len(p):] = True
    return {"tokens": tokens, "maskable": maskable}


class Method(ABC):
    """One training method. ``causal``: decoded left to right; ``prefix``: slots in front of
    the prompt (uniform diffusion's time token)."""

    name = ""
    causal = False
    prefix = 0
    default_temperature = 1.0  # what ``evaluate`` uses unless told
    has_order = False  # does the sampler choose which position to fill next (a planner)?

    def vocab(self, task: Task) -> Vocab:
        return Vocab(task.vocab())

    @abstractmethod
    def rows(self, task: str, seqs, vocab: Vocab, rng: np.random.Generator) -> dict:
        ...

    @abstractmethod
    def batch(self, rows: dict, idx: torch.Tensor, gen: torch.Generator, vocab: Vocab):
        ...

    @abstractmethod
    def loss(self, net, batch, vocab: Vocab) -> torch.Tensor:
        ...

    @abstractmethod
    def answers(self, model, vocab: Vocab, x: torch.Tensor, answer_len: int, *,
                temperature: float, top_k: int | None, steps: int | None,
                generator: torch.Generator | None, planner: str | None = None) -> list[str]:
        """``planner``: the unmasking order (methods with ``has_order``; default random)."""


class _Causal(Method):
    causal = True
    default_temperature = 0.0  # seed-conditioning: greedy on fresh seeds

    def __init__(self, name: str, teacherless: bool) -> None:
        self.name, self.teacherless = name, teacherless

    def rows(self, task, seqs, vocab, rng):
        return _causal_rows(task, seqs, vocab, self.teacherless, rng)

    def batch(self, rows, idx, gen, vocab):
        return rows["inputs"][idx], rows["targets"][idx]

    def loss(self, net, batch, vocab):
        x, y = batch
        return F.cross_entropy(net(x).flatten(0, 1), y.flatten(), ignore_index=IGNORE)

    def answers(self, model, vocab, x, answer_len, *, temperature, top_k, steps, generator,
                planner=None):
        model.eval()
        banned = _banned(vocab)
        p = x.shape[1]
        done = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)
        for _ in range(answer_len):
            logits = model(x)[:, -1].float()
            logits[:, banned] = float("-inf")
            if temperature == 0:
                nxt = logits.argmax(-1)
            else:
                logits = logits / temperature
                if top_k is not None and top_k < logits.shape[-1]:
                    kth = logits.topk(top_k, dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                where = generator.device if generator is not None else x.device
                probs = logits.softmax(-1).to(where)
                nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1).to(x.device)
            nxt = torch.where(done, torch.full_like(nxt, vocab.end), nxt)
            x = torch.cat([x, nxt[:, None]], 1)
            done |= nxt == vocab.end
            if done.all() or x.shape[1] >= model.cfg.seq_len + 1:
                break
        return [vocab.decode_answer(row[p:].tolist()) for row in x]


def _span(model, vocab: Vocab, x: torch.Tensor, prefix: int):
    """Full-length tokens with the prompt after ``prefix`` slots and the rest to fill."""
    length, p = model.cfg.seq_len, x.shape[1]
    tokens = torch.full((x.shape[0], length), vocab.pad, dtype=torch.long, device=x.device)
    tokens[:, prefix:prefix + p] = x
    maskable = torch.zeros_like(tokens, dtype=torch.bool)
    maskable[:, prefix + p:] = True
    return tokens, maskable, prefix + p


class _Absorbing(Method):
    name = "diffusion"
    has_order = True

    def rows(self, task, seqs, vocab, rng):
        return _span_rows(seqs, vocab, 0)

    def batch(self, rows, idx, gen, vocab):
        tokens, maskable = rows["tokens"][idx], rows["maskable"][idx]
        noisy, masked, t = mask_tokens(tokens, maskable, gen, mask_id=vocab.mask)
        return noisy, tokens, masked, t, maskable

    def loss(self, net, batch, vocab):
        noisy, tokens, masked, t, maskable = batch
        return mdm_loss(net(noisy), tokens, masked, t, maskable)

    def answers(self, model, vocab, x, answer_len, *, temperature, top_k, steps, generator,
                planner=None):
        if top_k is not None:
            raise ValueError("top-k is not defined for the masked diffusion sampler")
        tokens, maskable, start = _span(model, vocab, x, 0)
        # The paper's sampler reveals positions in random order; mdm's adaptive planners
        # (top probability, margin, ...) choose the most confident position first.
        filled = mdm_sample(model, tokens, maskable, steps=steps or answer_len,
                            planner=planner or "random", temperature=temperature,
                            mask_id=vocab.mask, generator=generator)
        return [vocab.decode_answer(row[start:].tolist()) for row in filled]


class _Uniform(Method):
    name = "diffusion-uniform"
    prefix = 1  # the time token

    def vocab(self, task):
        return Vocab([*task.vocab(), *(f"<t{k}>" for k in range(TIME_BINS))])

    def process(self, vocab: Vocab) -> UniformDiffusion:
        """The diffused alphabet is what an answer may hold: entities, ``<sep>``, ``</a>`` and
        ``<pad>`` (after ``</a>``); seeds, markers and the other specials never appear there."""
        never = set(_banned(vocab)) - {vocab.pad}
        alphabet = [i for i in range(len(vocab)) if i not in never]
        assert vocab.index[SEP] in alphabet and vocab.end in alphabet
        return UniformDiffusion(alphabet, [vocab.index[f"<t{k}>"] for k in range(TIME_BINS)])

    def rows(self, task, seqs, vocab, rng):
        return _span_rows(seqs, vocab, self.prefix)

    def batch(self, rows, idx, gen, vocab):
        tokens, maskable = rows["tokens"][idx], rows["maskable"][idx]
        return (*self.process(vocab).corrupt(tokens, maskable, gen), maskable)

    def loss(self, net, batch, vocab):
        return self.process(vocab).loss_at(net, *batch)

    def answers(self, model, vocab, x, answer_len, *, temperature, top_k, steps, generator,
                planner=None):
        if top_k is not None:
            raise ValueError("top-k is not defined for the uniform diffusion sampler")
        tokens, maskable, start = _span(model, vocab, x, self.prefix)
        filled = self.process(vocab).sample(model, tokens, maskable, steps=steps or 2 * answer_len,
                                            temperature=temperature, generator=generator)
        return [vocab.decode_answer(row[start:].tolist()) for row in filled]


METHODS: dict[str, Method] = {m.name: m for m in (
    _Causal("ntp", teacherless=False), _Causal("teacherless", teacherless=True), _Absorbing(),
    _Uniform())}


def get_method(name: str) -> Method:
    """The registered method called ``name``; a clear error otherwise."""
    if name not in METHODS:
        raise ValueError(f"method must be one of {tuple(METHODS)}, got {name!r}")
    return METHODS[name]


def build_rows(task: str, examples: Sequence[Example], vocab: Vocab, method: str,
               rng: np.random.Generator | None = None) -> dict[str, torch.Tensor]:
    """Training tensors of ``examples`` for ``method``.

    Parameters
    ----------
    task : str
        The task name.
    examples : sequence of Example
        The training lines.
    vocab : Vocab
        The method's vocabulary for the task.
    method : str
        A name of ``METHODS``.
    rng : numpy.random.Generator or None, default=None
        Draws used by methods that need them (None: seed 0).

    Returns
    -------
    dict of str to torch.Tensor
        Causal methods: ``inputs``/``targets`` (R, L-1), next-token shifted, targets ``-100``
        on prompt and padding; teacherless rows have every answer input replaced by
        ``<dummy>``. Diffusion: ``tokens`` (R, L) and bool ``maskable`` (the answer span and
        trailing padding); uniform diffusion's rows start with one slot for the time token.

    Raises
    ------
    ValueError
        For an unknown method, no examples, or a token outside ``vocab``.

    Examples
    --------
    >>> from icml25.creativity import Vocab, build_rows, generate, make_task
    >>> task = make_task("line", 0, n_entities=4, length=3, n_train=3)
    >>> data = generate(task, seed_len=2)
    >>> rows = build_rows("line", data.train, Vocab(task.vocab()), "ntp")
    >>> rows["inputs"].shape, rows["targets"].shape
    (torch.Size([3, 11]), torch.Size([3, 11]))
    >>> rows = build_rows("line", data.train, Vocab(task.vocab()), "diffusion")
    >>> rows["tokens"].shape, rows["maskable"].dtype
    (torch.Size([3, 12]), torch.bool)
    """
    m = get_method(method)
    rng = rng or np.random.default_rng(0)
    seqs = [(vocab.prompt(e.seed, e.marker), vocab.encode(e.answer), e) for e in examples]
    if not seqs:
        raise ValueError("no training examples")
    return m.rows(task, seqs, vocab, rng)
