"""A task world a small language model can learn: underspecified formatting requests.

Each task asks the assistant to rewrite a short piece of content (a date, a name, a list) in a
form the request does not name. The form is the user's **hidden goal**, one of three options, so
an assistant that answers at once is right one time in three; one that asks first can always be
right. :class:`RuleUser` plays the user with the same interface as the LLM simulator
(:class:`icml25.collab.simulator.UserSimulator`): it opens with the vague request, reveals the
goal only when the assistant asks about it, never volunteers it, thanks and ends the chat when an
answer is right, and gives up after a wrong one (a one-shot deliverable: guessing cannot be
repaired by guessing again). The task metric is deterministic: the last answer equals the target.

Assistant answers are written ``here it is : <answer>``; anything else that ends in ``?`` is a
question. Text is lower-case words and punctuation separated by spaces, digits one per token,
so a word-level tokenizer covers it (:mod:`icml25.collab.policy`).
"""

from __future__ import annotations

import abc
import dataclasses
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from icml25.collab.simulator import TERMINATION_SIGNAL, UserTurn

ANSWER_PREFIX = "here it is :"
THANKS = f"perfect , thank you . {TERMINATION_SIGNAL}"
GIVE_UP = f"that is not what i need . never mind . {TERMINATION_SIGNAL}"

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
FIRST = ("ada", "alan", "grace", "linus", "marie", "niels", "emmy", "carl", "rosa", "kurt",
         "sofia", "paul", "lise", "enzo", "hedy", "otto", "mira", "ivan", "nora", "felix")
LAST = ("lovelace", "turing", "hopper", "pauling", "curie", "bohr", "noether", "gauss",
        "franklin", "godel", "kovalevskaya", "dirac", "meitner", "fermi", "lamarr", "hahn",
        "weber", "petrov", "bloch", "klein")
ITEMS = ("apple", "pear", "fig", "kiwi", "plum", "lime", "mango", "grape", "peach", "melon",
         "cherry", "lemon", "olive", "date", "guava", "papaya")


def _digits(n: int, width: int) -> str:
    return " ".join(f"{n:0{width}d}")


@dataclasses.dataclass(frozen=True)
class Kind(abc.ABC):
    """One family of tasks: how to draw content, write the request, and render each option."""

    name: str
    topic: str  # the word a question about the goal must mention ("format", "look", "list")
    options: tuple[str, ...]
    labels: dict[str, str]  # option -> how the user names it when asked
    question: str  # the canonical clarifying question (used for SFT data)

    @abc.abstractmethod
    def draw(self, rng: np.random.Generator) -> dict[str, Any]:
        ...

    @abc.abstractmethod
    def request(self, content: dict[str, Any]) -> str:
        ...

    @abc.abstractmethod
    def render(self, content: dict[str, Any], option: str) -> str:
        ...


class DateKind(Kind):
    def draw(self, rng):
        return {"y": int(rng.integers(1990, 2031)), "m": int(rng.integers(1, 13)),
                "d": int(rng.integers(1, 29))}

    def request(self, c):
        return (f"please write the date {MONTHS[c['m'] - 1]} {' '.join(str(c['d']))} "
                f"{' '.join(str(c['y']))} in numbers .")

    def render(self, c, option):
        y, m, d = _digits(c["y"], 4), _digits(c["m"], 2), _digits(c["d"], 2)
        return {"us": f"{m} / {d} / {y}", "european": f"{d} / {m} / {y}",
                "iso": f"{y} - {m} - {d}"}[option]


class NameKind(Kind):
    def draw(self, rng):
        return {"first": FIRST[int(rng.integers(len(FIRST)))],
                "last": LAST[int(rng.integers(len(LAST)))]}

    def request(self, c):
        return f"please format the name {c['first']} {c['last']} for the badge ."

    def render(self, c, option):
        f, la = c["first"], c["last"]
        return {"capitals": f"{f.upper()} {la.upper()}", "title": f"{f.title()} {la.title()}",
                "last first": f"{la} , {f}"}[option]


class ListKind(Kind):
    def draw(self, rng):
        k = int(rng.integers(3, 5))
        return {"items": [ITEMS[i] for i in rng.choice(len(ITEMS), size=k, replace=False)]}

    def request(self, c):
        return f"please rewrite the list {' '.join(c['items'])} ."

    def render(self, c, option):
        items = c["items"]
        return {"commas": " , ".join(items), "and": " and ".join(items),
                "reversed": " , ".join(reversed(items))}[option]


KINDS: dict[str, Kind] = {k.name: k for k in (
    DateKind("date", "format", ("us", "european", "iso"),
             {"us": "the us format", "european": "the european format",
              "iso": "the iso format"},
             "which format do you want : us , european or iso ?"),
    NameKind("name", "look", ("capitals", "title", "last first"),
             {"capitals": "all capitals", "title": "capitalised words",
              "last first": "last name first"},
             "how should the name look : all capitals , capitalised words or last name first ?"),
    ListKind("list", "list", ("commas", "and", "reversed"),
             {"commas": "with commas", "and": "joined with and",
              "reversed": "reversed with commas"},
             "how should i write the list : with commas , joined with and , or reversed ?"),
)}


@dataclasses.dataclass(frozen=True)
class FormatTask:
    """One task: its kind, content, and the hidden option (the goal)."""

    kind: str
    content: dict[str, Any]
    goal: str

    @property
    def spec(self) -> Kind:
        return KINDS[self.kind]

    @property
    def request(self) -> str:
        return self.spec.request(self.content)

    @property
    def target(self) -> str:
        return self.spec.render(self.content, self.goal)

    def answer(self, option: str) -> str:
        """The assistant message that delivers ``option``'s rendering."""
        return f"{ANSWER_PREFIX} {self.spec.render(self.content, option)}"

    def reveal(self) -> str:
        """The user's reply to a question about the goal."""
        return f"{self.spec.labels[self.goal]} , please ."

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FormatTask:
        if d.get("kind") not in KINDS:
            raise ValueError(f"unknown task kind {d.get('kind')!r}; known: {sorted(KINDS)}")
        if d.get("goal") not in KINDS[d["kind"]].options:
            raise ValueError(f"goal {d.get('goal')!r} is not an option of {d['kind']!r}")
        return cls(d["kind"], dict(d["content"]), d["goal"])


def make_tasks(n: int, seed: int, kinds: Sequence[str] | None = None) -> list[FormatTask]:
    """``n`` tasks drawn with ``seed``: kinds in turn, content and goal uniform."""
    names = list(kinds or KINDS)
    for k in names:
        if k not in KINDS:
            raise ValueError(f"unknown task kind {k!r}; known: {sorted(KINDS)}")
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        spec = KINDS[names[i % len(names)]]
        out.append(FormatTask(spec.name, spec.draw(rng),
                              spec.options[int(rng.integers(len(spec.options)))]))
    return out


# --------------------------------------------------------------------------- reading replies

def normalise(text: str | None) -> str:
    return " ".join((text or "").split())


def answer_of(text: str | None) -> str | None:
    """The delivered answer in an assistant message, or None if it delivers none."""
    t = normalise(text)
    if not t.startswith(ANSWER_PREFIX):
        return None
    return t[len(ANSWER_PREFIX):].strip()


def is_question(text: str | None) -> bool:
    t = normalise(text)
    return answer_of(t) is None and t.endswith("?")


def asks_about_goal(task: FormatTask, text: str | None) -> bool:
    """A question that mentions the task's topic word (what the user needs to hear to answer)."""
    return is_question(text) and re.search(rf"\b{task.spec.topic}\b", normalise(text)) is not None


# --------------------------------------------------------------------------- the user

@dataclasses.dataclass
class RuleUser:
    """A rule-based user holding ``task``'s hidden goal; same interface as ``UserSimulator``.

    ``max_turns`` bounds the user's messages after the opening (then it ends the chat).
    """

    task: FormatTask
    max_turns: int = 3

    def opening(self) -> str:
        return self.task.request

    def reply(self, conversation: Sequence[dict[str, Any]]) -> tuple[str, bool]:
        """The next user message and whether it ends the chat."""
        assistant = [m for m in conversation if m.get("role") == "assistant"]
        if not assistant:
            return self.opening(), False
        last = assistant[-1].get("content")
        answer = answer_of(last)
        if answer is not None:
            return (THANKS, True) if answer == self.task.target else (GIVE_UP, True)
        if len(assistant) > self.max_turns:
            return f"never mind . {TERMINATION_SIGNAL}", True
        if asks_about_goal(self.task, last):
            return self.task.reveal(), False
        # Anything else (an off-topic question, chatter): restate the request, reveal nothing.
        return f"i just need it done . {self.task.request}", False

    async def respond(self, conversation: Sequence[dict[str, Any]]) -> UserTurn:
        text, ended = self.reply(conversation)
        return UserTurn(text, ended, True)


# --------------------------------------------------------------------------- metrics

def task_success(task: FormatTask, conversation: Sequence[dict[str, Any]]) -> float:
    """1 when the last answer the assistant delivered is the target, else 0."""
    answers = [answer_of(m.get("content")) for m in conversation if m.get("role") == "assistant"]
    answers = [a for a in answers if a is not None]
    return float(bool(answers) and answers[-1] == task.target)


def useful_question(task: FormatTask, conversation: Sequence[dict[str, Any]]) -> float:
    """1 when the assistant asked about the goal before delivering any answer (interactivity)."""
    for m in conversation:
        if m.get("role") != "assistant":
            continue
        if answer_of(m.get("content")) is not None:
            return 0.0
        if asks_about_goal(task, m.get("content")):
            return 1.0
    return 0.0


def task_metric(task: FormatTask):
    """``conversation -> float`` for :class:`icml25.collab.reward.MultiturnReward`."""
    return lambda conv: task_success(task, conv)


def demonstrations(task: FormatTask, rng: np.random.Generator, ask_rate: float = 0.5
                   ) -> list[dict[str, str]]:
    """A conversation for SFT: ask-then-answer with probability ``ask_rate``, else a guess.

    The guess is uniform over the options, so the policy learns to answer fluently but has no
    reason to prefer asking: that is what the multiturn-aware reward must teach it.
    """
    conv = [{"role": "user", "content": task.request}]
    if rng.random() < ask_rate:
        conv += [{"role": "assistant", "content": task.spec.question},
                 {"role": "user", "content": task.reveal()},
                 {"role": "assistant", "content": task.answer(task.goal)}]
    else:
        guess = task.spec.options[int(rng.integers(len(task.spec.options)))]
        conv.append({"role": "assistant", "content": task.answer(guess)})
    return conv
