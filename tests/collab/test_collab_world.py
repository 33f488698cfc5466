"""The formatting-task world: the rule-based user keeps its goal hidden until asked."""

import asyncio

import numpy as np
import pytest

from icml25.collab import world
from icml25.collab.chat import ScriptedChatModel
from icml25.collab.reward import MultiturnReward
from icml25.collab.simulator import TERMINATION_SIGNAL, Assistant

TASKS = world.make_tasks(60, seed=3)


def _goal_words(task):
    return set(task.spec.labels[task.goal].split()) - {"the", "with", "format", "name"}


@pytest.mark.parametrize("task", TASKS[:30], ids=lambda t: f"{t.kind}-{t.goal}")
def test_user_never_reveals_the_goal_unprompted(task):
    user = world.RuleUser(task)
    opening = user.opening()
    chatter = ["hello there .", "is it raining today ?", "ok .", "here it is"]
    texts = [opening]
    for msg in chatter:
        reply, ended = user.reply([{"role": "user", "content": opening},
                                   {"role": "assistant", "content": msg}])
        assert not ended
        texts.append(reply)
    for t in texts:
        assert task.spec.labels[task.goal] not in t
        # no word that names this goal (and not the others) slips out either
        others = set().union(*(set(task.spec.labels[o].split()) for o in task.spec.options
                               if o != task.goal))
        assert not (_goal_words(task) - others) & set(t.split())


def test_user_reveals_when_asked_and_judges_answers():
    task = world.FormatTask("date", {"y": 2024, "m": 3, "d": 5}, "european")
    assert task.target == "0 5 / 0 3 / 2 0 2 4"
    user = world.RuleUser(task)
    conv = [{"role": "user", "content": user.opening()},
            {"role": "assistant", "content": task.spec.question}]
    reply, ended = user.reply(conv)
    assert reply == "the european format , please ." and not ended
    conv += [{"role": "user", "content": reply},
             {"role": "assistant", "content": task.answer("european")}]
    reply, ended = user.reply(conv)
    assert ended and TERMINATION_SIGNAL in reply and "perfect" in reply
    assert world.task_success(task, conv) == 1.0 and world.useful_question(task, conv) == 1.0
    wrong = conv[:1] + [{"role": "assistant", "content": task.answer("us")}]
    reply, ended = user.reply(wrong)
    assert ended and "not what i need" in reply
    assert world.task_success(task, wrong) == 0.0 and world.useful_question(task, wrong) == 0.0


def test_an_off_topic_question_is_not_a_useful_one():
    task = world.FormatTask("name", {"first": "ada", "last": "turing"}, "title")
    assert not world.asks_about_goal(task, "do you like cats ?")
    assert world.asks_about_goal(task, task.spec.question)
    assert not world.asks_about_goal(task, "how should the name look")  # no question mark


def test_user_gives_up_after_max_turns():
    task = TASKS[0]
    user = world.RuleUser(task, max_turns=2)
    conv = [{"role": "user", "content": user.opening()}]
    for _ in range(3):
        conv.append({"role": "assistant", "content": "hmm ?"})
        reply, ended = user.reply(conv)
        conv.append({"role": "user", "content": reply})
    assert ended


def test_tasks_are_seeded_and_round_trip():
    again = world.make_tasks(60, seed=3)
    assert again == TASKS
    assert world.FormatTask.from_dict(TASKS[5].to_dict()) == TASKS[5]
    with pytest.raises(ValueError, match="unknown task kind"):
        world.make_tasks(3, seed=0, kinds=["poem"])
    with pytest.raises(ValueError, match="not an option"):
        world.FormatTask.from_dict({"kind": "date", "content": {}, "goal": "klingon"})


def test_demonstrations_ask_at_the_given_rate():
    rng = np.random.default_rng(0)
    asked = [world.useful_question(t, world.demonstrations(t, rng, ask_rate=0.5))
             for t in world.make_tasks(400, seed=1)]
    assert 0.42 < np.mean(asked) < 0.58


def test_multiturn_reward_on_fixed_candidates_equals_hand_computation():
    task = world.FormatTask("list", {"items": ["fig", "kiwi", "plum"]}, "reversed")
    lam = 0.01
    # The assistant that continues a branch always delivers the target.
    assistant = Assistant(ScriptedChatModel({"assistant": task.answer(task.goal)}))
    mr = MultiturnReward(user=world.RuleUser(task), assistant=assistant,
                         task_metric=world.task_metric(task), window=1, n_samples=2,
                         token_penalty=lam)
    history = [{"role": "user", "content": task.request}]
    question, right, wrong = task.spec.question, task.answer("reversed"), task.answer("and")
    scores = asyncio.run(mr.score(history, [question, right, wrong]))
    # question: the user reveals, the assistant answers; tokens = question + reveal + answer
    n_q = len(question.split()) + len(task.reveal().split()) + len(right.split())
    assert scores[0].mr == pytest.approx(1.0 - lam * n_q)
    # right answer: the user ends the chat at once; tokens are the answer's
    assert scores[1].mr == pytest.approx(1.0 - lam * len(right.split()))
    assert scores[2].mr == pytest.approx(0.0 - lam * len(wrong.split()))
    # w = 0 (single-turn reward): asking earns nothing
    mr0 = MultiturnReward(user=world.RuleUser(task), assistant=assistant,
                          task_metric=world.task_metric(task), window=0, token_penalty=lam)
    s0 = asyncio.run(mr0.score(history, [question]))
    assert s0[0].mr == pytest.approx(-lam * len(question.split()))
