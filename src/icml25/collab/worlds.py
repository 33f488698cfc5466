"""Task worlds for the online loop: who the user is, what the request says, what counts.

A world turns tasks with a hidden user goal into conversations a policy can play and a rule-based
user can answer. Three are registered in :data:`WORLDS` (the ``--tasks`` names of
``icml25 collab train-online``):

- ``ask-or-guess``: the word-level format world of :mod:`icml25.collab.world` (the in-repo policy
  model's world; replies start with ``answer :``).
- ``ask-or-guess-nl``: the same tasks and hidden goals rendered in natural language, so a
  pretrained model can play it (``Please write the date March 5, 2021 in numbers.``; the answer is
  whichever rendering the reply contains, e.g. ``03/05/2021``).
- ``math-roots``: a quadratic with two integer roots; the user wants one of them (the smaller or
  the larger: the hidden goal). Success is sympy equivalence of the reply's final answer with the
  wanted root, so a model that guesses is right half the time and one that asks is always right.

Every world gives, per task, the opening history, a rule-based user (``respond`` as
:class:`icml25.collab.simulator.UserSimulator`), the task metric for the multiturn-aware reward,
and the success / interactivity of a whole conversation.

>>> w = WORLDS["math-roots"]
>>> t = w.tasks(1, seed=0)[0]
>>> w.success(t, [*w.opening(t), {"role": "assistant", "content": f"The answer is {t.target}."}])
1.0
>>> w.asks(t, "Which root do you want, the smaller or the larger one?")
True
"""

from __future__ import annotations

import abc
import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from icml25.collab import world as fmt
from icml25.collab.simulator import TERMINATION_SIGNAL, UserTurn

THANKS = "Thanks, that is what I needed."
WRONG = "That is not what I wanted."


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _is_question(text: str | None) -> bool:
    return _norm(text).rstrip().endswith("?")


@dataclasses.dataclass
class RuleUser:
    """A rule-based user for a natural-language world (same interface as ``UserSimulator``).

    It ends the chat when an answer is delivered (thanking or complaining), reveals the goal when
    asked about it, and otherwise restates the request; after ``max_turns`` it gives up.
    """

    world: Any
    task: Any
    max_turns: int = 3

    def opening(self) -> str:
        return self.world.opening(self.task)[0]["content"]

    def reply(self, conversation: Sequence[dict[str, Any]]) -> tuple[str, bool]:
        assistant = [m for m in conversation if m.get("role") == "assistant"]
        if not assistant:
            return self.opening(), False
        last = assistant[-1].get("content")
        answer = self.world.answer_of(self.task, last)
        if answer is not None:
            return (THANKS, True) if answer == self.task.target else (WRONG, True)
        if len(assistant) > self.max_turns:
            return f"Never mind. {TERMINATION_SIGNAL}", True
        if self.world.asks(self.task, last):
            return self.world.reveal(self.task), False
        return f"I just need it done. {self.opening()}", False

    async def respond(self, conversation: Sequence[dict[str, Any]]) -> UserTurn:
        text, ended = self.reply(conversation)
        return UserTurn(text, ended, True)


class _NLWorld(abc.ABC):
    """Shared logic: success = the last delivered answer is the target; interactivity = asked
    about the goal before delivering any answer."""

    name = ""

    @abc.abstractmethod
    def tasks(self, n: int, seed: int) -> list[Any]:
        """Implemented by each world."""

    @staticmethod
    def is_question(text: str | None) -> bool:
        return _is_question(text)

    def opening(self, task: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": task.request}]

    def user(self, task: Any, max_turns: int = 3) -> RuleUser:
        return RuleUser(self, task, max_turns)

    @abc.abstractmethod
    def answer_of(self, task: Any, text: str | None) -> str | None:
        """Implemented by each world."""

    @abc.abstractmethod
    def asks(self, task: Any, text: str | None) -> bool:
        """Implemented by each world."""

    @abc.abstractmethod
    def reveal(self, task: Any) -> str:
        """Implemented by each world."""

    def describe(self, task: Any) -> tuple[str, str]:
        """(task description, hidden goal) for an LLM user simulator."""
        return task.request, f"What you want: {self.reveal(task)}"

    def success(self, task: Any, conversation: Sequence[dict[str, Any]]) -> float:
        answers = [self.answer_of(task, m.get("content")) for m in conversation
                   if m.get("role") == "assistant"]
        answers = [a for a in answers if a is not None]
        return float(bool(answers) and answers[-1] == task.target)

    def interactivity(self, task: Any, conversation: Sequence[dict[str, Any]]) -> float:
        for m in conversation:
            if m.get("role") != "assistant":
                continue
            if self.answer_of(task, m.get("content")) is not None:
                return 0.0
            if self.asks(task, m.get("content")):
                return 1.0
        return 0.0

    def metric(self, task: Any) -> Callable[[list[dict[str, Any]]], float]:
        return lambda conv: self.success(task, conv)

    def demonstration(self, task: Any, ask: bool, rng: np.random.Generator
                      ) -> list[dict[str, str]]:
        """An SFT conversation: ask then answer, or a uniform guess."""
        conv = self.opening(task)
        if ask:
            conv += [{"role": "assistant", "content": self.question(task)},
                     {"role": "user", "content": self.reveal(task)},
                     {"role": "assistant", "content": self.deliver(task, task.goal)}]
        else:
            options = self.options(task)
            guess = options[int(rng.integers(len(options)))]
            conv.append({"role": "assistant", "content": self.deliver(task, guess)})
        return conv

    @abc.abstractmethod
    def question(self, task: Any) -> str:
        """Implemented by each world."""

    @abc.abstractmethod
    def options(self, task: Any) -> Sequence[str]:
        """Implemented by each world."""

    @abc.abstractmethod
    def deliver(self, task: Any, option: str) -> str:
        """Implemented by each world."""


# --------------------------------------------------------------------------- ask-or-guess, NL

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
_NL = {
    "date": {"us": "the US format (MM/DD/YYYY)", "european": "the European format (DD/MM/YYYY)",
             "iso": "the ISO format (YYYY-MM-DD)"},
    "name": {"capitals": "all capitals", "title": "capitalised words",
             "last first": "last name first"},
    "list": {"commas": "separated by commas", "and": "joined with and",
             "reversed": "in reverse order, separated by commas"},
}
_TOPIC = {"date": r"format", "name": r"format|capital|style|look|order",
          "list": r"format|separat|comma|order|style|join"}
_QUESTION = {"date": "Which format do you want: US (MM/DD/YYYY), European (DD/MM/YYYY) or ISO "
                     "(YYYY-MM-DD)?",
             "name": "How should the name look: all capitals, capitalised words or last name "
                     "first?",
             "list": "How should I write the list: separated by commas, joined with and, or in "
                     "reverse order?"}


@dataclasses.dataclass(frozen=True)
class NLTask:
    """An ask-or-guess task in natural language: the format task and its renderings."""

    base: fmt.FormatTask

    @property
    def kind(self) -> str:
        return self.base.kind

    @property
    def goal(self) -> str:
        return self.base.goal

    @property
    def request(self) -> str:
        c = self.base.content
        if self.kind == "date":
            return (f"Please write the date {MONTHS[c['m'] - 1]} {c['d']}, {c['y']} in "
                    "numbers.")
        if self.kind == "name":
            return f"Please format the name {c['first']} {c['last']} for a badge."
        return f"Please rewrite this list: {', '.join(c['items'])}."

    def render(self, option: str) -> str:
        c = self.base.content
        if self.kind == "date":
            y, m, d = f"{c['y']:04d}", f"{c['m']:02d}", f"{c['d']:02d}"
            return {"us": f"{m}/{d}/{y}", "european": f"{d}/{m}/{y}", "iso": f"{y}-{m}-{d}"}[
                option]
        if self.kind == "name":
            f, la = c["first"], c["last"]
            return {"capitals": f"{f.upper()} {la.upper()}", "title": f"{f.title()} {la.title()}",
                    "last first": f"{la.title()}, {f.title()}"}[option]
        items = c["items"]
        return {"commas": ", ".join(items), "and": " and ".join(items),
                "reversed": ", ".join(reversed(items))}[option]

    @property
    def target(self) -> str:
        return self.render(self.goal)


class AskOrGuessNL(_NLWorld):
    """The ask-or-guess world in natural language (see the module docstring)."""

    name = "ask-or-guess-nl"

    def tasks(self, n: int, seed: int) -> list[NLTask]:
        return [NLTask(t) for t in fmt.make_tasks(n, seed)]

    def options(self, task: NLTask) -> Sequence[str]:
        return task.base.spec.options

    def answer_of(self, task: NLTask, text: str | None) -> str | None:
        """The option rendering the reply delivers (the last one it contains), else None; a
        question delivers nothing."""
        t = _norm(text)
        if not t or _is_question(t):
            return None
        found = [(t.rfind(task.render(o)), task.render(o)) for o in self.options(task)]
        found = [f for f in found if f[0] >= 0]
        return max(found)[1] if found else None

    def asks(self, task: NLTask, text: str | None) -> bool:
        t = _norm(text)
        return (_is_question(t) and self.answer_of(task, t) is None
                and re.search(_TOPIC[task.kind], t, re.I) is not None)

    def reveal(self, task: NLTask) -> str:
        return f"{_NL[task.kind][task.goal][0].upper()}{_NL[task.kind][task.goal][1:]}, please."

    def question(self, task: NLTask) -> str:
        return _QUESTION[task.kind]

    def deliver(self, task: NLTask, option: str) -> str:
        return f"Here it is: {task.render(option)}"


# --------------------------------------------------------------------------- math with a goal

@dataclasses.dataclass(frozen=True)
class RootsTask:
    """Find a root of ``(x - a)(x - b)``; the user wants the smaller or the larger one."""

    a: int
    b: int
    goal: str  # "smaller" | "larger"

    @property
    def request(self) -> str:
        s, p = -(self.a + self.b), self.a * self.b
        poly = "x^2" + (f" {'+' if s > 0 else '-'} {abs(s)}x" if s else "") + \
            (f" {'+' if p > 0 else '-'} {abs(p)}" if p else "")
        return f"I need a root of {poly} = 0. What is it?"

    @property
    def target(self) -> str:
        return str(min(self.a, self.b) if self.goal == "smaller" else max(self.a, self.b))


class MathRoots(_NLWorld):
    """The math world with a hidden goal (see the module docstring); answers checked by sympy."""

    name = "math-roots"

    def tasks(self, n: int, seed: int) -> list[RootsTask]:
        rng = np.random.default_rng(seed)
        out = []
        while len(out) < n:
            a, b = (int(v) for v in rng.integers(-9, 10, size=2))
            if a != b:
                out.append(RootsTask(a, b, ("smaller", "larger")[int(rng.integers(2))]))
        return out

    def options(self, task: RootsTask) -> Sequence[str]:
        return ("smaller", "larger")

    def answer_of(self, task: RootsTask, text: str | None) -> str | None:
        """The root the reply's final answer equals (sympy), ``"?"`` for another value, None
        for a question or a reply without an answer."""
        from icml25.collab.metrics import extract_final_answer, math_equivalent

        t = _norm(text)
        if not t or _is_question(t) or not re.search(r"\d", t):
            return None
        final = extract_final_answer(t)
        for root in {task.a, task.b}:
            if math_equivalent(final, str(root)):
                return str(root)
        return "?"

    def asks(self, task: RootsTask, text: str | None) -> bool:
        t = _norm(text)
        return _is_question(t) and re.search(r"which|smaller|larger|bigger|root|one", t,
                                             re.I) is not None

    def reveal(self, task: RootsTask) -> str:
        return f"The {task.goal} root, please."

    def question(self, task: RootsTask) -> str:
        return "It has two roots. Do you want the smaller or the larger one?"

    def deliver(self, task: RootsTask, option: str) -> str:
        root = min(task.a, task.b) if option == "smaller" else max(task.a, task.b)
        return f"The answer is {root}."


# --------------------------------------------------------------------------- word-level world

class AskOrGuess:
    """:mod:`icml25.collab.world` (the in-repo policy model's word-level world) as a world."""

    name = "ask-or-guess"

    def tasks(self, n: int, seed: int) -> list[fmt.FormatTask]:
        return fmt.make_tasks(n, seed)

    def opening(self, task: fmt.FormatTask) -> list[dict[str, str]]:
        return [{"role": "user", "content": task.request}]

    @staticmethod
    def is_question(text: str | None) -> bool:
        return fmt.is_question(text)

    def user(self, task: fmt.FormatTask, max_turns: int = 3) -> fmt.RuleUser:
        return fmt.RuleUser(task, max_turns=max_turns)

    def metric(self, task: fmt.FormatTask) -> Callable[[list[dict[str, Any]]], float]:
        return fmt.task_metric(task)

    def asks(self, task: fmt.FormatTask, text: str | None) -> bool:
        return fmt.asks_about_goal(task, text)

    def success(self, task: fmt.FormatTask, conversation: Sequence[dict[str, Any]]) -> float:
        return fmt.task_success(task, conversation)

    def interactivity(self, task: fmt.FormatTask, conversation: Sequence[dict[str, Any]]
                      ) -> float:
        return fmt.useful_question(task, conversation)

    def describe(self, task: fmt.FormatTask) -> tuple[str, str]:
        return task.request, task.reveal()

    def demonstration(self, task: fmt.FormatTask, ask: bool, rng: np.random.Generator
                      ) -> list[dict[str, str]]:
        return fmt.demonstrations(task, rng, ask_rate=1.0 if ask else 0.0)


WORLDS: dict[str, Any] = {w.name: w for w in (AskOrGuess(), AskOrGuessNL(), MathRoots())}


def get_world(name: str) -> Any:
    """The registered world called ``name``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).

    Examples
    --------
    >>> get_world("ask-or-guess-nl").name
    'ask-or-guess-nl'
    """
    if name not in WORLDS:
        raise ValueError(f"unknown task world {name!r}; known: {', '.join(sorted(WORLDS))}")
    return WORLDS[name]
