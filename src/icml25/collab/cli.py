"""``icml25 collab``: multiturn-aware rewards for candidate replies, DPO pairs from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    help="CollabLLM: multiturn-aware rewards, a robust user simulator, DPO data.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

_MODEL_HELP = ("Backend: openai:NAME@URL (any OpenAI-compatible endpoint), openai:NAME, "
               "hf:DIR (local transformers model), gguf:FILE (through transformers + gguf), "
               "gemma-270m (the shipped Gemma 3 270M base model: offline, slow, a smoke test; "
               "it does not follow instructions), scripted:echo (offline, no model).")

TokenCounter = Annotated[str, typer.Option(
    help="Token counter for the cost term: approx | tiktoken:ENCODING (offline).")]


@app.callback()
def _main() -> None:
    """CollabLLM: multiturn-aware rewards, a robust user simulator, DPO data."""


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


def _load_items(path: Path, required: tuple[str, ...] = ("history", "candidates")
                ) -> list[dict[str, Any]]:
    if str(path).startswith("builtin:"):  # the shipped fixtures: builtin:all|document|code|math
        from icml25.collab.tasks import builtin_tasks

        kind = str(path).split(":", 1)[1]
        return builtin_tasks(None if kind == "all" else kind)
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        from icml25.collab.dataset import read_jsonl

        items = read_jsonl(path)
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise ValueError(f"item {i + 1} must be a JSON object")  # 1-based, like lines
        for key in required:
            if key not in it:
                raise ValueError(f"item {i + 1} lacks {key!r} (needs {', '.join(required)}; "
                                 "optional: task, reference, metric)")
    return items


def _hidden_goal(it: dict[str, Any]) -> str:
    """What only the simulated user sees: the complete request and the reference artifact."""
    prompt, ref = str(it.get("prompt") or ""), str(it.get("reference") or "")
    if prompt and ref:
        return f"Complete request: {prompt}\n\nReference (what you want in the end):\n{ref}"
    return prompt or ref


def _task_metric(spec: Any, item_index: int):
    """The task metric an item names; ``item_index`` is 0-based, messages count from 1."""
    from icml25.collab.reward import bleu_task_metric, code_task_metric, math_task_metric

    if spec is None:
        return None
    if not isinstance(spec, dict) or "type" not in spec:
        raise ValueError(f"item {item_index + 1}: metric must be an object with a 'type'")
    kind = spec["type"]
    needs = {"bleu": "reference", "math": "answer", "code": "tests"}
    if kind not in needs:
        raise ValueError(f"item {item_index + 1}: unknown metric type {kind!r} (bleu, math, code)")
    if needs[kind] not in spec:
        raise ValueError(f"item {item_index + 1}: a {kind!r} metric needs {needs[kind]!r}")
    if kind == "bleu":
        return bleu_task_metric(str(spec["reference"]))
    if kind == "math":
        return math_task_metric(str(spec["answer"]))
    return code_task_metric(list(spec["tests"]), timeout_s=float(spec.get("timeout_s", 10.0)))


def _parse_weights(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    out = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"weight {part!r} must look like name=value")
        out[name.strip()] = float(value)
    return out


@app.command("reward")
def reward_cmd(
    path: Annotated[Path, typer.Argument(help="JSON/JSONL: {task, reference, history, "
                                              "candidates, metric:{type: bleu|math|code, ...}}")],
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "scripted:echo",
    user_model: Annotated[str | None, typer.Option(help="User-simulator backend "
                                                        "(default: --model).")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Judge backend (default: "
                                                         "--model).")] = None,
    window: Annotated[int, typer.Option(help="Rounds simulated after each candidate (w).")] = 2,
    samples: Annotated[int, typer.Option(help="Forward samples per candidate (S).")] = 3,
    lam: Annotated[float, typer.Option(help="Token penalty lambda.")] = 5e-4,
    tokens: TokenCounter = "approx",
    weights: Annotated[str | None, typer.Option(
        help="User-defined weights, e.g. task=1,interactivity=0.5,token_cost=-1.")] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge",
                                           help="Skip the interactivity judge.")] = False,
    concurrency: Annotated[int, typer.Option(help="Max requests in flight per backend.")] = 16,
    timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds.")] = 60.0,
    retries: Annotated[int, typer.Option(help="Attempts per request.")] = 3,
    dpo_out: Annotated[Path | None, typer.Option(help="Write TRL DPO pairs (JSONL).")] = None,
    min_gap: Annotated[float, typer.Option(help="Minimum MR gap for a DPO pair.")] = 0.0,
    out: Annotated[Path | None, typer.Option(help="Write full results (JSON).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Multiturn-aware reward of each candidate reply in a conversation file."""
    import asyncio

    from icml25.collab.chat import RetryPolicy, load_chat_model
    from icml25.collab.dataset import ScoredTurn, dpo_rows, write_jsonl
    from icml25.collab.metrics import InteractivityJudge, token_counter
    from icml25.collab.reward import MultiturnReward
    from icml25.collab.simulator import Assistant, UserSimulator

    try:
        items = _load_items(path)
        policy = RetryPolicy(max_attempts=retries, timeout_s=timeout)
        cache: dict[str, Any] = {}

        def backend(spec: str):
            if spec not in cache:
                cache[spec] = load_chat_model(spec, max_concurrency=concurrency, retry=policy)
            return cache[spec]

        assistant_model = backend(model)
        user_m = backend(user_model or model)
        judge = None if no_judge else InteractivityJudge(backend(judge_model or model))
        w = _parse_weights(weights)
        count = token_counter(tokens)
        jobs = []
        for i, it in enumerate(items):
            mr = MultiturnReward(
                UserSimulator(user_m, str(it.get("task", "")), _hidden_goal(it)),
                Assistant(assistant_model), task_metric=_task_metric(it.get("metric"), i),
                judge=judge, window=window, n_samples=samples, weights=w, token_penalty=lam,
                count_tokens=count)
            mr._check()
            mr._weights()
            jobs.append((mr, it))
    except (ValueError, TypeError, KeyError, ImportError) as exc:
        raise _fail(str(exc)) from None

    async def run_all():
        from contextlib import AsyncExitStack

        async with AsyncExitStack() as stack:
            for m in cache.values():
                await stack.enter_async_context(m)
            return await asyncio.gather(*(mr.score(it["history"], it["candidates"])
                                          for mr, it in jobs))

    try:
        results = asyncio.run(run_all())
    except (ValueError, TypeError) as exc:
        raise _fail(str(exc)) from None
    report = [{"item": i, "scores": [s.to_dict() for s in scores]}
              for i, scores in enumerate(results)]
    # the main result failed when not one candidate got a reward (every simulated branch failed)
    all_failed = all(s["mr"] is None for r in report for s in r["scores"])
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    if dpo_out is not None:
        turns = [ScoredTurn.from_scores(it["history"], scores, conv_id=str(i))
                 for i, ((_, it), scores) in enumerate(zip(jobs, results, strict=True))]
        n = write_jsonl(dpo_rows(turns, min_gap=min_gap), dpo_out)
        typer.echo(f"wrote {n} DPO pairs to {dpo_out}", err=True)
    if as_json:
        typer.echo(json.dumps([{"item": r["item"], "mr": [s["mr"] for s in r["scores"]],
                                "std": [s["std"] for s in r["scores"]],
                                "n_valid": [s["n_valid"] for s in r["scores"]]}
                               for r in report]))
        if all_failed:
            raise _no_reward()
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Multiturn-aware reward (w={window}, S={samples})")
    for col in ("item", "candidate", "MR", "std", "valid", "metrics", "failures"):
        table.add_column(col)
    for r in report:
        for s in r["scores"]:
            fails = sum(len(x["failures"]) for x in s["samples"])
            mets = ", ".join(f"{k}={v:.3g}" for k, v in s["metrics"].items() if v is not None)
            mr = "nan" if s["mr"] is None else f"{s['mr']:.4f}"
            sd = "nan" if s["std"] is None else f"{s['std']:.4f}"
            table.add_row(str(r["item"]), s["candidate"][:40], mr, sd,
                          f"{s['n_valid']}/{samples}", mets, str(fails))
    Console().print(table)
    if all_failed:
        raise _no_reward()


def _no_reward() -> typer.Exit:
    typer.echo("error: no candidate got a reward: every simulated branch failed (is the "
               "model endpoint reachable? see the failures column)", err=True)
    return typer.Exit(code=1)


def _backends(specs: list[str], concurrency: int, timeout: float, retries: int) -> list[Any]:
    from icml25.collab.chat import RetryPolicy, load_chat_model

    policy = RetryPolicy(max_attempts=retries, timeout_s=timeout)
    cache: dict[str, Any] = {}
    for spec in specs:
        if spec not in cache:
            cache[spec] = load_chat_model(spec, max_concurrency=concurrency, retry=policy)
    return [cache[s] for s in specs]


async def _in_session(models: list[Any], coro_fn):
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        for m in {id(m): m for m in models}.values():
            await stack.enter_async_context(m)
        return await coro_fn()


@app.command("simulate")
def simulate_cmd(
    path: Annotated[Path, typer.Argument(help="JSON/JSONL of {task, prompt, reference} items, "
                                              "or builtin:all|document|code|math.")],
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "scripted:echo",
    user_model: Annotated[str | None, typer.Option(help="User-simulator backend.")] = None,
    max_turns: Annotated[int, typer.Option(help="Assistant turns at most.")] = 6,
    proactive: Annotated[bool, typer.Option(help="Give the assistant the proactive "
                                                 "system prompt.")] = False,
    concurrency: Annotated[int, typer.Option(help="Max requests in flight.")] = 16,
    timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds.")] = 60.0,
    retries: Annotated[int, typer.Option(help="Attempts per request.")] = 3,
    out: Annotated[Path | None, typer.Option(help="Write conversations (JSONL).")] = None,
) -> None:
    """Simulate conversations between the user simulator and an assistant."""
    import asyncio

    from icml25.collab.dataset import write_jsonl
    from icml25.collab.engine import simulate_conversation
    from icml25.collab.simulator import PROACTIVE_SYSTEM_PROMPT, Assistant, UserSimulator

    try:
        items = _load_items(path, ("task",))
        if max_turns < 1:
            raise ValueError("--max-turns must be >= 1")
        am, um = _backends([model, user_model or model], concurrency, timeout, retries)
    except (ValueError, TypeError, ImportError) as exc:
        raise _fail(str(exc)) from None
    assistant = Assistant(am, PROACTIVE_SYSTEM_PROMPT if proactive else None)

    async def run():
        return await asyncio.gather(*(simulate_conversation(
            UserSimulator(um, str(it["task"]), _hidden_goal(it)), assistant,
            max_turns=max_turns) for it in items))

    convs = asyncio.run(_in_session([am, um], run))
    rows = [{"messages": c.messages, "terminated": c.terminated, "failures": c.failures}
            for c in convs]
    if out is not None:
        write_jsonl(rows, out)
        typer.echo(f"wrote {len(rows)} conversations to {out}", err=True)
    else:
        for r in rows:
            typer.echo(json.dumps(r))


@app.command("build-dataset")
def build_dataset_cmd(
    path: Annotated[Path, typer.Argument(help="JSON/JSONL of {task, prompt, reference, metric} "
                                              "items, or builtin:all|document|code|math.")],
    out_dir: Annotated[Path, typer.Option(help="Writes dpo.jsonl, sft.jsonl, "
                                               "conversations.jsonl here.")],
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "scripted:echo",
    user_model: Annotated[str | None, typer.Option(help="User-simulator backend.")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Judge backend.")] = None,
    window: Annotated[int, typer.Option(help="MR window (w).")] = 2,
    samples: Annotated[int, typer.Option(help="MR samples (S).")] = 3,
    lam: Annotated[float, typer.Option(help="Token penalty lambda.")] = 5e-4,
    tokens: TokenCounter = "approx",
    max_turns: Annotated[int, typer.Option(help="Assistant turns per conversation.")] = 4,
    min_gap: Annotated[float, typer.Option(help="Minimum MR gap for a DPO pair.")] = 0.02,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Skip the judge.")] = False,
    concurrency: Annotated[int, typer.Option(help="Max requests in flight.")] = 16,
    timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds.")] = 60.0,
    retries: Annotated[int, typer.Option(help="Attempts per request.")] = 3,
) -> None:
    """Grow conversations with MR-best replies (plain vs proactive candidates); export TRL
    DPO pairs and SFT rows."""
    import asyncio

    from icml25.collab.dataset import dpo_rows, sft_rows, write_jsonl
    from icml25.collab.engine import grow_conversation
    from icml25.collab.metrics import InteractivityJudge, token_counter
    from icml25.collab.reward import MultiturnReward
    from icml25.collab.simulator import PROACTIVE_SYSTEM_PROMPT, Assistant, UserSimulator

    try:
        items = _load_items(path, ("task",))
        am, um, jm = _backends([model, user_model or model, judge_model or model], concurrency,
                               timeout, retries)
        judge = None if no_judge else InteractivityJudge(jm)
        count = token_counter(tokens)
        jobs = []
        for i, it in enumerate(items):
            mr = MultiturnReward(UserSimulator(um, str(it["task"]), _hidden_goal(it)),
                                 Assistant(am), task_metric=_task_metric(it.get("metric"), i),
                                 judge=judge, window=window, n_samples=samples,
                                 token_penalty=lam, count_tokens=count)
            mr._check()
            jobs.append(mr)
        if max_turns < 1 or min_gap < 0:
            raise ValueError("--max-turns must be >= 1 and --min-gap >= 0")
    except (ValueError, TypeError, KeyError, ImportError) as exc:
        raise _fail(str(exc)) from None
    policies = [Assistant(am), Assistant(am, PROACTIVE_SYSTEM_PROMPT)]

    async def run():
        return await asyncio.gather(*(grow_conversation(mr, policies, max_turns=max_turns,
                                                        conv_id=str(i))
                                      for i, mr in enumerate(jobs)))

    convs = asyncio.run(_in_session([am, um, jm], run))
    turns = [t for c in convs for t in c.turns]
    n_dpo = write_jsonl(dpo_rows(turns, min_gap=min_gap), out_dir / "dpo.jsonl")
    n_sft = write_jsonl(sft_rows(turns), out_dir / "sft.jsonl")
    write_jsonl(({"conv_id": str(i), "messages": c.messages, "terminated": c.terminated,
                  "turns": [{"prompt": t.prompt, "candidates": t.candidates,
                             "scores": [x if x == x else None for x in t.scores]}
                            for t in c.turns], "failures": c.failures}
                 for i, c in enumerate(convs)), out_dir / "conversations.jsonl")
    typer.echo(f"{len(convs)} conversations, {len(turns)} scored turns: {n_dpo} DPO pairs "
               f"(gap >= {min_gap}), {n_sft} SFT rows in {out_dir}")
    if n_dpo == 0:
        typer.echo(_why_no_pairs(turns, min_gap), err=True)


def _check_training_rows(rows: list[dict[str, Any]], method: str, path: Path) -> None:
    """One clear error for a file that cannot train: empty, or rows of the wrong shape."""
    if not rows:
        hint = (" (build-dataset writes an empty dpo.jsonl when no turn's candidates differed "
                "by --min-gap; it says so and why)" if method == "dpo" else "")
        raise ValueError(f"{path} has no rows: nothing to train on{hint}")
    need = ("prompt", "chosen", "rejected") if method == "dpo" else ("messages",)
    for i, r in enumerate(rows, 1):
        missing = [k for k in need if not isinstance(r, dict) or k not in r]
        if missing:
            raise ValueError(f"{path}: row {i} lacks {', '.join(missing)} (--method {method} "
                             f"needs {', '.join(need)} in every row)")


def _why_no_pairs(turns: list[Any], min_gap: float) -> str:
    """Why a dataset has no DPO pairs, in one line a user can act on."""
    gaps, unscored = [], 0
    for t in turns:
        valid = [x for x in t.scores if x == x]
        unscored += len(valid) < 2
        if len(valid) >= 2:
            gaps.append(max(valid) - min(valid))
    if not turns:
        return "no DPO pairs: no turn was scored (every conversation ended at once)"
    parts = [f"no DPO pairs: {len(turns)} scored turns"]
    if gaps:
        parts.append(f"the largest MR gap between a turn's candidates was {max(gaps):.3g} "
                     f"(< --min-gap {min_gap})")
    if unscored:
        parts.append(f"{unscored} turns had fewer than two candidates with a valid MR "
                     "(see failures in conversations.jsonl)")
    same = sum(len(set(t.candidates)) < 2 for t in turns)
    if same:
        parts.append(f"in {same} turns every candidate was the same text (a model that "
                     "ignores the system prompt, like scripted:echo, cannot make pairs)")
    return "; ".join(parts)


@app.command("train")
def train_cmd(
    data: Annotated[Path, typer.Argument(help="TRL-format JSONL (from reward --dpo-out or "
                                              "build-dataset).")],
    out_dir: Annotated[Path, typer.Option(help="Where the trained model is saved.")],
    method: Annotated[str, typer.Option(help="dpo (offline DPO) or sft.")] = "dpo",
    base: Annotated[str, typer.Option(help="'tiny' (random tiny model, offline test) or a "
                                           "local Hugging Face model directory.")] = "tiny",
    max_steps: Annotated[int, typer.Option(help="Optimizer steps.")] = 2,
    learning_rate: Annotated[float | None, typer.Option(help="Default: 5e-6 DPO, 1e-5 SFT "
                                                             "(the paper's).")] = None,
    beta: Annotated[float, typer.Option(help="DPO beta.")] = 0.1,
    batch_size: Annotated[int, typer.Option(help="Per-device batch size.")] = 2,
    gpu: Annotated[bool, typer.Option(help="Train on the GPU (bf16).")] = False,
    lora_r: Annotated[int | None, typer.Option(help="Train LoRA adapters of this rank (peft) "
                                                    "instead of every weight; the paper: 32.")
                      ] = None,
    lora_alpha: Annotated[int, typer.Option(help="LoRA alpha (the paper: 16).")] = 16,
) -> None:
    """Train with TRL on CPU (tiny model) or GPU (a local model) from exported JSONL."""
    if method not in ("dpo", "sft"):
        raise _fail(f"--method must be dpo or sft, got {method!r}")
    if max_steps < 1 or not data.is_file():
        raise _fail(f"need --max-steps >= 1 and an existing data file ({data})")
    from icml25.collab.dataset import read_jsonl
    from icml25.collab.train import _texts, tiny_causal_lm, train_dpo, train_sft

    try:
        rows = read_jsonl(data)
        _check_training_rows(rows, method, data)
        if lora_r is not None and lora_r < 1:
            raise ValueError(f"--lora-r must be >= 1, got {lora_r}")
        if base == "tiny":
            model, tok = tiny_causal_lm(_texts(rows))
        else:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            if not Path(base).is_dir():
                raise ValueError(f"--base must be 'tiny' or a local model directory: {base}")
            model = AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
            tok = AutoTokenizer.from_pretrained(base, local_files_only=True)
    except (ValueError, OSError) as exc:
        raise _fail(str(exc)) from None
    kw = {"max_steps": max_steps, "batch_size": batch_size, "use_cpu": not gpu,
          "lora_r": lora_r, "lora_alpha": lora_alpha}
    if gpu:
        kw["bf16"] = True
    if learning_rate is not None:
        kw["learning_rate"] = learning_rate
    if method == "dpo":
        out = train_dpo(model, tok, rows, out_dir / "trainer", beta=beta, **kw)
    else:
        out = train_sft(model, tok, rows, out_dir / "trainer", **kw)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    losses = [h["loss"] for h in out["log_history"] if "loss" in h]
    typer.echo(f"{method}: {out['global_step']} steps, losses {losses}; saved to {out_dir}")


@app.command("train-lm")
def train_lm_cmd(
    out: Annotated[Path, typer.Option(help="Where the stage models go (sft/, w{w}/offline_dpo/, "
                                           "w{w}/online_dpo/); an interrupted run resumes.")],
    sft_steps: Annotated[int, typer.Option(help="SFT optimizer steps.")] = 2500,
    rounds: Annotated[int, typer.Option(help="Online DPO rounds per window.")] = 6,
    tasks_per_round: Annotated[int, typer.Option(help="Tasks sampled per online round.")] = 128,
    windows: Annotated[str, typer.Option(help="MR windows of the ablation, comma-separated.")
                       ] = "0,1,2",
    seed: Annotated[int, typer.Option(help="Seed of the model and the training runs.")] = 0,
    threads: Annotated[int | None, typer.Option(help="torch CPU threads (default: torch's).")
                       ] = None,
    float16: Annotated[bool, typer.Option("--float16", help="Store each stage's weights in "
                                                            "half precision (what ships).")
                       ] = False,
) -> None:
    """Train the small policy LM through the CollabLLM loop: SFT, then offline and online DPO
    on multiturn-aware rewards for each window (the shipped models' recipe)."""
    try:
        ws = tuple(int(w) for w in windows.split(","))
        if sft_steps < 1 or rounds < 1 or tasks_per_round < 1 or min(ws) < 0:
            raise ValueError("--sft-steps, --rounds and --tasks-per-round must be >= 1 and "
                             "windows >= 0")
    except ValueError as exc:
        raise _fail(str(exc)) from None
    from icml25.core import require_extra

    require_extra("torch", "torch")
    import sys

    import torch

    from icml25.collab import lm_pipeline as lp

    if threads:
        torch.set_num_threads(threads)
    recipe = lp.Recipe(seed=seed, sft_steps=sft_steps, online_rounds=rounds,
                       tasks_per_round=tasks_per_round, windows=ws)
    command = "icml25 collab " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else ""
    lp.train_pipeline(out, recipe, command=command or lp.SHIPPED_COMMAND, float16=float16,
                      log=lambda m: typer.echo(m, err=True))
    typer.echo(f"trained every stage into {out}; evaluate with "
               f"`icml25 collab evaluate-lm --model {out}`")


@app.command("evaluate-lm")
def evaluate_lm_cmd(
    model: Annotated[Path | None, typer.Option(help="A pipeline directory (from train-lm) or one "
                                                    "stage's model directory; default: the "
                                                    "shipped models.")] = None,
    n: Annotated[int, typer.Option(help="Held-out tasks.")] = 300,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")
                       ] = False,
) -> None:
    """Task success, interactivity, tokens and reward (95% intervals) of each stage on
    held-out tasks, with the rule-based user."""
    from icml25.core import require_extra

    require_extra("torch", "torch")
    from icml25.collab import lm_pipeline as lp
    from icml25.collab import loop
    from icml25.collab.policy import PolicyLM

    if n < 1:
        raise _fail("--n must be >= 1")
    root = model or lp.SHIPPED_DIR
    if not root.is_dir():
        raise _fail(f"no such model directory: {root}")
    try:
        if (root / "model.safetensors").exists():
            res = {root.name: loop.evaluate(PolicyLM.load(root), lp.held_out_tasks(n),
                                            seed=seed)}
        else:
            windows = sorted(int(p.name[1:]) for p in root.glob("w*") if p.name[1:].isdigit())
            res = lp.evaluate_pipeline(root, n_eval=n, seed=seed, windows=windows)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({k: {m: v for m, v in r.items() if m != "examples"}
                               for k, r in res.items()}, indent=2))
        return
    typer.echo(f"{'stage':<18} {'success':>20} {'interactivity':>20} {'tokens':>7}")
    def rate(r: dict[str, Any], key: str) -> str:
        lo, hi = r[f"{key}_ci"]
        return f"{100 * r[key]:5.1f}% [{100 * lo:4.1f}, {100 * hi:4.1f}]"

    for k, r in res.items():
        typer.echo(f"{k:<18} {rate(r, 'success'):>20} {rate(r, 'interactivity'):>20} "
                   f"{r['tokens']:7.1f}")


@app.command("train-online")
def train_online_cmd(
    policy: Annotated[str, typer.Option(help="hf:DIR (a local transformers causal LM folder) or "
                                             "gemma-270m (the shipped Gemma 3 270M, offline).")],
    out: Annotated[Path, typer.Option(help="Run folder: round-NNN/ (adapter, pairs.jsonl, "
                                           "rewards.jsonl, metrics.jsonl), state.json.")],
    user: Annotated[str, typer.Option(help="rule (the world's rule-based user) or a chat-model "
                                           "spec playing the user simulator.")] = "rule",
    tasks: Annotated[str, typer.Option(help="Task world: ask-or-guess-nl | math-roots | "
                                            "ask-or-guess.")] = "ask-or-guess-nl",
    rounds: Annotated[int, typer.Option(help="Online DPO rounds in all.")] = 3,
    tasks_per_round: Annotated[int, typer.Option(help="Tasks sampled per round.")] = 128,
    lora_r: Annotated[int, typer.Option(help="LoRA rank (paper: 32).")] = 32,
    lora_alpha: Annotated[int, typer.Option(help="LoRA alpha (paper: 16).")] = 16,
    resume: Annotated[bool, typer.Option("--resume", help="Continue after the last complete "
                                                          "round in --out.")] = False,
    window: Annotated[int, typer.Option(help="MR window w (0 = single-turn reward).")] = 2,
    n_samples: Annotated[int, typer.Option(help="Forward samples per candidate.")] = 2,
    candidates: Annotated[int, typer.Option(help="Candidate replies per task.")] = 2,
    max_tokens: Annotated[int, typer.Option(help="Tokens per generated reply.")] = 32,
    min_gap: Annotated[float, typer.Option(help="Keep a pair only when MR(chosen) - "
                                                "MR(rejected) >= this (paper: 0.1).")] = 0.1,
    lr: Annotated[float, typer.Option(help="DPO learning rate of the adapters.")] = 1e-4,
    beta: Annotated[float, typer.Option(help="DPO beta (paper: 0.1).")] = 0.1,
    batch_size: Annotated[int, typer.Option(help="DPO pairs per step.")] = 4,
    sft_demos: Annotated[int, typer.Option(help="SFT demonstrations (LoRA, merged) before the "
                                                "rounds; 0 = none.")] = 0,
    eval_tasks: Annotated[int, typer.Option(help="Held-out conversations evaluated before the "
                                                 "first round and after each; 0 = none.")] = 0,
    pool_size: Annotated[int, typer.Option(help="Tasks the rounds draw from.")] = 2000,
    seed: Annotated[int, typer.Option(help="Round r uses seed + r.")] = 0,
    device: Annotated[str, typer.Option(help="cpu | cuda.")] = "cpu",
    threads: Annotated[int | None, typer.Option(help="torch CPU threads (default: torch's).")
                       ] = None,
) -> None:
    """Online DPO rounds for any transformers causal LM: sample candidates, score them with the
    multiturn-aware reward, build pairs, train one DPO round with TRL on LoRA adapters."""
    from icml25.collab.worlds import WORLDS

    try:
        if tasks not in WORLDS:
            raise ValueError(f"unknown --tasks {tasks!r}; known: {', '.join(sorted(WORLDS))}")
        if not (policy == "gemma-270m" or (policy.startswith("hf:") and len(policy) > 3)):
            raise ValueError(f"--policy {policy!r}: use hf:DIR or gemma-270m")
        if rounds < 1 or tasks_per_round < 1 or eval_tasks < 0 or sft_demos < 0:
            raise ValueError("--rounds and --tasks-per-round must be >= 1, --eval-tasks and "
                             "--sft-demos >= 0")
        from icml25.collab.hf_online import OnlineConfig

        cfg = OnlineConfig(window=window, n_samples=n_samples, n_candidates=candidates,
                           max_tokens=max_tokens, min_gap=min_gap, lr=lr, beta=beta,
                           batch_size=batch_size,
                           lora_r=lora_r, lora_alpha=lora_alpha)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    from icml25.core import require_extra

    require_extra("torch", "torch")
    import torch

    from icml25.collab.hf_online import train_online

    if threads:
        torch.set_num_threads(threads)
    try:
        res = train_online(policy, tasks, out, rounds=rounds, tasks_per_round=tasks_per_round,
                           cfg=cfg, user=user, resume=resume, seed=seed, pool_size=pool_size,
                           eval_tasks=eval_tasks, sft_demos=sft_demos, device=device,
                           log_fn=lambda m: typer.echo(m, err=True))
    except (FileExistsError, ValueError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(json.dumps({"out": res["out"], "rounds": len(res["log"]),
                           "log": res["log"], "baseline": res["baseline"] and {
                               k: res["baseline"][k] for k in ("n", "success", "interactivity")}},
                          indent=1))
