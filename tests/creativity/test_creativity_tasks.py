"""Generators: deterministic, in the notes' formats; the scorer exact on hand-made answers."""

import itertools
import re

import numpy as np
import pytest

from icml25.creativity import (
    TASKS,
    AnswerError,
    Scorer,
    answer_tokens,
    generate,
    make_seeds,
    make_task,
    parse_line,
    relabel,
)

SMALL = {
    "sibling": {"n_parents": 3, "n_children": 10, "n_train": 200, "n_test": 50},
    "triangle": {"n_nodes": 60, "n_draws": 600, "n_test": 50},
    "circle": {"n_train": 300, "n_test": 50},
    "line": {"n_train": 300, "n_test": 50},
}
SEED_RE = re.compile(r"^[a-z0-9]{10}$")


@pytest.mark.parametrize("task", TASKS)
def test_generator_is_deterministic_and_seed_dependent(task):
    a = generate(task, seed=3, **SMALL[task])
    b = generate(task, seed=3, **SMALL[task])
    c = generate(task, seed=4, **SMALL[task])
    assert [e.line() for e in a.train] == [e.line() for e in b.train]
    assert a.test_prompts == b.test_prompts
    assert [e.line() for e in a.train] != [e.line() for e in c.train]


@pytest.mark.parametrize("task", TASKS)
def test_seeds_unique_and_test_prompts_fresh(task):
    data = generate(task, seed=0, **SMALL[task])
    seeds = [e.seed for e in data.train if e.marker != "edge:"]
    assert all(SEED_RE.match(s) for s in seeds)
    assert len(set(seeds)) == len(seeds)
    test_seeds = [p.split()[0] for p in data.test_prompts]
    assert len(set(test_seeds)) == len(test_seeds) == SMALL[task]["n_test"]
    assert not set(test_seeds) & set(seeds)
    marker = "tri:" if task == "triangle" else "<q>"
    assert all(p.split()[1] == marker and len(p.split()) == 2 for p in data.test_prompts)


@pytest.mark.parametrize("task", TASKS)
def test_every_training_answer_is_coherent_and_memorised(task):
    data = generate(task, seed=1, **SMALL[task])
    t = make_task(task, 1, **SMALL[task])
    answers = [e.line() for e in data.train if e.marker != "edge:"]
    report = Scorer(t, data.train).score(answers)
    assert report.n == len(answers) and report.n_errors == 0
    assert report.coherence == 1.0 and report.memorization == 1.0 and report.creativity == 0.0
    vocab = set(t.vocab())
    assert all(tok in vocab for e in data.train for tok in e.answer)
    assert all(e.answer[-1] == "</a>" for e in data.train)


def test_sibling_format_and_structure():
    data = generate("sibling", seed=0, **SMALL["sibling"])
    c = SMALL["sibling"]["n_children"]
    for e in data.train:
        assert e.marker == "<q>" and len(e.answer) == 4
        b1, b2, a = (int(re.search(r"_(\d+)>", x).group(1)) for x in e.answer[:3])
        assert e.answer[0].startswith("<b1_") and e.answer[1].startswith("<b2_")
        assert e.answer[2].startswith("<a_") and b1 // c == a and b2 // c == a
    assert len({e.answer for e in data.train}) == len(data.train)  # sampled without repeats


def test_sibling_vocab_size_at_paper_scale():
    assert len(make_task("sibling").vocab()) == 8 + 36 + 5 + 2500 + 2500


def test_triangle_graph_and_lines():
    t = make_task("triangle", 0, **SMALL["triangle"])
    deg = [len(a) for a in t.adj]
    assert min(deg) >= 3  # every node reaches degree D = 3 before triangles are closed
    assert all(v in t.adj[u] for u in range(len(t.adj)) for v in t.adj[u])  # undirected
    data = generate(t)
    tri = [e for e in data.train if e.marker == "tri:"]
    edge = [e for e in data.train if e.marker == "edge:"]
    # about 1/3 triangle lines: binomial sd with n=600 is ~11.5 lines
    assert abs(len(tri) - 200) < 5 * 11.5
    assert all(e.seed == "" for e in edge) and all(e.seed for e in tri)
    for e in edge:
        u, v, sep, v2, u2, end = e.answer
        assert (sep, end) == ("<sep>", "</a>") and (v2, u2) == (v, u)
        assert int(v[3:-1]) in t.adj[int(u[3:-1])]
    for e in tri:
        a, b, _, b2, c, _, c2, a2, _ = e.answer
        assert (a2, b2, c2) == (a, b, c)


@pytest.mark.parametrize("task,nodes", [("circle", 9), ("line", 10)])
def test_construction_format(task, nodes):
    data = generate(task, seed=0, **SMALL[task])
    for e in data.train:
        assert len(e.answer) == 27
        pairs = [tuple(e.answer[i:i + 2]) for i in range(0, 27, 3)]
        assert all(e.answer[i] == "<sep>" for i in range(2, 26, 3))
        assert len({x for p in pairs for x in p}) == nodes
    orders = {tuple(e.answer[:2]) for e in data.train}
    assert len(orders) > 20  # shuffled edge order, random entities


# ---- the scorer on hand-made answers -------------------------------------------------------------

def _line(*edges):
    return " <sep> ".join(f"<a_{u}> <a_{v}>" for u, v in edges) + " </a>"


PATH = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8), (8, 9)]


def test_line_scorer_exact():
    t = make_task("line", 0)
    train = [parse_line("abc <q> " + _line(*PATH))]
    s = Scorer(t, train)
    renamed = [(u + 10, v + 10) for u, v in PATH]  # outside vocab -> error
    assert s.judge(_line(*renamed)).error is not None
    perm = [3, 7, 1, 0, 9, 2, 8, 5, 6, 4]
    relabelled = [(perm[u], perm[v]) for u, v in PATH]  # same edge-order pattern, new names
    shuffled = PATH[::-1]  # same nodes, another edge order -> another construction
    swapped = [PATH[1], PATH[0], *PATH[2:]]  # a third edge order
    broken = PATH[:-1] + [(8, 0)]  # closes a cycle instead of reaching node 9
    short = PATH[:-1]
    answers = [_line(*PATH), _line(*relabelled), _line(*shuffled), _line(*shuffled),
               _line(*swapped), _line(*broken), _line(*short), "<a_0> <a_1> <a_2>"]
    j = [s.judge(a) for a in answers]
    assert [x.coherent for x in j] == [True, True, True, True, True, False, False, False]
    assert [x.memorized for x in j] == [True, True, False, False, False, False, False, False]
    r = s.score(answers)
    assert r.n == 8
    assert r.coherence == pytest.approx(5 / 8)
    assert r.memorization == pytest.approx(2 / 8)
    # distinct canonical forms: PATH (= relabelled), shuffled, swapped
    assert r.uniqueness == pytest.approx(3 / 8)
    assert r.creativity == pytest.approx(2 / 8)


def test_line_rejects_repeated_node_and_self_loop():
    t = make_task("line", 0)
    s = Scorer(t, [])
    self_loop = PATH[:-1] + [(9, 9)]
    repeat = PATH[:-1] + [(7, 8)]
    assert not s.judge(_line(*self_loop)).coherent
    assert not s.judge(_line(*repeat)).coherent


def _pairs(edges):
    return [(f"<a_{u}>", f"<a_{v}>") for u, v in edges]


def test_circle_scorer_exact():
    t = make_task("circle", 0)
    cyc = [(i, (i + 1) % 9) for i in range(9)]
    s = Scorer(t, [parse_line("seedx <q> " + _line(*cyc))])
    rotated_names = [((u + 1) % 10, (v + 1) % 10) for u, v in cyc]  # uses node 9, not 0
    two_cycles = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (6, 7), (7, 8), (8, 6)]
    path = PATH
    assert relabel(_pairs(cyc[3:] + cyc[:3])) == relabel(_pairs(cyc))  # rotations coincide
    shuffled = [cyc[1], cyc[0], *cyc[2:]]
    j = [s.judge(_line(*e)) for e in (cyc, rotated_names, two_cycles, path, shuffled)]
    assert [x.coherent for x in j] == [True, True, False, False, True]
    assert [x.memorized for x in j] == [True, True, False, False, False]
    r = s.score([_line(*e) for e in (cyc, rotated_names, two_cycles, path, shuffled, shuffled)])
    assert r.creativity == pytest.approx(1 / 6) and r.uniqueness == pytest.approx(2 / 6)


def test_relabel_is_first_appearance():
    assert relabel([("x", "y"), ("z", "x")]) == ((0, 1), (2, 0))
    assert relabel([("q", "r"), ("s", "q")]) == relabel([("x", "y"), ("z", "x")])


def test_sibling_scorer_exact():
    t = make_task("sibling", 0, n_parents=2, n_children=3, n_train=4, n_test=2)
    s = Scorer(t, [parse_line("aa <q> <b1_0> <b2_1> <a_0> </a>")])
    answers = [
        "<b1_0> <b2_1> <a_0> </a>",  # memorised
        "<b1_0> <b2_2> <a_0> </a>",  # novel
        "<b1_0> <b2_2> <a_0>",  # same, without </a>: a duplicate
        "zz9 <q> <b1_0> <b2_2> <a_0> </a> <a_1>",  # whole line; text after </a> ignored
        "<b1_3> <b2_4> <a_1> </a>",  # novel, other parent
        "<b1_0> <b2_4> <a_1> </a>",  # b1 belongs to parent 0: incoherent
        "<a_0> <b1_0> <b2_1> </a>",  # parent first: not the task's format
        "<b1_0> <b2_1> </a>",  # too short
        "<b1_0> <b2_1> <a_9> </a>",  # unknown token -> error
        "   ",  # empty -> error
    ]
    r = s.score(answers)
    assert r.n == 8 and r.n_errors == 2
    assert r.coherence == pytest.approx(5 / 8)
    assert r.memorization == pytest.approx(1 / 8)
    assert r.uniqueness == pytest.approx(3 / 8)
    assert r.creativity == pytest.approx(2 / 8)
    assert "unknown token" in r.judgements[8].error and r.judgements[9].error == "empty answer"


def test_triangle_scorer_exact():
    t = make_task("triangle", 0, **SMALL["triangle"])
    tris = sorted({(a, b, c) for a in range(len(t.adj)) for b in t.adj[a] for c in t.adj[b]
                   if a < b < c and c in t.adj[a]})
    assert len(tris) >= 3
    (a, b, c), (d, e, f) = tris[0], tris[1]
    non = next((x, y, z) for x, y, z in itertools.combinations(range(len(t.adj)), 3)
               if not (y in t.adj[x] and z in t.adj[y] and z in t.adj[x]))

    def ans(x, y, z):
        return f"<a_{x}> <a_{y}> <sep> <a_{y}> <a_{z}> <sep> <a_{z}> <a_{x}> </a>"

    s = Scorer(t, [parse_line("ab tri: " + ans(a, b, c)), parse_line("edge: " + ans(d, e, f))])
    answers = [ans(a, b, c), ans(c, a, b), ans(d, e, f), ans(f, d, e), ans(*non),
               f"<a_{a}> <a_{b}> <sep> <a_{b}> <a_{c}> </a>"]
    r = s.score(answers)
    # the edge line is knowledge, not a training triangle: (d,e,f) is original
    assert [j.coherent for j in r.judgements] == [True, True, True, True, False, False]
    assert [j.memorized for j in r.judgements] == [True, True, False, False, False, False]
    assert r.creativity == pytest.approx(1 / 6) and r.uniqueness == pytest.approx(2 / 6)
    assert r.memorization == pytest.approx(2 / 6)


def test_answer_tokens_and_parse_errors():
    vocab = set(make_task("line").vocab())
    assert answer_tokens("ab <q> <a_1> <a_2> </a> junk", vocab) == ["<a_1>", "<a_2>"]
    with pytest.raises(AnswerError, match="unknown"):
        answer_tokens("<a_1> <a_99>", vocab)
    with pytest.raises(AnswerError):
        parse_line("no marker here")
    with pytest.raises(AnswerError):
        parse_line("AB <q> <a_1>")  # seed symbols are lowercase letters and digits only


def test_make_seeds_fresh_and_distinct():
    rng = np.random.default_rng(0)
    first = make_seeds(500, 2, rng)
    second = make_seeds(500, 2, rng, exclude=first)
    assert len(set(first)) == 500 and not set(first) & set(second)
    with pytest.raises(ValueError):
        make_seeds(1000, 1, rng)


def test_bad_parameters():
    with pytest.raises(ValueError, match="unknown task"):
        make_task("square")
    with pytest.raises(ValueError, match="unknown line parameters"):
        make_task("line", n_parents=3)
    with pytest.raises(ValueError, match="distinct"):
        make_task("line", n_entities=5)
    with pytest.raises(ValueError, match="exceeds"):
        generate("sibling", n_parents=1, n_children=2, n_train=10)


def test_canonical_order_merges_edge_orders_of_the_same_edge_set():
    """A line listed in another edge order counts twice by default and once with the switch;
    a renamed line is the other way round (the two equivalences differ, neither contains the
    other)."""
    t = make_task("line", 0)
    perm = [3, 7, 1, 0, 9, 2, 8, 5, 6, 4]
    reordered = [PATH[4], PATH[0], PATH[8], *PATH[1:4], *PATH[5:8]]
    renamed = [(perm[u], perm[v]) for u, v in PATH]
    answers = [_line(*PATH), _line(*reordered), _line(*renamed)]
    plain = Scorer(t, []).score(answers)
    merged = Scorer(t, [], canonical_order=True).score(answers)
    assert plain.coherence == merged.coherence == 1.0
    assert plain.uniqueness == pytest.approx(2 / 3)  # PATH = renamed; reordered apart
    assert merged.uniqueness == pytest.approx(2 / 3)  # PATH = reordered; renamed apart
    two = Scorer(t, []).score(answers[:2])
    assert two.uniqueness == 1.0 and two.creativity == 1.0  # counted twice
    once = Scorer(t, [], canonical_order=True).score(answers[:2])
    assert once.uniqueness == 0.5 and once.creativity == 0.5  # counted once
    # Memorisation follows the same form: a training line listed in another order.
    seen = Scorer(t, [parse_line("ab <q> " + _line(*PATH))], canonical_order=True)
    assert seen.judge(_line(*reordered)).memorized
    assert not seen.judge(_line(*renamed)).memorized
    assert not seen.judge(_line(*[(v, u) for u, v in PATH])).memorized  # directions count


def test_canonical_order_leaves_circle_coherence_and_other_tasks_alone():
    t = make_task("circle", 0)
    cyc = [(i, (i + 1) % 9) for i in range(9)]
    answers = [_line(*cyc), _line(*cyc[::-1]), _line(*cyc[:-1], (8, 1))]
    merged = Scorer(t, [], canonical_order=True).score(answers)
    assert merged.coherence == pytest.approx(2 / 3) and merged.uniqueness == pytest.approx(1 / 3)
    tri = make_task("triangle", 0, n_nodes=30)
    a, b = next((u, v) for u in range(30) for v in tri.adj[u] if u < v)
    c = next(w for w in tri.adj[a] & tri.adj[b])
    ans = f"<a_{a}> <a_{b}> <sep> <a_{b}> <a_{c}> <sep> <a_{c}> <a_{a}> </a>"
    assert (Scorer(tri, []).judge(ans).canonical
            == Scorer(tri, [], canonical_order=True).judge(ans).canonical)
