"""Evaluating the text MDM: code infilling on held-out modules (HumanEval-Infill's two
measures) and generative perplexity of unconditional samples (the paper's Fig. 3).

Infilling: a span is one line (single-line) or 2-5 consecutive lines (multi-line) of a held-out
file, its bytes masked (indentation included, the final newline kept) inside a 256-byte window
of the file around it; as in HumanEval-Infill with an MDM, the span's length is known. The span is
filled by :func:`~icml25.mdm.generate` with greedy values, in ``ceil(span / bytes_per_step)``
steps. Scored: **exact match** of the span's bytes, and **parses**: the whole file with the filled
span still ``ast.parse``s.

Generative perplexity: unconditional 256-byte samples (every position masked, values sampled at
temperature 1, the planner choosing the order) scored per byte by the causal judge, with each
sample's unigram byte entropy beside it (a planner that lowers perplexity by repeating itself
shows as lower entropy).
"""

from __future__ import annotations

import ast
import dataclasses
import math

import numpy as np
import torch

from icml25.core.stats import clopper_pearson, mean_interval
from icml25.mdm.decoding import generate
from icml25.mdm.text_data import MASK, PAD, Corpus, window_index, windows

KINDS = ("single", "multi")
MAX_SPAN = {"single": 64, "multi": 128}  # bytes; keeps a span well inside a 256-byte window
MULTI_LINES = (2, 5)


@dataclasses.dataclass(frozen=True)
class InfillTask:
    kind: str
    file: int  # index into the corpus' files
    span: tuple[int, int]  # byte offsets of the masked span in the file
    window: tuple[int, int]  # byte offsets of the model's window in the file

    def answer(self, corpus: Corpus) -> bytes:
        lo, hi = self.span
        return corpus.files[self.file].text[lo:hi]


def _line_spans(text: bytes) -> list[tuple[int, int]]:
    """(start, end) of every line, newline excluded."""
    spans, start = [], 0
    for line in text.split(b"\n")[:-1]:
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def _candidates(text: bytes, kind: str) -> list[tuple[int, int]]:
    lines = _line_spans(text)
    blank = [not text[a:b].strip() for a, b in lines]
    out = []
    if kind == "single":
        out = [(a, b) for (a, b), empty in zip(lines, blank, strict=True) if not empty]
    else:
        lo_n, hi_n = MULTI_LINES
        for i in range(len(lines)):
            for n in range(lo_n, hi_n + 1):
                j = i + n - 1
                if j < len(lines) and not blank[i] and not blank[j]:
                    out.append((lines[i][0], lines[j][1]))
    return [(a, b) for a, b in out if b - a <= MAX_SPAN[kind]]


def _window(text: bytes, span: tuple[int, int], seq_len: int) -> tuple[int, int]:
    """A window of ``seq_len`` bytes starting at a line start, the span near its middle."""
    lo, hi = span
    want = max(0, lo - (seq_len - (hi - lo)) // 2)
    # the first line start at or after ``want``; ``lo`` is one, so it is never past the span
    start = text.find(b"\n", want - 1) + 1 if want > 0 else 0
    return start, start + seq_len


def make_tasks(corpus: Corpus, kind: str, n: int, seed: int, seq_len: int = 256
               ) -> list[InfillTask]:
    """``n`` spans drawn uniformly (with a fixed ``seed``) from every candidate span of the
    corpus: a non-blank line of at most 64 bytes (single), or 2-5 lines that start and end
    non-blank, at most 128 bytes (multi)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if n < 1:
        raise ValueError("n must be positive")
    per_file = [_candidates(f.text, kind) for f in corpus.files]
    sizes = np.array([len(c) for c in per_file])
    rng = np.random.default_rng(seed)
    flat = rng.choice(int(sizes.sum()), size=min(n, int(sizes.sum())), replace=False)
    bounds = np.cumsum(sizes)
    tasks = []
    for i in np.sort(flat):
        f = int(np.searchsorted(bounds, i, side="right"))
        span = per_file[f][int(i - (bounds[f] - sizes[f]))]
        tasks.append(InfillTask(kind, f, span, _window(corpus.files[f].text, span, seq_len)))
    return tasks


def task_prompt(task: InfillTask, corpus: Corpus) -> np.ndarray:
    """The model's input: the window's bytes (PAD past the file's end), the span masked."""
    text = corpus.files[task.file].text
    w0, w1 = task.window
    ids = np.full(w1 - w0, PAD, dtype=np.int64)
    chunk = np.frombuffer(text[w0:w1], dtype=np.uint8)
    ids[:len(chunk)] = chunk
    ids[task.span[0] - w0:task.span[1] - w0] = MASK
    return ids


def parses_with(task: InfillTask, corpus: Corpus, filled: bytes) -> bool:
    """Whether the file with its span replaced by ``filled`` is still valid Python."""
    text = corpus.files[task.file].text
    new = text[:task.span[0]] + filled + text[task.span[1]:]
    try:
        ast.parse(new.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return False
    return True


def fill_tasks(model, tasks: list[InfillTask], corpus: Corpus, *, planner: str,
               bytes_per_step: int, noise: float = 0.0, batch_size: int = 64,
               generator: torch.Generator | None = None) -> list[bytes]:
    """The filled span of every task. Tasks that take the same number of steps share batches."""
    steps_of = [math.ceil((t.span[1] - t.span[0]) / bytes_per_step) for t in tasks]
    out: list[bytes | None] = [None] * len(tasks)
    for steps in sorted(set(steps_of)):
        group = [i for i, s in enumerate(steps_of) if s == steps]
        for lo in range(0, len(group), batch_size):
            rows = group[lo:lo + batch_size]
            prompt = torch.from_numpy(np.stack([task_prompt(tasks[i], corpus) for i in rows]))
            ids = generate(model, prompt, mask_id=MASK, gen_length=0, steps=steps,
                           planner=planner, noise=noise, generator=generator)
            for i, row in zip(rows, ids, strict=True):
                w0 = tasks[i].window[0]
                a, b = tasks[i].span
                out[i] = bytes(int(v) for v in row[a - w0:b - w0])
    return out


def _rate(hits: list[bool]) -> dict:
    k, n = int(sum(hits)), len(hits)
    lo, hi = clopper_pearson(k, n)
    return {"rate": k / n, "n": n, "ci_low": lo, "ci_high": hi}


def score_infilling(tasks: list[InfillTask], corpus: Corpus, filled: list[bytes]) -> dict:
    """Exact match and parse rates with 95% Clopper-Pearson intervals, and the mean fraction
    of a span's bytes filled right (a finer measure for a small model) with its t interval."""
    answers = [t.answer(corpus) for t in tasks]
    exact = [f == a for f, a in zip(filled, answers, strict=True)]
    parses = [e or parses_with(t, corpus, f) for t, f, e in zip(tasks, filled, exact,
                                                              strict=True)]
    right = [sum(x == y for x, y in zip(f, a, strict=True)) / len(a)
             for f, a in zip(filled, answers, strict=True)]
    lo, hi = mean_interval(right)
    return {"exact": _rate(exact), "parses": _rate(parses),
            "byte_acc": {"mean": float(np.mean(right)), "ci_low": lo, "ci_high": hi}}


def evaluate_infilling(model, corpus: Corpus, planners, *, kinds=KINDS, n: int = 200,
                       bytes_per_step=(1,), noise: float = 0.0, batch_size: int | None = None,
                       seed: int = 0) -> dict:
    """``{kind: {bytes_per_step: {planner: score}}}`` on ``n`` spans per kind (task seed 0)."""
    report = {}
    for kind in kinds:
        tasks = make_tasks(corpus, kind, n, seed=seed, seq_len=model.cfg.seq_len)
        report[kind] = {}
        for bps in bytes_per_step:
            report[kind][bps] = {}
            for planner in planners:
                gen = torch.Generator().manual_seed(seed)
                filled = fill_tasks(model, tasks, corpus, planner=planner, bytes_per_step=bps,
                                    noise=noise, batch_size=batch_size or 64, generator=gen)
                report[kind][bps][planner] = score_infilling(tasks, corpus, filled)
    return report


# ---- generative perplexity (Fig. 3)

def sample_unconditional(model, n: int, *, steps: int, planner: str, temperature: float = 1.0,
                         noise: float = 0.0, batch_size: int = 64,
                         generator: torch.Generator | None = None) -> torch.Tensor:
    """``n`` samples of the model's full length, every position generated."""
    out = []
    for lo in range(0, n, batch_size):
        b = min(batch_size, n - lo)
        prompt = torch.full((b, 0), MASK, dtype=torch.long)
        out.append(generate(model, prompt, mask_id=MASK, gen_length=model.cfg.seq_len,
                            steps=steps, planner=planner, temperature=temperature, noise=noise,
                            generator=generator))
    return torch.cat(out)


@torch.no_grad()
def byte_nll(judge, samples: torch.Tensor) -> torch.Tensor:
    """Per-sample mean negative log-likelihood (nats per byte) of bytes 2..L under the causal
    ``judge`` (PAD and MASK bytes are not scored)."""
    judge.eval()
    logits = judge(samples[:, :-1]).float()
    target = samples[:, 1:]
    nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target.clamp(max=255),
                                            reduction="none")
    scored = target < 256
    return (nll * scored).sum(1) / scored.sum(1).clamp(min=1)


def unigram_entropy(samples: torch.Tensor) -> torch.Tensor:
    """Each sample's entropy (bits) of its byte histogram."""
    out = []
    for row in samples:
        counts = torch.bincount(row[row < 256], minlength=256).float()
        p = counts[counts > 0] / counts.sum()
        out.append(float(-(p * p.log2()).sum()))
    return torch.tensor(out)


def perplexity_report(nll: torch.Tensor, entropy: torch.Tensor) -> dict:
    """Generative perplexity exp(mean NLL) with the exp of the mean's 95% t interval, and the
    mean unigram entropy with its interval."""
    lo, hi = mean_interval(nll.tolist())
    e_lo, e_hi = mean_interval(entropy.tolist())
    return {"perplexity": math.exp(float(nll.mean())), "ci_low": math.exp(lo),
            "ci_high": math.exp(hi), "entropy": float(entropy.mean()), "entropy_ci": [e_lo, e_hi],
            "n": len(nll)}


def held_out_perplexity(judge, corpus: Corpus, n: int, *, seed: int) -> dict:
    """The judge's perplexity and the unigram entropy of ``n`` real windows of ``corpus`` (drawn
    with ``seed``): where good samples should land."""
    index = window_index(corpus, judge.cfg.seq_len)
    n = min(n, len(index.starts))
    picks = np.random.default_rng(seed).choice(len(index.starts), n, replace=False)
    real = torch.from_numpy(windows(index, picks))
    return perplexity_report(byte_nll(judge, real), unigram_entropy(real))


def evaluate_perplexity(model, judge, planners, *, steps_grid, n: int, seed: int = 0,
                        batch_size: int = 64) -> dict:
    """``{steps: {planner: perplexity_report}}`` for ``n`` unconditional samples each."""
    report = {}
    for steps in steps_grid:
        report[steps] = {}
        for planner in planners:
            gen = torch.Generator().manual_seed(seed)
            samples = sample_unconditional(model, n, steps=steps, planner=planner,
                                           batch_size=batch_size, generator=gen)
            report[steps][planner] = perplexity_report(byte_nll(judge, samples),
                                                       unigram_entropy(samples))
    return report
