"""The policy LM and the CollabLLM loop (SFT -> MR-ranked pairs -> DPO, online rounds)."""

import asyncio

import pytest

torch = pytest.importorskip("torch")

from icml25.collab import loop, world  # noqa: E402
from icml25.collab.policy import (  # noqa: E402
    ASSISTANT,
    BOS,
    EOS,
    PAD,
    UNK,
    USER,
    PolicyChat,
    PolicyLM,
    WordTokenizer,
    render_ids,
)


@pytest.fixture(scope="module")
def tok():
    return loop.build_tokenizer(n=300)


@pytest.fixture(scope="module")
def tiny_sft(tok):
    """A one-layer policy after a short SFT: it talks the world's language, imperfectly."""
    torch.manual_seed(0)
    pol = PolicyLM.new(tok, seq_len=80, d_model=48, n_layers=1, n_heads=2, seed=0)
    loop.train_sft(pol, world.make_tasks(300, seed=11), steps=60, batch_size=32, lr=3e-3)
    return pol


class ScriptedPolicy(PolicyLM):
    """Replies drawn (with the caller's generator) from: ask, or deliver one of the options.

    Its log-probabilities, and so DPO, are the real model's; only sampling is scripted, so the
    loop's pairs exist without a long training run.
    """

    def generate(self, conversations, *, temperature=1.0, max_tokens=32, generator=None):
        out = []
        for conv in conversations:
            task = next(t for t in TASKS if t.request == conv[0]["content"])
            if len(conv) > 1:  # after a question: deliver the goal
                out.append(task.answer(task.goal))
                continue
            k = int(torch.randint(4, (1,), generator=generator))
            out.append(task.spec.question if k == 3 else task.answer(task.spec.options[k]))
        return out


TASKS = world.make_tasks(200, seed=31)


def _copy(pol):
    import copy

    return PolicyLM(copy.deepcopy(pol.model), pol.tok)


def test_tokenizer_round_trip_and_unknown_words(tok):
    text = world.make_tasks(1, seed=0)[0].request
    assert tok.decode(tok.encode(text)) == text
    assert tok.encode("zyzzyva") == [UNK]
    with pytest.raises(ValueError, match="special tokens"):
        WordTokenizer(["a", "b"])


def test_batched_generation_equals_one_at_a_time(tiny_sft):
    convs = [[{"role": "user", "content": t.request}] for t in world.make_tasks(5, seed=4)]
    convs[1] += [{"role": "assistant", "content": "which format do you want : us , european "
                                                  "or iso ?"},
                 {"role": "user", "content": "the iso format , please ."}]
    batched = tiny_sft.generate(convs, temperature=0)
    single = [tiny_sft.generate([c], temperature=0)[0] for c in convs]
    assert batched == single
    assert all(isinstance(t, str) and t for t in batched)


def _decode_full(model, prompts, budget, temperature, generator):
    """Sampling without a cache (the whole prefix re-run each step): the reference."""
    out = []
    for p in prompts:
        seq, toks = list(p), []
        for _ in range(budget):
            logits = model(torch.tensor([seq]))[0, -1].float()
            logits[[PAD, BOS, UNK]] = -float("inf")
            if temperature <= 0:
                tok = int(logits.argmax())
            else:
                probs = torch.softmax(logits / temperature, -1)
                tok = int(torch.multinomial(probs, 1, generator=generator))
            if tok in (EOS, USER, ASSISTANT):
                break
            toks.append(tok)
            seq.append(tok)
        out.append(toks)
    return out


def test_cached_decoding_equals_rerunning_the_whole_prefix(tiny_sft):
    from icml25.collab.policy import _decode_cached

    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(6, len(tiny_sft.tok), (int(n),), generator=g).tolist()
               for n in (5, 17, 9, 30)]
    tiny_sft.model.eval()
    assert _decode_cached(tiny_sft.model, prompts, 12, 0.0, None) == \
        _decode_full(tiny_sft.model, prompts, 12, 0.0, None)


def test_a_conversation_longer_than_the_context_keeps_its_latest_turns(tiny_sft):
    task = TASKS[0]
    long = [{"role": "user", "content": "please " * 200},
            {"role": "user", "content": task.request}]
    short = [{"role": "user", "content": task.request}]
    assert tiny_sft.generate([long], temperature=0, max_tokens=8)[0]
    with pytest.raises(ValueError, match="max_tokens"):
        tiny_sft.generate([short], max_tokens=0)


def test_policy_chat_gathers_concurrent_calls_into_one_batch(tiny_sft):
    chat = PolicyChat(tiny_sft, temperature=0)
    convs = [[{"role": "user", "content": t.request}] for t in world.make_tasks(6, seed=5)]

    async def run():
        return await asyncio.gather(*(chat.chat(c) for c in convs))

    results = asyncio.run(run())
    assert chat.calls == 6 and chat.batches == 1
    assert [r.text for r in results] == tiny_sft.generate(convs, temperature=0)


def test_pairs_take_the_highest_and_lowest_mr():
    tasks = world.make_tasks(3, seed=0)
    cands = [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]]
    rewards = [[0.2, 0.9, -0.1], [0.5, 0.5, 0.55], [1.0, 0.0, 0.3]]
    pairs = loop.preference_pairs(tasks, cands, rewards, min_gap=0.1)
    assert [(p["chosen"], p["rejected"]) for p in pairs] == [("b", "c"), ("g", "h")]
    assert pairs[0]["mr_chosen"] == 0.9 and pairs[0]["mr_rejected"] == -0.1


def test_render_ids_marks_roles_and_opens_the_reply(tok):
    ids = render_ids(tok, [{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}],
                     generation_prompt=True)
    assert tok.vocab[ids[0]] == "<bos>" and tok.vocab[ids[1]] == "<user>"
    assert tok.vocab[ids[-1]] == "<assistant>"


def _scripted(pol):
    return ScriptedPolicy(_copy(pol).model, pol.tok)


def test_a_dpo_round_raises_the_chosen_vs_rejected_margin(tiny_sft):
    pol = _scripted(tiny_sft)
    ref = loop._frozen(pol)
    cfg = loop.LoopConfig(window=1, n_samples=1, lr=1e-3, epochs=2, batch_size=8)
    pairs = loop.collect_pairs(pol, TASKS[:40], cfg, seed=0)
    assert pairs and all(p["mr_chosen"] - p["mr_rejected"] >= cfg.min_gap for p in pairs)
    # with w = 1 a question leads to the right answer: it is chosen over any wrong guess
    assert any(world.is_question(p["chosen"]) for p in pairs)
    assert not any(world.is_question(p["rejected"]) for p in pairs)
    with torch.no_grad():
        before = loop.dpo_margins(pol, ref, pairs).mean().item()
    opt = torch.optim.AdamW(pol.model.parameters(), lr=cfg.lr)
    loop.dpo_step(pol, ref, opt, pairs, cfg, torch.Generator().manual_seed(0))
    with torch.no_grad():
        after = loop.dpo_margins(pol, ref, pairs).mean().item()
    assert before == pytest.approx(0.0, abs=1e-4)  # the policy starts as its reference
    assert after > before + 0.5


def test_online_dpo_resumes_a_round_exactly(tiny_sft, tmp_path):
    pool = TASKS
    cfg = loop.LoopConfig(window=1, n_samples=1, lr=1e-3, epochs=1)
    straight = _scripted(tiny_sft)
    log_a = loop.online_dpo(straight, pool, cfg, rounds=2, tasks_per_round=48, seed=5)
    resumed = _scripted(tiny_sft)
    loop.online_dpo(resumed, pool, cfg, rounds=1, tasks_per_round=48, seed=5, out_dir=tmp_path)
    again = _scripted(tiny_sft)  # a fresh process would start from the SFT weights again
    log_b = loop.online_dpo(again, pool, cfg, rounds=2, tasks_per_round=48, seed=5,
                            out_dir=tmp_path)
    assert sum(r["pairs"] for r in log_a) > 0
    assert [r["pairs"] for r in log_a] == [r["pairs"] for r in log_b]
    for (k, a), b in zip(straight.model.state_dict().items(),
                         again.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), k


def test_evaluate_reports_rates_with_intervals(tiny_sft):
    res = loop.evaluate(tiny_sft, world.make_tasks(30, seed=41), seed=0)
    for key in ("success", "interactivity"):
        lo, hi = res[f"{key}_ci"]
        assert 0.0 <= lo <= res[key] <= hi <= 1.0
    assert res["n"] == 30 and res["tokens"] > 0


def test_bad_inputs_get_clear_errors(tok, tiny_sft, tmp_path):
    with pytest.raises(ValueError, match="no SFT rows"):
        loop.train_sft(PolicyLM.new(tok, seq_len=64, d_model=16, n_layers=1, n_heads=2), [],
                       steps=1)
    with pytest.raises(FileNotFoundError, match="no policy model"):
        PolicyLM.load(tmp_path / "nothing")
    with pytest.raises(ValueError, match="n_candidates"):
        loop.LoopConfig(n_candidates=1)
    # A policy whose candidates all score the same yields no pairs: said, not a silent no-op.
    same = world.make_tasks(4, seed=0)

    class Parrot(PolicyLM):
        def generate(self, conversations, **kw):
            return ["hello ." for _ in conversations]

    with pytest.raises(ValueError, match="no DPO pairs"):
        loop.offline_dpo(Parrot(tiny_sft.model, tiny_sft.tok), same, loop.LoopConfig(window=0))


def test_pipeline_trains_every_stage_resumes_and_stores_float16(tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from icml25.collab import lm_pipeline as lp

    recipe = lp.Recipe(sft_tasks=120, sft_steps=20, offline_tasks=48, online_rounds=1,
                       tasks_per_round=24, windows=(1,), d_model=32, n_layers=1, n_heads=2,
                       seq_len=80)
    tasks = {t.request: t for t in world.make_tasks(recipe.offline_tasks, lp.TRAIN_SEED + 100)
             + world.make_tasks(recipe.sft_tasks, lp.TRAIN_SEED)}

    def scripted(self, conversations, *, temperature=1.0, max_tokens=32, generator=None):
        out = []
        for conv in conversations:  # ask, or deliver one option: pairs without long training
            t = tasks[conv[0]["content"]]
            k = int(torch.randint(4, (1,), generator=generator))
            out.append(t.answer(t.goal) if len(conv) > 1 else
                       t.spec.question if k == 3 else t.answer(t.spec.options[k]))
        return out

    monkeypatch.setattr(PolicyLM, "generate", scripted)
    said = []
    dirs = lp.train_pipeline(tmp_path, recipe, command="test", float16=True, log=said.append)
    assert set(dirs) == {"sft", "w1/offline_dpo", "w1/online_dpo"}
    assert len(said) == 3
    for path in dirs.values():
        card = lp.read_card(path)
        assert card["command"] == "test" and card["recipe"]["sft_steps"] == 20
        assert card["weights"].startswith("float16")
        assert all(v.dtype == torch.float16 for v in load_file(path / "model.safetensors").values())
        assert next(PolicyLM.load(path).model.parameters()).dtype == torch.float32
    assert lp.read_card(dirs["w1/online_dpo"])["rounds"][0]["pairs"] > 0
    said.clear()
    lp.train_pipeline(tmp_path, recipe, command="test", log=said.append)
    assert said == []  # every stage was there: nothing retrained
