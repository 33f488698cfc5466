"""DPO pair selection with the gap rule; SFT rows; JSONL export in TRL's formats."""

import asyncio
import math

import pytest

from icml25.collab import (
    Assistant,
    MultiturnReward,
    ScoredTurn,
    ScriptedChatModel,
    UserSimulator,
    dpo_rows,
    read_jsonl,
    select_dpo_pair,
    sft_rows,
    write_jsonl,
)

P = [{"role": "user", "content": "Write a poem."}]


def test_chosen_is_max_rejected_is_min():
    t = ScoredTurn(P, ["a", "b", "c"], [0.2, 0.9, 0.5])
    pair = select_dpo_pair(t)
    assert pair["chosen"] == [{"role": "assistant", "content": "b"}]
    assert pair["rejected"] == [{"role": "assistant", "content": "a"}]
    assert (pair["score_chosen"], pair["score_rejected"]) == (0.9, 0.2)
    assert pair["prompt"] == P


@pytest.mark.parametrize("gap,kept", [(0.0, True), (0.49, True), (0.5, True), (0.51, False)])
def test_minimum_gap_rule(gap, kept):
    t = ScoredTurn(P, ["a", "b"], [0.25, 0.75])  # gap exactly 0.5 (exact in binary)
    assert (select_dpo_pair(t, min_gap=gap) is not None) is kept


def test_ties_nans_and_bad_gap():
    tie = ScoredTurn(P, ["a", "b"], [0.5, 0.5], stds=[0.3, 0.1])
    pair = select_dpo_pair(tie)
    assert pair["chosen"][0]["content"] == "b"  # lower std wins a tie
    assert select_dpo_pair(tie, min_gap=0.01) is None
    assert select_dpo_pair(ScoredTurn(P, ["a", "b"], [0.5, 0.5], stds=[0.1, 0.1])) is None
    assert select_dpo_pair(ScoredTurn(P, ["a", "b"], [math.nan, 0.5])) is None
    three = ScoredTurn(P, ["a", "b", "c"], [math.nan, 0.1, 0.5])
    assert select_dpo_pair(three)["rejected"][0]["content"] == "b"
    with pytest.raises(ValueError):
        select_dpo_pair(tie, min_gap=-1)
    with pytest.raises(ValueError):
        ScoredTurn(P, ["a"], [0.1, 0.2])


def test_sft_keeps_latest_turn_per_conversation():
    longer = [*P, {"role": "assistant", "content": "About what?"},
              {"role": "user", "content": "the sea"}]
    turns = [ScoredTurn(P, ["x", "y"], [0.1, 0.3], conv_id="c1"),
             ScoredTurn(longer, ["waves", "hm"], [0.8, 0.2], conv_id="c1"),
             ScoredTurn(P, ["low"], [0.05], conv_id="c2")]
    rows = sft_rows(turns, min_score=0.1)
    assert rows == [{"messages": [*longer, {"role": "assistant", "content": "waves"}]}]


def test_jsonl_roundtrip_from_real_scores(tmp_path):
    m = ScriptedChatModel({"user": '{"response": "[[TERMINATE CHAT]]"}', "assistant": "ok"})
    mr = MultiturnReward(UserSimulator(m, "t"), Assistant(m),
                         task_metric=lambda conv: float("fox" in conv[-1]["content"]),
                         window=1, n_samples=2, token_penalty=0.0)
    scores = asyncio.run(mr.score(P, ["a fox poem", "no"]))
    rows = dpo_rows([ScoredTurn.from_scores(P, scores)], min_gap=0.5)
    path = tmp_path / "dpo.jsonl"
    assert write_jsonl(rows, path) == 1
    back = read_jsonl(path)
    assert back == rows
    assert set(back[0]) == {"prompt", "chosen", "rejected", "score_chosen", "score_rejected"}
    assert back[0]["chosen"][0]["content"] == "a fox poem"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{oops\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        read_jsonl(bad)
