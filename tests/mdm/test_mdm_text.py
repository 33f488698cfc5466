"""The text experiment's data split, infilling tasks and scores (fast; no trained model)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml25.mdm import text_data, text_eval  # noqa: E402
from icml25.mdm.text_data import MASK, PAD  # noqa: E402


@pytest.fixture(scope="module")
def corpora():
    return text_data.load_corpus("train"), text_data.load_corpus("held_out")


def test_split_is_by_top_level_module_and_deterministic(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    names = [f"mod{i}" for i in range(40)]
    for name in names:
        (tmp_path / f"{name}.py").write_text(f"X = {name!r}\n")
        (pkg / f"{name}.py").write_text(f"Y = {name!r}\n")
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "t.py").write_text("Z = 1\n")
    (tmp_path / "broken.py").write_text("def (:\n")
    train = text_data.load_corpus("train", tmp_path)
    held = text_data.load_corpus("held_out", tmp_path)
    assert set(train.modules).isdisjoint(held.modules)
    # every file of the package 'pkg' sits in one split; test suites and broken files nowhere
    paths = {f.path for f in train.files + held.files}
    assert {f"pkg/{n}.py" for n in names} <= paths and "test/t.py" not in paths
    assert "broken.py" not in paths
    assert {f.module for f in held.files if f.path.startswith("pkg/")} in (set(), {"pkg"})
    # the split is a function of the module name alone
    expected = {n for n in names + ["pkg"] if text_data.split_of(n) == "held_out"}
    assert set(held.modules) == expected and 0 < len(expected) < len(names)


def test_no_held_out_line_reaches_training(corpora):
    train, held = corpora
    assert set(train.modules).isdisjoint(held.modules)
    assert {f.path for f in train.files}.isdisjoint(f.path for f in held.files)
    index = text_data.window_index(train, 256)
    # training windows are cut from the training files' bytes and nothing else
    assert index.data.tobytes() == b"".join(f.text for f in train.files)
    train_lines = {line for f in train.files for line in f.text.split(b"\n")}
    own = [line for f in held.files for line in f.text.split(b"\n")
           if len(line.strip()) >= 40 and line not in train_lines]
    assert len(own) > 1000
    data = index.data.tobytes()
    rng = np.random.default_rng(0)
    for i in rng.choice(len(own), 300, replace=False):
        assert data.find(own[i]) == -1
    # sampled windows start at line starts and come from inside one training file
    batch = text_data.windows(index, rng.integers(0, len(index.starts), 64))
    for row in batch:
        real = bytes(int(v) for v in row if v < 256)
        assert data.find(real) != -1


def test_windows_start_at_line_starts_and_pad_past_file_end(corpora):
    train, _ = corpora
    index = text_data.window_index(train, 256)
    starts = index.starts[np.random.default_rng(1).choice(len(index.starts), 200)]
    before = index.data[starts - 1]
    assert ((starts == 0) | (before == ord("\n"))).all()
    short = text_data.Corpus("train", (text_data.SourceFile("a.py", "a", b"x = 1\n"),
                                       text_data.SourceFile("b.py", "b", b"y = 2\n")))
    idx = text_data.window_index(short, 16)
    w = text_data.windows(idx, np.arange(len(idx.starts)))
    assert text_data.decode(w[0]) == "x = 1\n" and (w[0, 6:] == PAD).all()
    assert text_data.decode(w[1]) == "y = 2\n"


@pytest.mark.parametrize("kind", text_eval.KINDS)
def test_infill_tasks_mask_whole_lines_inside_the_window(corpora, kind):
    _, held = corpora
    tasks = text_eval.make_tasks(held, kind, 60, seed=3)
    assert tasks == text_eval.make_tasks(held, kind, 60, seed=3)
    assert tasks != text_eval.make_tasks(held, kind, 60, seed=4)
    for t in tasks:
        text = held.files[t.file].text
        a, b = t.span
        answer = t.answer(held)
        assert answer.strip() and b - a <= text_eval.MAX_SPAN[kind]
        assert a == 0 or text[a - 1] == ord("\n")
        assert text[b] == ord("\n")  # the line's newline stays visible
        n_lines = answer.count(b"\n") + 1
        assert n_lines == 1 if kind == "single" else 2 <= n_lines <= 5
        w0, w1 = t.window
        assert w0 <= a and b <= w1 and w1 - w0 == 256
        prompt = text_eval.task_prompt(t, held)
        assert ((prompt == MASK) == (np.arange(256) >= a - w0) & (np.arange(256) < b - w0)).all()
        assert text_eval.parses_with(t, held, answer)


class _Oracle(torch.nn.Module):
    """Knows the true window of every prompt (by its visible tail, past the span): logits on
    the answer."""

    def __init__(self, tasks, corpus):
        super().__init__()
        self.truth = {}
        for t in tasks:
            text = corpus.files[t.file].text[t.window[0]:t.window[1]]
            ids = np.full(256, PAD)
            ids[:len(text)] = np.frombuffer(text, dtype=np.uint8)
            self.truth[tuple(text_eval.task_prompt(t, corpus)[-64:])] = ids

    def forward(self, x):
        out = torch.zeros(*x.shape, text_data.VOCAB_SIZE)
        for i, row in enumerate(x.tolist()):
            ids = self.truth[tuple(row[-64:])] if MASK in row else np.array(row)
            out[i, torch.arange(x.shape[1]), torch.from_numpy(ids)] = 5.0
        return out


def test_an_oracle_fills_every_span_exactly(corpora):
    _, held = corpora
    tasks = text_eval.make_tasks(held, "multi", 12, seed=5)
    oracle = _Oracle(tasks, held)
    for planner in ("random", "top_margin"):
        filled = text_eval.fill_tasks(oracle, tasks, held, planner=planner, bytes_per_step=2,
                                      generator=torch.Generator().manual_seed(0))
        score = text_eval.score_infilling(tasks, held, filled)
        assert score["exact"]["rate"] == 1.0 and score["parses"]["rate"] == 1.0
        assert score["byte_acc"]["mean"] == 1.0
    wrong = [b"(" * (t.span[1] - t.span[0]) for t in tasks]
    score = text_eval.score_infilling(tasks, held, wrong)
    # a span inside a docstring still parses whatever it holds: 'parses' is a weak measure
    assert score["exact"]["rate"] == 0.0 and score["parses"]["rate"] < 0.5
    assert score["byte_acc"]["mean"] < 0.2  # only the spans' own '(' bytes are right
    assert score["exact"]["ci_high"] < 0.3  # 0 of 12: the Clopper-Pearson upper end is 26%


def test_perplexity_and_entropy_measures():
    class Uniform(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(*x.shape, text_data.VOCAB_SIZE)

    samples = torch.randint(0, 256, (4, 32))
    nll = text_eval.byte_nll(Uniform(), samples)
    assert torch.allclose(nll, torch.full((4,), np.log(text_data.VOCAB_SIZE)))
    ent = text_eval.unigram_entropy(torch.stack([torch.full((256,), 7), torch.arange(256)]))
    assert ent.tolist() == pytest.approx([0.0, 8.0])
    report = text_eval.perplexity_report(nll, ent.repeat(2))
    assert report["perplexity"] == pytest.approx(text_data.VOCAB_SIZE)


def test_cli_trains_a_text_model_and_its_card_counts_training_bytes(tmp_path, corpora):
    import json

    from typer.testing import CliRunner

    from icml25.mdm.cli import app

    out = CliRunner().invoke(app, ["train", "--task", "text", "--out", str(tmp_path / "r"),
                                   "--steps", "2", "--batch-size", "2", "--warmup", "0",
                                   "--d-model", "32", "--n-layers", "1", "--n-heads", "2"])
    assert out.exit_code == 0, out.output
    card = json.loads((tmp_path / "r" / "model" / "training.json").read_text())
    # a text model counts the bytes it trains on, not "base puzzles"
    assert card["train_bytes"] == corpora[0].n_bytes() and "base_puzzles" not in card
    assert card["final"]["step"] == 2
