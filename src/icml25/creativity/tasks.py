"""The four algorithmic-creativity tasks (Nagarajan, Wu, Ding & Raghunathan, ICML 2025) as seeded
generators with a word-level vocabulary. Pure Python/NumPy: no torch, no I/O.

Every example is one line ``[SEED] MARKER ANSWER``: ``SEED`` is a word of ``seed_len`` characters
from ``[a-z0-9]`` (absent when ``seed_len == 0``), ``MARKER`` is ``<q>`` (sibling, circle, line),
``tri:`` or ``edge:`` (triangle), and ``ANSWER`` is space-separated tokens ending in ``</a>``:

- sibling   ``<b1_j> <b2_k> <a_i> </a>``                       (siblings first, parent last)
- triangle  ``<a_u> <a_v> <sep> <a_v> <a_w> <sep> <a_w> <a_u> </a>``  (edge lines:
            ``edge: <a_u> <a_v> <sep> <a_v> <a_u> </a>``, never seeded)
- circle    9 directed cycle edges ``x y`` in shuffled order, joined by ``<sep>``
- line      9 directed path edges over 10 entities, shuffled, joined by ``<sep>``
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Iterable, Sequence

import numpy as np

TASKS = ("sibling", "triangle", "circle", "line")
SEED_ALPHABET = string.ascii_lowercase + string.digits  # 36 symbols, one token each
SEP, Q, END, TRI, EDGE = "<sep>", "<q>", "</a>", "tri:", "edge:"
PAD, MASK, DUMMY = "<pad>", "<mask>", "<dummy>"
SPECIALS = (PAD, MASK, DUMMY, SEP, Q, END, TRI, EDGE)
MARKERS = (Q, TRI, EDGE)

DEFAULTS: dict[str, dict[str, int | float]] = {
    "sibling": {"n_parents": 5, "n_children": 500, "n_train": 50_000, "n_test": 3000},
    "triangle": {"n_nodes": 999, "degree": 3, "alpha": 1.2, "triangles_per_node": 6,
                 "n_draws": 15_000, "n_test": 1024},
    "circle": {"n_entities": 10, "length": 9, "n_train": 10_000, "n_test": 1024},
    "line": {"n_entities": 10, "length": 9, "n_train": 10_000, "n_test": 1024},
}


class AnswerError(ValueError):
    """An answer line that cannot be scored at all (empty, or tokens outside the vocabulary).

    A subclass of ``ValueError``, raised by :func:`parse_line` and :func:`answer_tokens`.

    Parameters
    ----------
    *args
        The message, as for ``ValueError``.

    Examples
    --------
    >>> from icml25.creativity import AnswerError, parse_line
    >>> try:
    ...     parse_line("no marker here")
    ... except AnswerError as exc:
    ...     print(exc)
    expected '[SEED] MARKER ANSWER', got 'no marker here'
    """


@dataclasses.dataclass(frozen=True)
class Example:
    """One training line: ``[SEED] MARKER ANSWER... </a>``.

    Parameters
    ----------
    seed : str
        The seed-conditioning prefix, "" for none.
    marker : str
        The task marker (``<q>``, ``tri:`` or ``edge:``).
    answer : tuple of str
        The answer tokens, ending in ``</a>``.

    Examples
    --------
    >>> from icml25.creativity import Example
    >>> ex = Example("ab12", "<q>", ("<a_0>", "<a_1>", "</a>"))
    >>> ex.prompt()
    'ab12 <q>'
    >>> ex.line()
    'ab12 <q> <a_0> <a_1> </a>'
    """

    seed: str
    marker: str
    answer: tuple[str, ...]

    def prompt(self) -> str:
        return f"{self.seed} {self.marker}" if self.seed else self.marker

    def line(self) -> str:
        return f"{self.prompt()} {' '.join(self.answer)}"


def parse_line(line: str) -> Example:
    """Split ``[SEED] MARKER ANSWER...`` into an :class:`Example` (no vocabulary check).

    Parameters
    ----------
    line : str
        Whitespace-separated words: an optional seed of ``[a-z0-9]``, a task marker, then the
        answer tokens.

    Returns
    -------
    Example
        The parsed line.

    Raises
    ------
    AnswerError
        When no marker comes first or second, or the seed uses other characters.

    Examples
    --------
    >>> from icml25.creativity import parse_line
    >>> parse_line("ab12 <q> <a_0> <a_1> </a>")
    Example(seed='ab12', marker='<q>', answer=('<a_0>', '<a_1>', '</a>'))
    >>> parse_line("<q> <a_0> </a>").seed
    ''
    """
    words = line.split()
    at = next((i for i, w in enumerate(words) if w in MARKERS), None)
    if at is None or at > 1:
        raise AnswerError(f"expected '[SEED] MARKER ANSWER', got {line!r}")
    seed = words[0] if at == 1 else ""
    if seed and any(c not in SEED_ALPHABET for c in seed):
        raise AnswerError(f"seed {seed!r} must use only [a-z0-9]")
    return Example(seed, words[at], tuple(words[at + 1:]))


def make_seeds(n: int, length: int, rng: np.random.Generator,
               exclude: Iterable[str] = ()) -> list[str]:
    """Draw ``n`` distinct random seeds of ``length`` symbols from ``[a-z0-9]``, none of them
    in ``exclude``.

    Parameters
    ----------
    n : int
        Seeds wanted.
    length : int
        Symbols per seed (0 gives ``n`` empty seeds).
    rng : numpy.random.Generator
        Source of the draws.
    exclude : iterable of str, default=()
        Seeds that may not be drawn (e.g. the training seeds).

    Returns
    -------
    list of str
        ``n`` distinct seeds.

    Raises
    ------
    ValueError
        When fewer than ``n`` distinct seeds of that length are left.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.creativity import make_seeds
    >>> make_seeds(3, 4, np.random.default_rng(0))
    ['4wsj', 'lbca', 'g3x6']
    >>> make_seeds(2, 0, np.random.default_rng(0))
    ['', '']
    """
    if length == 0:
        return [""] * n
    taken = set(exclude)
    if n + len(taken) > len(SEED_ALPHABET) ** min(length, 12):
        raise ValueError(f"cannot draw {n} distinct seeds of length {length}")
    out: list[str] = []
    while len(out) < n:
        draws = rng.integers(0, len(SEED_ALPHABET), size=(2 * (n - len(out)) + 8, length))
        for row in draws:
            s = "".join(SEED_ALPHABET[i] for i in row)
            if s not in taken:
                taken.add(s)
                out.append(s)
                if len(out) == n:
                    break
    return out


class Task:
    """A task instance: its (hidden) knowledge, vocabulary, generator and coherence rule.

    The base class of the four tasks (``sibling``, ``triangle``, ``circle``, ``line``); build
    one with :func:`make_task`.

    Parameters
    ----------
    seed : int, default=0
        Seeds the hidden knowledge (the graph) of the instance.
    **params
        The task's size parameters (see ``icml25.creativity.tasks.DEFAULTS``), overriding its
        defaults.

    Attributes
    ----------
    seed : int
        The instance seed.
    params : dict
        The task's parameters, defaults filled in.

    Raises
    ------
    ValueError
        For an unknown parameter or one that is not positive.

    Examples
    --------
    >>> from icml25.creativity import Task, make_task
    >>> task = make_task("line", seed=0, n_entities=4, length=3)
    >>> isinstance(task, Task), task.params["n_train"]
    (True, 10000)
    >>> task.vocab()[:6]
    ['<pad>', '<mask>', '<dummy>', '<sep>', '<q>', '</a>']
    """

    name = ""
    marker = Q
    answer_len = 0  # tokens in a test answer, including </a>

    def __init__(self, seed: int = 0, **params) -> None:
        unknown = set(params) - set(DEFAULTS[self.name])
        if unknown:
            raise ValueError(f"unknown {self.name} parameters {sorted(unknown)}; "
                             f"known: {sorted(DEFAULTS[self.name])}")
        self.seed = int(seed)
        self.params = {**DEFAULTS[self.name], **params}
        for k, v in self.params.items():
            if v <= 0:
                raise ValueError(f"{k} must be positive, got {v}")

    # --- vocabulary -------------------------------------------------------------------------
    def entities(self) -> list[str]:
        raise NotImplementedError

    def vocab(self) -> list[str]:
        """Word-level vocabulary: specials, one token per seed symbol, then the entities."""
        return [*SPECIALS, *SEED_ALPHABET, *self.entities()]

    # --- data -------------------------------------------------------------------------------
    def train_examples(self, rng: np.random.Generator) -> list[tuple[str, tuple[str, ...]]]:
        """(marker, answer) pairs; seeds are attached by :func:`generate`."""
        raise NotImplementedError

    def n_test(self) -> int:
        return int(self.params["n_test"])

    # --- scoring ----------------------------------------------------------------------------
    def canonical(self, answer: Sequence[str], *, edge_set: bool = False):
        """The canonical form of a coherent answer (tokens without ``</a>``), else ``None``.

        ``edge_set``: for circle/line, the set of directed edges with their node names instead
        of the renamed edge list (sibling and triangle forms are already order-free)."""
        raise NotImplementedError


def _pairs(tokens: Sequence[str]) -> list[tuple[str, str]] | None:
    """``x y <sep> z w ...`` -> [(x, y), (z, w), ...]; None if any group is not a pair."""
    groups: list[list[str]] = [[]]
    for tok in tokens:
        if tok == SEP:
            groups.append([])
        else:
            groups[-1].append(tok)
    if any(len(g) != 2 for g in groups):
        return None
    return [(g[0], g[1]) for g in groups]


def relabel(pairs: Sequence[tuple[str, str]]) -> tuple[tuple[int, int], ...]:
    """Rename nodes by order of first appearance: the edge-order pattern (the paper's resolving
    permutation), identical for two outputs that differ only in node names.

    Parameters
    ----------
    pairs : sequence of tuple of (str, str)
        Directed edges ``(u, v)`` in output order.

    Returns
    -------
    tuple of tuple of (int, int)
        The edges with each node replaced by its rank of first appearance.

    Examples
    --------
    >>> from icml25.creativity import relabel
    >>> relabel([("x", "y"), ("y", "z")])
    ((0, 1), (1, 2))
    >>> relabel([("b", "c"), ("c", "a")]) == relabel([("x", "y"), ("y", "z")])
    True
    """
    names: dict[str, int] = {}
    return tuple((names.setdefault(u, len(names)), names.setdefault(v, len(names)))
                 for u, v in pairs)


class Sibling(Task):
    """Parents ``<a_i>``, each with its own blocks of ``<b1_*>`` and ``<b2_*>`` children."""

    name = "sibling"
    answer_len = 4

    def entities(self) -> list[str]:
        p, c = int(self.params["n_parents"]), int(self.params["n_children"])
        return ([f"<a_{i}>" for i in range(p)] + [f"<b1_{j}>" for j in range(p * c)]
                + [f"<b2_{j}>" for j in range(p * c)])

    def train_examples(self, rng):
        p, c, n = (int(self.params[k]) for k in ("n_parents", "n_children", "n_train"))
        universe = p * c * c
        if n > universe:
            raise ValueError(f"n_train={n} exceeds the {universe} possible sibling triples")
        out = []
        for idx in rng.choice(universe, size=n, replace=False):
            parent, rest = divmod(int(idx), c * c)
            j, k = divmod(rest, c)
            out.append((Q, (f"<b1_{parent * c + j}>", f"<b2_{parent * c + k}>",
                            f"<a_{parent}>", END)))
        return out

    def _index(self, tok: str, kind: str) -> int | None:
        prefix = f"<{kind}_"
        if not (tok.startswith(prefix) and tok.endswith(">")):
            return None
        body = tok[len(prefix):-1]
        return int(body) if body.isdigit() else None

    def canonical(self, answer, *, edge_set=False):
        if len(answer) != 3:
            return None
        b1, b2, a = (self._index(t, k) for t, k in zip(answer, ("b1", "b2", "a"), strict=True))
        if None in (b1, b2, a):
            return None
        c = int(self.params["n_children"])
        if b1 // c != a or b2 // c != a:
            return None
        return (a, b1, b2)


class Triangle(Task):
    """A 999-node graph with many triangles, learnt from edge lines; answers name a triangle."""

    name = "triangle"
    marker = TRI
    answer_len = 9

    def __init__(self, seed: int = 0, **params) -> None:
        super().__init__(seed, **params)
        self.adj = self._build_graph(np.random.default_rng([self.seed, 1]))

    def entities(self) -> list[str]:
        return [f"<a_{i}>" for i in range(int(self.params["n_nodes"]))]

    def _build_graph(self, rng: np.random.Generator) -> list[set[int]]:
        n, d = int(self.params["n_nodes"]), int(self.params["degree"])
        cap, t_max = self.params["alpha"] * d, int(self.params["triangles_per_node"])
        if n < d + 1:
            raise ValueError(f"n_nodes={n} too small for degree {d}")
        adj: list[set[int]] = [set() for _ in range(n)]
        deg = np.zeros(n, dtype=int)
        for u in range(n):  # step 1: degree-D random graph, avoiding over-full nodes
            while len(adj[u]) < d:
                ok = deg <= cap
                ok[u] = False
                ok[list(adj[u])] = False
                cand = np.flatnonzero(ok)
                if not len(cand):
                    break
                v = int(cand[int(rng.integers(len(cand)))])
                adj[u].add(v)
                adj[v].add(u)
                deg[[u, v]] += 1
        count = np.zeros(n, dtype=int)
        for u in range(n):  # step 2: close triangles around each node
            while count[u] < t_max and len(adj[u]) >= 2:
                nb = sorted(adj[u])
                i, j = rng.choice(len(nb), size=2, replace=False)
                v, w = nb[int(i)], nb[int(j)]
                adj[v].add(w)
                adj[w].add(v)
                count[[u, v, w]] += 1
        return adj

    def edges(self) -> list[tuple[int, int]]:
        return [(u, v) for u in range(len(self.adj)) for v in sorted(self.adj[u]) if u < v]

    def train_examples(self, rng):
        edges, out = self.edges(), []
        for _ in range(int(self.params["n_draws"])):
            if rng.random() < 1 / 3:
                while True:  # a random closed wedge u-v, u-w with v-w an edge
                    u = int(rng.integers(len(self.adj)))
                    if len(self.adj[u]) < 2:
                        continue
                    nb = sorted(self.adj[u])
                    i, j = rng.choice(len(nb), size=2, replace=False)
                    v, w = nb[int(i)], nb[int(j)]
                    if w in self.adj[v]:
                        break
                a, b, c = (f"<a_{x}>" for x in (u, v, w))
                out.append((TRI, (a, b, SEP, b, c, SEP, c, a, END)))
            else:
                u, v = edges[int(rng.integers(len(edges)))]
                if rng.random() < 0.5:
                    u, v = v, u
                a, b = f"<a_{u}>", f"<a_{v}>"
                out.append((EDGE, (a, b, SEP, b, a, END)))
        return out

    def canonical(self, answer, *, edge_set=False):
        pairs = _pairs(answer)
        if pairs is None or len(pairs) != 3:
            return None
        try:
            nodes = [(int(u[3:-1]), int(v[3:-1])) for u, v in pairs]
        except ValueError:
            return None
        verts = sorted({x for e in nodes for x in e})
        n = len(self.adj)
        if len(verts) != 3 or not all(0 <= x < n for x in verts):
            return None
        a, b, c = verts
        want = {frozenset((a, b)), frozenset((b, c)), frozenset((a, c))}
        if {frozenset(e) for e in nodes} != want:  # the three pairs are the triangle's edges
            return None
        if b not in self.adj[a] or c not in self.adj[b] or c not in self.adj[a]:
            return None
        return tuple(verts)


class _Construction(Task):
    """Circle/line: pure structure, no hidden knowledge; entities ``<a_0..n_entities-1>``."""

    answer_len = 9 * 2 + 8 + 1  # replaced per instance

    def __init__(self, seed: int = 0, **params) -> None:
        super().__init__(seed, **params)
        k = int(self.params["length"])
        if self._n_nodes() > int(self.params["n_entities"]):
            raise ValueError(f"{self.name} of length {k} needs {self._n_nodes()} distinct "
                             f"entities, only n_entities={self.params['n_entities']}")
        self.answer_len = 2 * k + (k - 1) + 1

    def _n_nodes(self) -> int:
        raise NotImplementedError

    def entities(self) -> list[str]:
        return [f"<a_{i}>" for i in range(int(self.params["n_entities"]))]

    def _edges(self, order: list[int]) -> list[tuple[int, int]]:
        raise NotImplementedError

    def train_examples(self, rng):
        out = []
        m, k = int(self.params["n_entities"]), self._n_nodes()
        for _ in range(int(self.params["n_train"])):
            order = [int(x) for x in rng.choice(m, size=k, replace=False)]
            edges = self._edges(order)
            edges = [edges[int(i)] for i in rng.permutation(len(edges))]
            toks: list[str] = []
            for u, v in edges:
                toks += [SEP, f"<a_{u}>", f"<a_{v}>"] if toks else [f"<a_{u}>", f"<a_{v}>"]
            out.append((Q, (*toks, END)))
        return out

    def _shape_ok(self, pairs: list[tuple[str, str]]) -> bool:
        raise NotImplementedError

    def canonical(self, answer, *, edge_set=False):
        pairs = _pairs(answer)
        known = set(self.entities())
        if (pairs is None or len(pairs) != int(self.params["length"])
                or any(u not in known or v not in known or u == v for u, v in pairs)
                or len({frozenset(e) for e in pairs}) != len(pairs)):
            return None
        if not self._shape_ok(pairs):
            return None
        return frozenset(pairs) if edge_set else relabel(pairs)


def _degrees_and_walk(pairs: list[tuple[str, str]]) -> tuple[dict[str, int], dict[str, set]]:
    deg: dict[str, int] = {}
    nb: dict[str, set] = {}
    for u, v in pairs:
        for x, y in ((u, v), (v, u)):
            deg[x] = deg.get(x, 0) + 1
            nb.setdefault(x, set()).add(y)
    return deg, nb


def _reachable(start: str, nb: dict[str, set]) -> set[str]:
    seen, stack = {start}, [start]
    while stack:
        for y in nb[stack.pop()]:
            if y not in seen:
                seen.add(y)
                stack.append(y)
    return seen


class Circle(_Construction):
    """A cycle through ``length`` distinct entities (undirected check, as in the official code,
    plus the exact edge count the task asks for)."""

    name = "circle"

    def _n_nodes(self) -> int:
        return int(self.params["length"])

    def _edges(self, order):
        return [(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]

    def _shape_ok(self, pairs):
        deg, nb = _degrees_and_walk(pairs)
        return all(d == 2 for d in deg.values()) and len(_reachable(pairs[0][0], nb)) == len(deg)


class Line(_Construction):
    """A simple path through ``length + 1`` distinct entities."""

    name = "line"

    def _n_nodes(self) -> int:
        return int(self.params["length"]) + 1

    def _edges(self, order):
        return [(order[i], order[i + 1]) for i in range(len(order) - 1)]

    def _shape_ok(self, pairs):
        deg, nb = _degrees_and_walk(pairs)
        ends = [x for x, d in deg.items() if d == 1]
        return (len(ends) == 2 and all(d in (1, 2) for d in deg.values())
                and len(_reachable(ends[0], nb)) == len(deg))


_CLASSES: dict[str, type[Task]] = {"sibling": Sibling, "triangle": Triangle, "circle": Circle,
                                    "line": Line}


def make_task(name: str, seed: int = 0, **params) -> Task:
    """Build a task by name (``sibling``, ``triangle``, ``circle``, ``line``).

    Parameters
    ----------
    name : str
        One of :data:`TASKS`.
    seed : int, default=0
        Seeds the task's hidden knowledge (the graph, the siblings).
    **params
        Task parameters overriding the defaults (e.g. ``n_entities``, ``length``, ``n_train``
        for ``line``/``circle``; ``n_parents``, ``n_children`` for ``sibling``).

    Returns
    -------
    Task
        The task: vocabulary, training-example generator and coherence rule.

    Raises
    ------
    ValueError
        For an unknown task or parameter name (the message lists the known ones), a
        parameter that is not positive, or parameters the task cannot build (a line longer
        than its entities).

    Examples
    --------
    >>> task = make_task("line", seed=0)
    >>> task.name, task.answer_len, task.params["n_entities"]
    ('line', 27, 10)
    >>> make_task("line", seed=0, n_entities=6, length=5).params["length"]
    5
    """
    if name not in _CLASSES:
        raise ValueError(f"unknown task {name!r}; choose one of {TASKS}")
    return _CLASSES[name](seed, **params)


@dataclasses.dataclass
class Dataset:
    """A generated benchmark: training lines, fresh test prompts and what regenerates them.

    Parameters
    ----------
    task : str
        The task name.
    seed : int
        The instance seed.
    seed_len : int
        Symbols per seed-conditioning prefix (0: none).
    params : dict
        The task parameters.
    train : list of Example
        The training lines.
    test_prompts : list of str
        Fresh prompts (seeds unseen in training) for generation.

    Examples
    --------
    >>> from icml25.creativity import generate
    >>> data = generate("line", seed=0, seed_len=4, n_entities=4, length=3, n_train=3,
    ...                 n_test=2)
    >>> data.test_prompts
    ['shel <q>', 'xpts <q>']
    >>> data.meta()["n_train"]
    3
    """

    task: str
    seed: int
    seed_len: int
    params: dict
    train: list[Example]
    test_prompts: list[str]

    def meta(self) -> dict:
        return {"task": self.task, "seed": self.seed, "seed_len": self.seed_len,
                "params": self.params, "n_train": len(self.train),
                "n_test": len(self.test_prompts), "format": "[SEED] MARKER ANSWER </a>"}


def generate(task: str | Task, *, seed: int = 0, seed_len: int = 10, **params) -> Dataset:
    """Generate a training set (one unique seed per seeded example) and fresh test prompts.

    Deterministic given ``seed``: the same arguments give the same lines.

    Parameters
    ----------
    task : str or Task
        A task name of ``TASKS`` or a built task.
    seed : int, default=0
        Seeds the task instance and the draws.
    seed_len : int, default=10
        Symbols per seed-conditioning prefix (0: no seeds).
    **params
        Task parameters (when ``task`` is a name), as in :func:`make_task`.

    Returns
    -------
    Dataset
        The training lines and the test prompts.

    Raises
    ------
    ValueError
        For a negative ``seed_len``, an unknown task or a bad parameter.

    Examples
    --------
    >>> from icml25.creativity import generate
    >>> data = generate("line", seed=0, seed_len=4, n_entities=4, length=3, n_train=3,
    ...                 n_test=2)
    >>> data.train[0].line()
    'vykc <q> <a_3> <a_0> <sep> <a_2> <a_3> <sep> <a_0> <a_1> </a>'
    >>> len(data.train), data.test_prompts
    (3, ['shel <q>', 'xpts <q>'])
    """
    if seed_len < 0:
        raise ValueError("seed_len must be >= 0")
    t = task if isinstance(task, Task) else make_task(task, seed, **params)
    rng = np.random.default_rng([t.seed, 2])
    pairs = t.train_examples(rng)
    n_seeded = sum(m != EDGE for m, _ in pairs)  # edge lines carry no seed (as in the repo)
    seeds = iter(make_seeds(n_seeded, seed_len, rng))
    train = [Example("" if m == EDGE else next(seeds), m, a) for m, a in pairs]
    used = {e.seed for e in train}
    tests = make_seeds(t.n_test(), seed_len, rng, exclude=used)
    prompts = [f"{s} {t.marker}" if s else t.marker for s in tests]
    return Dataset(t.name, t.seed, seed_len, dict(t.params), train, prompts)
