"""Online DPO for any transformers causal LM: ``icml25 collab train-online`` (needs the ``llm``
extra: torch, transformers, trl, peft).

The rounds are :func:`icml25.collab.online.run_rounds` (the structure the in-repo policy model's
loop runs too): candidates from the current policy by batched generation with a KV cache
(``model.generate``), the multiturn-aware reward against the world's user, DPO pairs, one DPO
round with TRL on LoRA adapters (peft; the reference is the same model with the adapters off,
i.e. the SFT model), and the next round continues from the new adapter.

Output folder::

    run.json                 the settings (a resume must use the same ones)
    state.json               rounds done and their log (written last, atomically)
    sft/adapter/             the SFT LoRA adapter, merged into the base before the rounds
    round-000/adapter/       the policy's LoRA adapter after round 0 (no optimizer state)
    round-000/pairs.jsonl    the round's DPO pairs in TRL's conversational preference format
    round-000/rewards.jsonl  per task: candidates, MR and its metric means
    round-000/metrics.jsonl  the round's log entry (pairs, loss, seconds, held-out figures)

A round folder is written as ``round-NNN.tmp`` and renamed when complete, then ``state.json`` is
replaced; a run killed at any point resumes (``resume=True``) after the last complete round and
repeats the same computation (round r uses seed ``seed + r``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icml25.collab.dataset import write_jsonl
from icml25.collab.reward import _json_float

TRANSCRIPT_TEMPLATE = (
    "{{ bos_token }}Below is a conversation between a User and a helpful AI Assistant."
    "{% for m in messages %}{% if m['role'] == 'user' %}\n\nUser: {{ m['content'] | trim }}"
    "{% elif m['role'] == 'assistant' %}\n\nAssistant: {{ m['content'] | trim }}{{ eos_token }}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}\n\nAssistant:{% endif %}")
"""The chat template given to a base model without one: the plain transcript
(:func:`icml25.collab.chat.render_transcript`), each assistant turn closed by ``eos``."""


@dataclasses.dataclass(frozen=True)
class OnlineConfig:
    """Settings of an online run (paper: LoRA r 32, alpha 16; DPO beta 0.1; window 2).

    ``lr`` is the DPO learning rate of the LoRA adapters; ``epochs`` passes over each round's
    pairs with ``batch_size`` pairs a step.
    """

    window: int = 2
    n_samples: int = 2
    n_candidates: int = 2
    temperature: float = 1.0
    token_penalty: float = 1e-3
    min_gap: float = 0.1
    max_tokens: int = 32
    beta: float = 0.1
    lr: float = 1e-4
    epochs: int = 1
    batch_size: int = 4
    max_length: int = 384
    lora_r: int = 32
    lora_alpha: int = 16
    gen_batch: int = 64

    def __post_init__(self) -> None:
        if self.window < 0 or self.n_samples < 1 or self.n_candidates < 2:
            raise ValueError("need window >= 0, n_samples >= 1 and n_candidates >= 2")
        if not (self.beta > 0 and self.lr > 0 and self.epochs >= 1 and self.batch_size >= 1):
            raise ValueError("beta and lr must be positive, epochs and batch_size >= 1")
        if self.lora_r < 1 or self.lora_alpha < 1:
            raise ValueError("LoRA needs r >= 1 and alpha >= 1")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")


# --------------------------------------------------------------------------- the policy

def load_base(spec: str, device: str = "cpu") -> tuple[Any, Any]:
    """Model and tokenizer for ``hf:DIR`` (any local transformers causal LM) or ``gemma-270m``
    (the shipped Gemma 3 270M GGUF, dequantised to float32); offline only.

    Raises
    ------
    ValueError
        For another form, or a folder that does not exist.
    """
    from icml25.core import require_extra

    require_extra("torch", "torch")
    transformers = require_extra("transformers", "llm")
    if spec == "gemma-270m":
        from icml25.collab.chat import gemma_270m_path

        path = gemma_270m_path()
        folder, kw = str(path.parent), {"gguf_file": path.name}
    elif spec.startswith("hf:") and len(spec) > 3:
        folder, kw = spec[3:], {}
        if not Path(folder).is_dir():
            raise ValueError(f"--policy {spec}: no such folder")
    else:
        raise ValueError(f"unknown policy {spec!r}: use hf:DIR (a local transformers causal LM "
                         "folder) or gemma-270m (the shipped Gemma 3 270M)")
    tok = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True, **kw)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, **kw)

    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None and "gguf" in str(getattr(quantizer.quantization_config,
                                                       "quant_method", "")).lower() and all(
            p.dtype.is_floating_point for p in model.parameters()):
        # A GGUF file dequantised on load holds plain float weights, but transformers still
        # marks the model quantized, and its Trainer then refuses to fine-tune it.
        quantizer.remove_quantization_config(model)
        model.config._is_quantized = False
    if not getattr(tok, "chat_template", None):
        tok.chat_template = TRANSCRIPT_TEMPLATE
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model.to(device), tok


class HFPolicy:
    """A transformers causal LM (optionally LoRA-wrapped) with the policy interface of
    :class:`icml25.collab.policy.PolicyLM`: ``generate(conversations, temperature=,
    max_tokens=, generator=)`` samples one reply per conversation, in batches of ``gen_batch``
    left-padded prompts with the KV cache."""

    def __init__(self, model: Any, tokenizer: Any, *, gen_batch: int = 64) -> None:
        self.model, self.tok, self.gen_batch = model, tokenizer, gen_batch

    def prompt(self, conversation: Sequence[dict[str, Any]]) -> str:
        msgs = [{"role": m["role"], "content": m.get("content") or ""} for m in conversation
                if m.get("role") in ("user", "assistant")]
        return self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)

    def generate(self, conversations: Sequence[Sequence[dict[str, Any]]], *,
                 temperature: float = 1.0, max_tokens: int = 32, generator: Any = None
                 ) -> list[str]:
        import torch

        from icml25.collab.chat import cut_at_stop

        if max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if not conversations:
            return []
        seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
        device = next(self.model.parameters()).device
        out: list[str] = []
        was_training = self.model.training
        self.model.eval()
        self.tok.padding_side = "left"
        sample = temperature > 0
        kw: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": sample,
                              "pad_token_id": self.tok.pad_token_id,
                              "eos_token_id": self.tok.eos_token_id}
        if sample:
            kw.update(temperature=temperature, top_k=0, top_p=1.0)
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for i in range(0, len(conversations), self.gen_batch):
                texts = [self.prompt(c) for c in conversations[i:i + self.gen_batch]]
                enc = self.tok(texts, return_tensors="pt", padding=True,
                               add_special_tokens=False).to(device)
                ids = self.model.generate(**enc, **kw)
                new = ids[:, enc["input_ids"].shape[1]:]
                out += [cut_at_stop(t) for t in self.tok.batch_decode(
                    new, skip_special_tokens=True)]
        self.model.train(was_training)
        return out


# --------------------------------------------------------------------------- evaluation

def evaluate(policy: HFPolicy, world: Any, tasks: Sequence[Any], *, seed: int = 0,
             temperature: float = 1.0, max_tokens: int = 32, max_turns: int = 3
             ) -> dict[str, Any]:
    """Task success and interactivity of whole conversations with the world's rule-based
    user (all tasks stepped together), with 95% Clopper-Pearson intervals."""
    from icml25.collab import online
    from icml25.core.stats import clopper_pearson

    if not tasks:
        raise ValueError("no evaluation tasks")
    convs = online.rollout(policy, world, tasks, temperature=temperature, max_turns=max_turns,
                           max_tokens=max_tokens, seed=seed)
    out: dict[str, Any] = {"n": len(tasks)}
    for key, fn in (("success", world.success), ("interactivity", world.interactivity)):
        k = int(sum(fn(t, c) for t, c in zip(tasks, convs, strict=True)))
        lo, hi = clopper_pearson(k, len(tasks))
        out[key] = {"rate": k / len(tasks), "ci95": [lo, hi]}
    out["example"] = convs[0]
    return out


# --------------------------------------------------------------------------- training

def _trl_args(cfg: OnlineConfig, out: Path, seed: int, device: str, kind: str) -> Any:
    from trl import DPOConfig, SFTConfig

    common = {"output_dir": str(out), "learning_rate": cfg.lr,
              "per_device_train_batch_size": cfg.batch_size, "num_train_epochs": cfg.epochs,
              "max_length": cfg.max_length, "use_cpu": device == "cpu",
              "bf16": device != "cpu", "report_to": [], "logging_strategy": "no",
              "gradient_checkpointing": False,
              "save_strategy": "no", "seed": seed, "disable_tqdm": True,
              "dataloader_num_workers": 0}
    if kind == "dpo":
        return DPOConfig(beta=cfg.beta, **common)
    return SFTConfig(**common)


def dpo_round(model: Any, tokenizer: Any, pairs: Sequence[dict[str, Any]], cfg: OnlineConfig,
              work: Path, seed: int, device: str = "cpu") -> float:
    """One DPO round with TRL on a LoRA-wrapped ``model`` (reference: adapters off); returns
    the mean training loss."""
    from datasets import Dataset
    from trl import DPOTrainer

    rows = trl_rows(pairs)
    trainer = DPOTrainer(model=model, ref_model=None, args=_trl_args(cfg, work, seed, device,
                                                                     "dpo"),
                         train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    # TRL makes the reference a frozen copy ("ref") of the adapter as it stands; zeroing the
    # copy's B matrices turns it into the adapter-free model, so every round's reference is the
    # same model (the SFT model), as in the paper, not the previous round's policy.
    for name, p in model.named_parameters():
        if ".ref." in name:
            p.requires_grad_(False)
            if "lora_B" in name:
                p.data.zero_()
    try:
        result = trainer.train()
    finally:
        if "ref" in model.peft_config:
            model.delete_adapter("ref")
        model.set_adapter("default")
        shutil.rmtree(work, ignore_errors=True)
    return float(result.training_loss)


def trl_rows(pairs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pairs as TRL's conversational preference rows (``prompt`` messages, one-message
    ``chosen`` and ``rejected``).

    Examples
    --------
    >>> trl_rows([{"prompt": [{"role": "user", "content": "hi"}], "chosen": "a?",
    ...            "rejected": "b", "mr_chosen": 1.0, "mr_rejected": 0.0}])[0]["chosen"]
    [{'role': 'assistant', 'content': 'a?'}]
    """
    return [{"prompt": [{"role": m["role"], "content": m["content"]} for m in p["prompt"]],
             "chosen": [{"role": "assistant", "content": p["chosen"]}],
             "rejected": [{"role": "assistant", "content": p["rejected"]}]} for p in pairs]


def sft_adapter(model: Any, tokenizer: Any, world: Any, n_demos: int, cfg: OnlineConfig,
                out: Path, seed: int, device: str = "cpu", epochs: int = 1) -> Any:
    """SFT on ``n_demos`` demonstrations of the world (half ask first, half guess) with a
    LoRA adapter saved to ``out/adapter``; returns the base with the adapter merged."""
    import numpy as np
    from datasets import Dataset
    from trl import SFTTrainer

    from icml25.collab.train import lora_config

    rng = np.random.default_rng(seed)
    tasks = world.tasks(n_demos, seed + 50_000)
    rows = [{"messages": world.demonstration(t, bool(rng.random() < 0.5), rng)} for t in tasks]
    args = _trl_args(dataclasses.replace(cfg, epochs=epochs, lr=max(cfg.lr, 2e-4)),
                     out / "work", seed, device, "sft")
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer,
                         peft_config=lora_config(cfg.lora_r, cfg.lora_alpha))
    trainer.train()
    tmp = out.with_name(out.name + ".tmp")
    trainer.model.save_pretrained(str(tmp / "adapter"))
    _write_json(tmp / "sft.json", {"demos": n_demos, "loss": [
        h["loss"] for h in trainer.state.log_history if "loss" in h]})
    shutil.rmtree(tmp / "work", ignore_errors=True)
    shutil.rmtree(out / "work", ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return trainer.model.merge_and_unload()


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=_json_default))
    os.replace(tmp, path)


def _json_default(x: Any) -> Any:
    if isinstance(x, float):
        return _json_float(x)
    return str(x)


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return _json_float(obj)
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def train_online(policy: str, world_name: str, out: str | Path, *, rounds: int,
                 tasks_per_round: int, cfg: OnlineConfig | None = None, user: str = "rule",
                 resume: bool = False, seed: int = 0, pool_size: int = 2000,
                 eval_tasks: int = 0, sft_demos: int = 0, device: str = "cpu",
                 log_fn: Any = None) -> dict[str, Any]:
    """Run (or resume) online DPO rounds for ``policy`` in ``world_name``; see the module
    docstring for the output folder.

    Parameters
    ----------
    policy : ``hf:DIR`` or ``gemma-270m``.
    world_name : a name of :data:`icml25.collab.worlds.WORLDS`.
    out : the output folder.
    rounds, tasks_per_round : rounds in all (a resume runs the missing ones), tasks per round.
    cfg : sampling, reward, DPO and LoRA settings.
    user : ``rule`` (the world's rule-based user) or a chat-model spec
        (:func:`icml25.collab.chat.load_chat_model`) playing the user simulator.
    resume : continue after the last complete round of ``out``.
    seed : round r uses ``seed + r``; the held-out tasks are drawn with ``seed + 10_000``.
    pool_size : tasks the rounds draw from.
    eval_tasks : held-out conversations evaluated before the first round and after each.
    sft_demos : demonstrations for an SFT adapter merged into the base first (0: none).
    device : ``cpu`` or ``cuda``.
    log_fn : called with a line of progress text.

    Returns
    -------
    dict
        ``{"log": [...], "baseline": held-out figures or None, "out": str}``.

    Raises
    ------
    FileExistsError
        When ``out`` holds a run and ``resume`` is false.
    ValueError
        When ``resume`` finds different settings, or for bad arguments.
    """
    import torch

    from icml25.collab import online
    from icml25.collab.train import lora_config
    from icml25.collab.worlds import get_world
    from icml25.core import require_extra

    require_extra("peft", "llm")
    require_extra("trl", "llm")
    from peft import PeftModel, get_peft_model

    cfg = cfg or OnlineConfig()
    world = get_world(world_name)
    if rounds < 1 or tasks_per_round < 1:
        raise ValueError("need rounds >= 1 and tasks-per-round >= 1")
    say = log_fn or (lambda _msg: None)
    out = Path(out)
    settings = {"policy": policy, "tasks": world_name, "user": user, "seed": seed,
                "tasks_per_round": tasks_per_round, "pool_size": pool_size,
                "eval_tasks": eval_tasks, "sft_demos": sft_demos,
                "config": dataclasses.asdict(cfg)}
    state_path = out / "state.json"
    state: dict[str, Any] = {"log": [], "baseline": None}
    if (out / "run.json").exists():
        if not resume:
            raise FileExistsError(f"{out} holds a run; pass --resume to continue it or choose "
                                  "another --out")
        saved = json.loads((out / "run.json").read_text())
        if saved != json.loads(json.dumps(settings)):
            diff = sorted(k for k in settings if saved.get(k) != json.loads(json.dumps(
                settings))[k])
            raise ValueError(f"--resume with different settings than the run in {out}: {diff}")
        if state_path.exists():
            state = json.loads(state_path.read_text())
    else:
        _write_json(out / "run.json", settings)
    done = len(state["log"])
    for stale in out.glob("round-*"):  # partial or orphaned rounds after a kill
        if stale.suffix == ".tmp" or int(stale.name.split("-")[1].split(".")[0]) >= done:
            shutil.rmtree(stale, ignore_errors=True)

    t0 = time.perf_counter()
    model, tok = load_base(policy, device)
    say(f"loaded {policy} in {time.perf_counter() - t0:.0f} s")
    for p in model.parameters():
        p.requires_grad_(False)
    if sft_demos > 0:
        sft_dir = out / "sft"
        if (sft_dir / "adapter").exists():
            model = PeftModel.from_pretrained(model, str(sft_dir / "adapter")).merge_and_unload()
        else:
            say(f"SFT on {sft_demos} demonstrations")
            torch.manual_seed(seed)
            model = sft_adapter(model, tok, world, sft_demos, cfg, sft_dir, seed, device)
        for p in model.parameters():
            p.requires_grad_(False)
    if done:
        model = PeftModel.from_pretrained(model, str(out / f"round-{done - 1:03d}" / "adapter"),
                                          is_trainable=True)
    else:
        torch.manual_seed(seed)
        model = get_peft_model(model, lora_config(cfg.lora_r, cfg.lora_alpha))
    hf = HFPolicy(model, tok, gen_batch=cfg.gen_batch)
    pool = world.tasks(pool_size, seed)
    held_out = world.tasks(eval_tasks, seed + 10_000) if eval_tasks else []
    if held_out and state.get("baseline") is None:
        state["baseline"] = evaluate(hf, world, held_out, seed=seed + 10_000,
                                     max_tokens=cfg.max_tokens)
        _write_json(state_path, _clean(state))
        say(f"before round 0: {_figures(state['baseline'])}")

    make_user = None
    if user != "rule":
        from icml25.collab.chat import load_chat_model
        from icml25.collab.simulator import UserSimulator

        chat_user = load_chat_model(user)

        def make_user(task: Any) -> Any:
            desc, goal = world.describe(task)
            return UserSimulator(chat_user, desc, goal)

    def train(pairs: list[dict[str, Any]], round_seed: int) -> float:
        return dpo_round(model, tok, pairs, cfg, out / "trl-work", round_seed, device)

    def record(r: int, data: online.RoundData, loss: float) -> dict[str, Any]:
        mrs = [x for row in data.rewards for x in row if math.isfinite(x)]
        entry: dict[str, Any] = {
            "tasks": len(data.tasks), "candidates": sum(len(c) for c in data.candidates),
            "mr_mean": sum(mrs) / len(mrs) if mrs else math.nan,
            "mr_chosen_mean": (sum(p["mr_chosen"] for p in data.pairs) / len(data.pairs)
                               if data.pairs else math.nan),
            "seconds": {k: round(v, 3) for k, v in data.seconds.items()},
            "cpu_seconds": {k: round(v, 3) for k, v in data.cpu_seconds.items()}}
        if held_out:
            ev = evaluate(hf, world, held_out, seed=seed + 10_000, max_tokens=cfg.max_tokens)
            entry["eval"] = {k: ev[k] for k in ("n", "success", "interactivity")}
        return entry

    def save(log: list[dict[str, Any]], data: online.RoundData) -> None:
        r = len(log) - 1
        final = out / f"round-{r:03d}"
        tmp = final.with_name(final.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(str(tmp / "adapter"))
        write_jsonl(trl_rows(data.pairs), tmp / "pairs.jsonl")
        write_jsonl([
            {"task": _task_dict(t), "prompt": h, "candidates": [_clean(s.to_dict()) | {
                "samples": None} for s in row]}
            for t, h, row in zip(data.tasks, data.histories, data.scores, strict=True)],
            tmp / "rewards.jsonl")
        write_jsonl([_clean(log[-1])], tmp / "metrics.jsonl")
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        state["log"] = _clean(log)
        _write_json(state_path, state)
        e = log[-1]
        say(f"round {r}: {e['pairs']} pairs, loss {e['loss']:.4f}, seconds {e['seconds']}"
            + (f", {_figures(e['eval'])}" if "eval" in e else ""))

    log = online.run_rounds(hf, world, pool, cfg, rounds=rounds, tasks_per_round=tasks_per_round,
                            seed=seed, train=train, log=state["log"], save=save, record=record,
                            user=make_user)
    return {"log": _clean(log), "baseline": state.get("baseline"), "out": str(out)}


def _figures(ev: dict[str, Any]) -> str:
    return (f"success {ev['success']['rate']:.3f}, "
            f"interactivity {ev['interactivity']['rate']:.3f} (n={ev['n']})")


def _task_dict(task: Any) -> Any:
    if dataclasses.is_dataclass(task):
        return json.loads(json.dumps(dataclasses.asdict(task), default=str))
    return str(task)


def save_tiny_policy(folder: str | Path, world_name: str = "ask-or-guess-nl", *,
                     hidden: int = 32, layers: int = 2, seed: int = 0) -> Path:
    """Save a random tiny Llama and a word-level tokenizer over ``world_name``'s dialogues to
    ``folder`` (usable as ``--policy hf:FOLDER``); offline, for tests and rehearsals.

    Examples
    --------
    >>> import tempfile
    >>> d = save_tiny_policy(tempfile.mkdtemp(), hidden=16, layers=1)
    >>> (d / "config.json").exists()
    True
    """
    import numpy as np

    from icml25.collab.train import tiny_causal_lm
    from icml25.collab.worlds import THANKS, WRONG, get_world

    world = get_world(world_name)
    rng = np.random.default_rng(seed)
    texts = [THANKS, WRONG, "I just need it done. Never mind. [[TERMINATE CHAT]]"]
    for t in world.tasks(300, seed):
        for ask in (True, False):
            texts += [m["content"] for m in world.demonstration(t, ask, rng)]
    model, tok = tiny_causal_lm(texts, hidden=hidden, layers=layers, seed=seed)
    folder = Path(folder)
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder
