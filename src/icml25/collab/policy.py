"""A small policy language model for the collaboration world, trained here (needs ``torch``).

- :class:`WordTokenizer`: word-level vocabulary built from the generated dialogues (text is
  space-separated words, punctuation and single digits), with role and control tokens.
- :class:`PolicyLM`: an :class:`icml25.nn.Transformer` (causal) plus the tokenizer; it renders a
  conversation as ``<bos> <user> ... <assistant> ... <eos> <user> ...``, samples replies for a
  batch of conversations at once, and scores the log-probability of given replies (for DPO).
- :class:`PolicyChat`: the policy behind the :class:`icml25.collab.chat.ChatModel` protocol,
  so :class:`icml25.collab.reward.MultiturnReward` forward-samples with it unchanged. Concurrent
  ``chat`` calls (all branches of an MR batch) are gathered into one batched generation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from icml25.collab.chat import ChatResult
from icml25.nn import Transformer, TransformerConfig

SPECIALS = ("<pad>", "<unk>", "<bos>", "<eos>", "<user>", "<assistant>")
PAD, UNK, BOS, EOS, USER, ASSISTANT = range(len(SPECIALS))
ROLE_TOKEN = {"user": USER, "assistant": ASSISTANT}


@dataclasses.dataclass
class WordTokenizer:
    """Whitespace words -> ids; unknown words map to ``<unk>``."""

    vocab: list[str]

    def __post_init__(self) -> None:
        if tuple(self.vocab[:len(SPECIALS)]) != SPECIALS:
            raise ValueError("a tokenizer vocabulary must start with the special tokens")
        self.index = {w: i for i, w in enumerate(self.vocab)}

    @classmethod
    def train(cls, texts: Iterable[str], min_count: int = 1) -> WordTokenizer:
        counts = Counter(w for t in texts for w in t.split())
        words = sorted(w for w, c in counts.items() if c >= min_count and w not in SPECIALS)
        return cls([*SPECIALS, *words])

    def encode(self, text: str) -> list[int]:
        return [self.index.get(w, UNK) for w in text.split()]

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.vocab[i] for i in ids if i >= len(SPECIALS) or i == UNK)

    def __len__(self) -> int:
        return len(self.vocab)


def render_ids(tok: WordTokenizer, conversation: Sequence[dict[str, Any]],
               *, generation_prompt: bool = False) -> list[int]:
    """Ids of a conversation (system messages dropped); optionally open an assistant turn."""
    ids = [BOS]
    for m in conversation:
        role = m.get("role")
        if role not in ROLE_TOKEN:
            continue
        ids += [ROLE_TOKEN[role], *tok.encode(m.get("content") or ""), EOS]
    if generation_prompt:
        ids.append(ASSISTANT)
    return ids


class PolicyLM:
    """A causal transformer over :func:`render_ids` sequences, with its tokenizer."""

    def __init__(self, model: Transformer, tok: WordTokenizer) -> None:
        if not model.cfg.causal:
            raise ValueError("the policy must be a causal transformer")
        if model.cfg.vocab_size != len(tok):
            raise ValueError(f"model vocabulary {model.cfg.vocab_size} != tokenizer {len(tok)}")
        self.model, self.tok = model, tok

    @classmethod
    def new(cls, tok: WordTokenizer, *, seq_len: int = 96, d_model: int = 96, n_layers: int = 3,
            n_heads: int = 4, seed: int = 0) -> PolicyLM:
        torch.manual_seed(seed)
        cfg = TransformerConfig(vocab_size=len(tok), seq_len=seq_len, d_model=d_model,
                                n_layers=n_layers, n_heads=n_heads, causal=True)
        return cls(Transformer(cfg), tok)

    @property
    def seq_len(self) -> int:
        return self.model.cfg.seq_len

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def generate(self, conversations: Sequence[Sequence[dict[str, Any]]], *,
                 temperature: float = 1.0, max_tokens: int = 32,
                 generator: torch.Generator | None = None) -> list[str]:
        """One assistant reply per conversation (greedy when ``temperature`` is 0)."""
        if max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if not conversations:
            return []
        # A conversation longer than the context keeps its latest turns (left truncation),
        # leaving room for a reply of up to a third of the context.
        keep = self.seq_len - min(max_tokens, self.seq_len // 3)
        prompts = [render_ids(self.tok, c, generation_prompt=True) for c in conversations]
        prompts = [p if len(p) <= keep else [BOS, *p[len(p) - keep + 1:]] for p in prompts]
        was_training = self.model.training
        self.model.eval()
        budget = min(max_tokens, self.seq_len - max(len(p) for p in prompts))
        out = _decode_cached(self.model, prompts, budget, temperature, generator)
        self.model.train(was_training)
        return [self.tok.decode(o) for o in out]

    # ------------------------------------------------------------------ scoring
    def reply_batch(self, prompts: Sequence[Sequence[dict[str, Any]]], replies: Sequence[str]
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Ids ``(B, T)`` of prompt + reply + ``<eos>``, and a mask of the reply tokens."""
        seqs, masks = [], []
        for conv, reply in zip(prompts, replies, strict=True):
            p = render_ids(self.tok, conv, generation_prompt=True)
            r = [*self.tok.encode(reply), EOS]
            s = (p + r)[:self.seq_len]
            seqs.append(s)
            masks.append([0] * len(p) + [1] * (len(s) - len(p)))
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), PAD, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.float32)
        for i, (s, m) in enumerate(zip(seqs, masks, strict=True)):
            ids[i, :len(s)] = torch.tensor(s)
            mask[i, :len(m)] = torch.tensor(m, dtype=torch.float32)
        return ids, mask

    def sequence_logprob(self, ids: torch.Tensor, mask: torch.Tensor,
                         model: Transformer | None = None) -> torch.Tensor:
        """Sum of log p(token) over the masked positions, per row (differentiable)."""
        net = model if model is not None else self.model
        logits = net(ids[:, :-1]).float()
        logp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        return (logp * mask[:, 1:]).sum(-1)

    def token_loss(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy over the masked (assistant) tokens: the SFT loss."""
        logits = self.model(ids[:, :-1]).float()
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1),
                             reduction="none").view(ids.shape[0], -1)
        m = mask[:, 1:]
        return (ce * m).sum() / m.sum().clamp(min=1.0)

    # ------------------------------------------------------------------ I/O
    def save(self, directory: str | Path, card: dict[str, Any] | None = None, *,
             float16: bool = False) -> Path:
        """Weights, config (with ``card``) and vocabulary; ``float16`` halves the file (the
        weights load back as float32)."""
        directory = Path(directory)
        self.model.save(directory, extra={"card": card or {}})
        if float16:
            from safetensors.torch import load_file, save_file

            path = str(directory / "model.safetensors")
            save_file({k: v.half().contiguous() for k, v in load_file(path).items()}, path)
        (directory / "vocab.json").write_text(json.dumps(self.tok.vocab))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> PolicyLM:
        directory = Path(directory)
        if not (directory / "vocab.json").exists():
            raise FileNotFoundError(f"no policy model in {directory} (vocab.json is missing)")
        tok = WordTokenizer(json.loads((directory / "vocab.json").read_text()))
        return cls(Transformer.load(directory), tok)


def _attend(block, x: torch.Tensor, positions_mask: torch.Tensor,
            cache: list[torch.Tensor] | None) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One block on new positions ``x`` (B, t, d), attending to cached keys/values plus these.

    ``positions_mask`` (B, 1, t, T_total) says which keys each new position may see.
    """
    b, t, d = x.shape
    h = block.cfg.n_heads
    q, k, v = block.qkv(block.ln1(x)).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
    if cache is not None:
        k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
    att = F.scaled_dot_product_attention(q, k, v, attn_mask=positions_mask)
    x = x + block.proj(att.transpose(1, 2).reshape(b, t, d))
    return x + block.mlp(block.ln2(x)), [k, v]


@torch.no_grad()
def _decode_cached(model: Transformer, prompts: Sequence[list[int]], budget: int,
                   temperature: float, generator: torch.Generator | None) -> list[list[int]]:
    """Sample up to ``budget`` tokens after each prompt with a key/value cache.

    Prompts are left-padded; each row's positions count from its first real token and padding
    is masked out, so every row decodes exactly as it would alone (the model's learned
    positions, causal attention).
    """
    if model.pos is None or model.groups:
        raise ValueError("cached decoding needs learned positions and no position groups")
    b, width = len(prompts), max(len(p) for p in prompts)
    pad = torch.tensor([width - len(p) for p in prompts])
    ids = torch.full((b, width), PAD, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p)
    col = torch.arange(width)
    valid = col[None, :] >= pad[:, None]  # (B, T) real tokens
    pos = (col[None, :] - pad[:, None]).clamp(min=0)
    causal = col[None, :] <= col[:, None]  # (T, T): query row may see key column
    mask = (causal[None] & valid[:, None, :])[:, None]
    mask |= ~valid[:, None, :, None]  # padding queries see everything (their output is unused)
    x = model.tok(ids) + model.pos(pos)
    caches = []
    for block in model.blocks:
        x, kv = _attend(block, x, mask, None)
        caches.append(kv)
    logits = model.head(model.ln_f(x[:, -1]))
    lens = torch.tensor([len(p) for p in prompts])
    done = torch.zeros(b, dtype=torch.bool)
    out: list[list[int]] = [[] for _ in range(b)]
    for step in range(budget):
        logits = logits.float()
        logits[:, [PAD, BOS, UNK]] = -float("inf")
        if temperature <= 0:
            nxt = logits.argmax(-1)
        else:
            probs = torch.softmax(logits / temperature, -1)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        for i in torch.nonzero(~done).flatten().tolist():
            tok = int(nxt[i])
            if tok in (EOS, USER, ASSISTANT):
                done[i] = True
            else:
                out[i].append(tok)
        if bool(done.all()) or step == budget - 1:
            break
        valid = torch.cat([valid, torch.ones(b, 1, dtype=torch.bool)], 1)
        x = model.tok(nxt[:, None]) + model.pos((lens + step)[:, None])
        step_mask = valid[:, None, None, :]
        new = []
        for block, kv in zip(model.blocks, caches, strict=True):
            x, kv = _attend(block, x, step_mask, kv)
            new.append(kv)
        caches = new
        logits = model.head(model.ln_f(x[:, -1]))
    return out


def conversation_rows(conversation: Sequence[dict[str, Any]]
                      ) -> list[tuple[list[dict[str, Any]], str]]:
    """(prompt, reply) for every assistant turn of a conversation (the SFT targets)."""
    out = []
    for i, m in enumerate(conversation):
        if m.get("role") == "assistant":
            out.append(([dict(x) for x in conversation[:i]], m.get("content") or ""))
    return out


class PolicyChat:
    """:class:`PolicyLM` as a chat model; concurrent calls are generated as one batch."""

    name = "policy"

    def __init__(self, policy: PolicyLM, *, temperature: float = 1.0, max_tokens: int = 32,
                 seed: int = 0) -> None:
        self.policy = policy
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.generator = torch.Generator().manual_seed(seed)
        self._queue: list[tuple[list[dict[str, Any]], float, asyncio.Future]] = []
        self._flush: asyncio.Task | None = None
        self.calls = 0
        self.batches = 0

    async def chat(self, messages: Sequence[dict[str, Any]], *, role: str = "assistant",
                   temperature: float | None = None, max_tokens: int | None = None
                   ) -> ChatResult:
        if role != "assistant":
            raise ValueError("the policy model only plays the assistant")
        fut = asyncio.get_running_loop().create_future()
        temp = self.temperature if temperature is None else float(temperature)
        self._queue.append(([dict(m) for m in messages], temp, fut))
        if self._flush is None or self._flush.done():
            self._flush = asyncio.ensure_future(self._run())
        text = await fut
        self.calls += 1
        return ChatResult(text, completion_tokens=len(text.split()) + 1, model=self.name)

    async def _run(self) -> None:
        # Let every coroutine that is ready enqueue its request before generating.
        for _ in range(3):
            await asyncio.sleep(0)
        while self._queue:
            batch, self._queue = self._queue, []
            by_temp: dict[float, list[tuple[list[dict[str, Any]], asyncio.Future]]] = {}
            for conv, temp, fut in batch:
                by_temp.setdefault(temp, []).append((conv, fut))
            for temp, items in by_temp.items():
                self.batches += 1
                try:
                    texts = self.policy.generate([c for c, _ in items], temperature=temp,
                                                 max_tokens=self.max_tokens,
                                                 generator=self.generator)
                except Exception as exc:  # noqa: BLE001 - hand the error to every waiter
                    for _, fut in items:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                for (_, fut), text in zip(items, texts, strict=True):
                    if not fut.done():
                        fut.set_result(text)
            for _ in range(3):
                await asyncio.sleep(0)
