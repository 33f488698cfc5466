"""Training entry points through TRL (offline DPO, SFT) that run on CPU.

The exported JSONL rows (:mod:`icml25.collab.dataset`) go straight into TRL's ``DPOTrainer`` /
``SFTTrainer``. :func:`tiny_causal_lm` builds a randomly initialised Llama-architecture model and
a word-level tokenizer with a chat template, entirely offline, so the pipeline can be tested
without downloading anything. On a GPU, pass a real model and set ``use_cpu=False``, ``bf16=True``
(the paper: LoRA r 32, alpha 16; DPO beta 0.1, lr 5e-6; see docs/collab.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <eos> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}")
_SPECIALS = ["<pad>", "<unk>", "<bos>", "<eos>", "<|system|>", "<|user|>", "<|assistant|>"]


def _require_training() -> None:
    from icml25.core import require_extra

    for mod in ("torch", "transformers", "trl", "datasets"):
        require_extra(mod, "llm")


def _texts(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        for key in ("prompt", "chosen", "rejected", "messages"):
            for m in r.get(key) or []:
                out.append(str(m.get("content") or ""))
    return out


def tiny_causal_lm(texts: Sequence[str], *, hidden: int = 32, layers: int = 2,
                   seed: int = 0) -> tuple[Any, Any]:
    """A random tiny Llama-style causal LM and a word-level tokenizer over ``texts``.

    Offline only (no hub access); the model is untrained. For tests and smoke runs.
    """
    _require_training()
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(list(texts) + ["hello"],
                            trainers.WordLevelTrainer(special_tokens=_SPECIALS))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>",
                                        unk_token="<unk>", bos_token="<bos>", eos_token="<eos>")
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden,
                         intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    return LlamaForCausalLM(config), tokenizer


def _dataset(rows: Sequence[Mapping[str, Any]] | str | Path) -> Any:
    from datasets import Dataset

    from icml25.collab.dataset import read_jsonl

    # Read JSONL ourselves: load_dataset("json") would write an Arrow cache under ~/.cache.
    rows = read_jsonl(rows) if isinstance(rows, (str, Path)) else list(rows)
    if not rows:
        raise ValueError("no training rows")
    return Dataset.from_list(rows)


def lora_config(r: int, alpha: int = 16, dropout: float = 0.05) -> Any:
    """A ``peft`` LoRA configuration on every linear layer (the paper: r 32, alpha 16)."""
    from icml25.core import require_extra

    require_extra("peft", "llm")
    from peft import LoraConfig

    if r < 1 or alpha < 1:
        raise ValueError(f"LoRA needs r >= 1 and alpha >= 1, got r={r}, alpha={alpha}")
    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules="all-linear",
                      task_type="CAUSAL_LM")


def train_dpo(model: Any, tokenizer: Any, rows: Sequence[Mapping[str, Any]] | str | Path,
              output_dir: str | Path, *, max_steps: int = 2, beta: float = 0.1,
              learning_rate: float = 5e-6, batch_size: int = 2, max_length: int = 512,
              use_cpu: bool = True, seed: int = 0, ref_model: Any = None,
              lora_r: int | None = None, lora_alpha: int = 16,
              **config: Any) -> dict[str, Any]:
    """Offline DPO with TRL on TRL-format preference rows (list or JSONL path).

    The reference model defaults to a frozen copy of ``model`` as passed in (TRL would otherwise
    try to reload an in-memory model from the hub by name); with ``lora_r`` only LoRA adapters
    train and the reference is the base model with adapters off. Returns ``{"log_history":
    [...], "global_step": int, "model": the trained (with LoRA: adapter-wrapped) model}``.
    Extra keyword arguments go to ``trl.DPOConfig``.
    """
    _require_training()
    import copy

    from trl import DPOConfig, DPOTrainer

    peft_config = lora_config(lora_r, lora_alpha) if lora_r else None
    if ref_model is None and peft_config is None and not isinstance(model, (str, Path)):
        ref_model = copy.deepcopy(model).eval()

    args = DPOConfig(output_dir=str(output_dir), max_steps=max_steps, beta=beta,
                     learning_rate=learning_rate, per_device_train_batch_size=batch_size,
                     max_length=max_length, use_cpu=use_cpu, report_to=[],
                     logging_steps=1, save_strategy="no", seed=seed,
                     **{"bf16": False, **config})
    trainer = DPOTrainer(model=model, ref_model=ref_model, args=args,
                         train_dataset=_dataset(rows),
                         processing_class=tokenizer, peft_config=peft_config)
    trainer.train()
    return {"log_history": trainer.state.log_history, "global_step": trainer.state.global_step,
            "model": trainer.model}


def train_sft(model: Any, tokenizer: Any, rows: Sequence[Mapping[str, Any]] | str | Path,
              output_dir: str | Path, *, max_steps: int = 2, learning_rate: float = 1e-5,
              batch_size: int = 2, max_length: int = 512, use_cpu: bool = True, seed: int = 0,
              lora_r: int | None = None, lora_alpha: int = 16,
              **config: Any) -> dict[str, Any]:
    """SFT with TRL on ``{"messages": [...]}`` rows (list or JSONL path); ``lora_r``: LoRA."""
    _require_training()
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(output_dir=str(output_dir), max_steps=max_steps,
                     learning_rate=learning_rate, per_device_train_batch_size=batch_size,
                     max_length=max_length, use_cpu=use_cpu, report_to=[],
                     logging_steps=1, save_strategy="no", seed=seed,
                     **{"bf16": False, **config})
    trainer = SFTTrainer(model=model, args=args, train_dataset=_dataset(rows),
                         processing_class=tokenizer,
                         peft_config=lora_config(lora_r, lora_alpha) if lora_r else None)
    trainer.train()
    return {"log_history": trainer.state.log_history, "global_step": trainer.state.global_step,
            "model": trainer.model}
