"""Task fixtures written by this project, in the shapes of the paper's three benchmarks, and a
loader for users' own JSONL (e.g. exports of MATH, Medium articles, BigCodeBench).

Each task is a dict the CLI reads: ``{"task", "prompt", "reference", "metric"}`` where ``task``
is the (hidden) task description, ``prompt`` the complete single-turn request the simulated user
reveals gradually, ``reference`` the goal artifact the user judges against, and ``metric`` one of
``{"type": "bleu", "reference"}``, ``{"type": "math", "answer"}``, ``{"type": "code", "tests"}``.
These are tiny smoke-test sets, not benchmarks: no number from them is comparable to the paper.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from icml25.collab.metrics import extract_final_answer

_DOCS = [
    ("a short blog post for beginners about why bees matter",
     "Bees pollinate about a third of the food we eat. Without them, apples, almonds and "
     "berries would become rare and expensive. You can help by planting flowers that bloom at "
     "different times of the year and by avoiding pesticides in your garden."),
    ("a polite email asking a landlord to fix a leaking tap",
     "Dear Ms. Green, the kitchen tap in flat 4 has been leaking since Monday and the drip is "
     "getting worse. Could you arrange for a plumber to look at it this week? I am at home "
     "after 5 pm every day. Thank you, Sam."),
    ("a three-sentence product description for a reusable water bottle",
     "This steel bottle keeps drinks cold for 24 hours and hot for 12. It holds 750 ml, fits "
     "in a car cup holder and never leaks. Skip the plastic and refill it anywhere."),
]

_CODE = [
    ("a Python function `slugify(title)` that lowercases a title, keeps letters and digits, "
     "and joins words with single hyphens",
     "import re\n\ndef slugify(title):\n    words = re.findall(r'[a-z0-9]+', title.lower())\n"
     "    return '-'.join(words)\n",
     ["assert slugify('Hello, World!') == 'hello-world'",
      "assert slugify('  Many   spaces ') == 'many-spaces'",
      "assert slugify('ICML 2025') == 'icml-2025'"]),
    ("a Python function `moving_average(xs, k)` returning the averages of each window of k "
     "consecutive values (an empty list when k > len(xs))",
     "def moving_average(xs, k):\n    if k <= 0:\n        raise ValueError('k must be > 0')\n"
     "    return [sum(xs[i:i + k]) / k for i in range(len(xs) - k + 1)]\n",
     ["assert moving_average([1, 2, 3, 4], 2) == [1.5, 2.5, 3.5]",
      "assert moving_average([1, 2], 3) == []",
      "assert moving_average([5], 1) == [5.0]"]),
    ("a Python function `is_balanced(s)` that checks whether (), [] and {} are balanced",
     "def is_balanced(s):\n    pairs = {')': '(', ']': '[', '}': '{'}\n    stack = []\n"
     "    for ch in s:\n        if ch in '([{':\n            stack.append(ch)\n"
     "        elif ch in pairs:\n            if not stack or stack.pop() != pairs[ch]:\n"
     "                return False\n    return not stack\n",
     ["assert is_balanced('([]{})')", "assert not is_balanced('(]')",
      "assert not is_balanced('((')", "assert is_balanced('')"]),
]

_MATH = [
    ("If 3x + 7 = 22, what is x?", "3x = 15, so x = \\boxed{5}."),
    ("What is the sum of the interior angles of a hexagon, in degrees?",
     "(6 - 2) \\cdot 180 = \\boxed{720}."),
    ("Simplify \\frac{12}{18}.", "Divide by 6: \\boxed{\\frac{2}{3}}."),
]


def builtin_tasks(kind: str | None = None) -> list[dict[str, Any]]:
    """The shipped fixtures: ``kind`` in {"document", "code", "math"} or ``None`` for all.

    Three tiny tasks per kind, in the shapes of the paper's benchmarks (document editing, code
    generation, math question answering); smoke tests, not benchmarks.

    Parameters
    ----------
    kind : {"document", "code", "math"} or None, default=None
        Which tasks; ``None`` gives all nine.

    Returns
    -------
    list of dict
        Task dicts with keys ``kind``, ``task``, ``prompt``, ``reference`` and ``metric``.

    Raises
    ------
    ValueError
        For an unknown ``kind``.

    Examples
    --------
    >>> len(builtin_tasks()), [t["metric"]["answer"] for t in builtin_tasks("math")]
    (9, ['5', '720', '\\\\frac{2}{3}'])
    >>> builtin_tasks("code")[0]["metric"]["tests"][0]
    "assert slugify('Hello, World!') == 'hello-world'"
    """
    out: list[dict[str, Any]] = []
    if kind in (None, "document"):
        out += [{"kind": "document", "task": "document editing",
                 "prompt": f"Write {what}.", "reference": ref,
                 "metric": {"type": "bleu", "reference": ref}} for what, ref in _DOCS]
    if kind in (None, "code"):
        out += [{"kind": "code", "task": "code generation", "prompt": f"Write {what}.",
                 "reference": sol, "metric": {"type": "code", "tests": tests}}
                for what, sol, tests in _CODE]
    if kind in (None, "math"):
        out += [{"kind": "math", "task": "question answering (math)", "prompt": q,
                 "reference": sol, "metric": {"type": "math", "answer": extract_final_answer(sol)}}
                for q, sol in _MATH]
    if kind not in (None, "document", "code", "math"):
        raise ValueError(f"unknown kind {kind!r}; use document, code or math")
    return out


def load_tasks_jsonl(path: str | Path, kind: str) -> list[dict[str, Any]]:
    """Read a user's JSONL into task dicts.

    Accepted row shapes: ``{prompt, completion}`` (the official package's single-turn format),
    MATH ``{problem, solution}``, Medium-style ``{title, text}``, and code rows
    ``{prompt, tests: [assert snippets]}``.

    Parameters
    ----------
    path : str or Path
        A UTF-8 JSONL file; blank lines are skipped.
    kind : {"document", "code", "math"}
        How to read the rows and which metric to attach (BLEU against the reference, the test
        pass rate, or the final answer, from ``answer`` or the solution's last ``\\boxed{}``).

    Returns
    -------
    list of dict
        Task dicts as :func:`builtin_tasks` gives them.

    Raises
    ------
    ValueError
        For an unknown ``kind``, a line that is not JSON, a row without prompt/problem/title,
        or a code row without ``tests``.
    FileNotFoundError
        If ``path`` is not a file.

    Examples
    --------
    >>> from pathlib import Path
    >>> import json
    >>> row = {"problem": "What is 1+1?", "solution": "It is \\\\boxed{2}."}
    >>> _ = Path("math.jsonl").write_text(json.dumps(row) + "\\n", encoding="utf-8")
    >>> t = load_tasks_jsonl("math.jsonl", "math")[0]
    >>> t["prompt"], t["metric"]
    ('What is 1+1?', {'type': 'math', 'answer': '2'})
    """
    if kind not in ("document", "code", "math"):
        raise ValueError(f"unknown kind {kind!r}; use document, code or math")
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no such file: {p}")
    tasks = []
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}:{i}: not valid JSON ({exc.msg})") from None
        prompt = row.get("prompt") or row.get("problem") or (
            f"Write an article under 500 words about {row['title']}." if "title" in row else None)
        ref = row.get("completion") or row.get("solution") or row.get("text") or ""
        if not prompt:
            raise ValueError(f"{p}:{i}: needs prompt/problem/title")
        if kind == "math":
            metric = {"type": "math", "answer": row.get("answer") or extract_final_answer(ref)}
        elif kind == "code":
            if not row.get("tests"):
                raise ValueError(f"{p}:{i}: code rows need 'tests' (a list of assert snippets)")
            metric = {"type": "code", "tests": list(row["tests"])}
        else:
            metric = {"type": "bleu", "reference": ref}
        tasks.append({"kind": kind, "task": {"math": "question answering (math)",
                                             "code": "code generation",
                                             "document": "document editing"}[kind],
                      "prompt": prompt, "reference": ref, "metric": metric})
    return tasks
