from html.parser import HTMLParser

import pytest

from icml25.core import Outcome, experiment, load_results, run_experiment, select, write_report
from icml25.core.figures import new_figure
from icml25.core.registry import unregister


class _Page(HTMLParser):
    """Collects table cells, image sources, section ids and <code> texts of a report."""

    def __init__(self):
        super().__init__()
        self.cells, self.images, self.sections, self.codes = [], [], [], []
        self._in = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        if tag == "section":
            self.sections.append(attrs["id"])
        if tag in ("td", "code"):
            self._in = tag

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "td":
            self.cells.append(data)
        elif self._in == "code":
            self.codes.append(data)


@pytest.fixture
def toy_experiments():
    @experiment("toy-mean", subsystem="toy", paper="Toy et al. 2025", reproduces="Table 9",
                published={"mean": 0.5}, quick={"n": 100}, full={"n": 10_000})
    def toy_mean(ctx):
        x = ctx.rng.uniform(size=ctx.settings["n"])
        fig, ax = new_figure()
        ax.hist(x)
        ctx.save_figure(fig, "histogram")
        return Outcome([ctx.compare("mean", float(x.mean()), scale=f"n={ctx.settings['n']}")],
                       data={"n": ctx.settings["n"]})

    @experiment("toy-broken", subsystem="toy", paper="Toy et al. 2025", reproduces="nothing")
    def toy_broken(ctx):
        raise RuntimeError("boom")

    yield
    unregister("toy-mean")
    unregister("toy-broken")


def test_registry_selects_by_name_and_subsystem(toy_experiments):
    assert [e.name for e in select(["toy-mean"])] == ["toy-mean"]
    assert {e.name for e in select(["toy"])} == {"toy-mean", "toy-broken"}
    assert select(["toy-mean"])[0].settings("full") == {"n": 10_000}
    with pytest.raises(KeyError, match="no experiment"):
        select(["nope"])
    with pytest.raises(ValueError, match="mode"):
        select(["toy-mean"])[0].settings("medium")


def test_double_registration_is_refused(toy_experiments):
    with pytest.raises(ValueError, match="twice"):
        experiment("toy-mean", paper="x", reproduces="y")(lambda ctx: Outcome())


def test_run_writes_result_and_same_seed_reproduces(tmp_path, toy_experiments):
    (exp,) = select(["toy-mean"])
    a = run_experiment(exp, mode="quick", seed=4, out_root=tmp_path)
    b = run_experiment(exp, mode="quick", seed=4, out_root=tmp_path / "again")
    c = run_experiment(exp, mode="quick", seed=5, out_root=tmp_path / "other")
    assert a.status == "ok" and a.comparisons[0].published == 0.5
    assert a.comparisons[0].ours == b.comparisons[0].ours != c.comparisons[0].ours
    assert (tmp_path / "toy-mean" / "result.json").exists()
    assert (tmp_path / "toy-mean" / "histogram.png").stat().st_size > 1000
    assert a.command == "icml25 reproduce toy-mean --quick --seed 4"


def test_a_failing_experiment_is_recorded_not_raised(tmp_path, toy_experiments):
    (exp,) = select(["toy-broken"])
    result = run_experiment(exp, out_root=tmp_path)
    assert result.status == "failed" and "RuntimeError: boom" in result.error


def test_report_has_a_section_table_figure_and_command_per_experiment(tmp_path, toy_experiments):
    for exp in select(["toy"]):
        run_experiment(exp, mode="quick", seed=1, out_root=tmp_path)
    path = write_report(tmp_path, unavailable={"mdm": "needs torch"})
    page = _Page()
    page.feed(path.read_text())
    assert page.sections == ["toy-broken", "toy-mean"]
    assert ["mean", "0.5"] == page.cells[page.cells.index("mean"):][:2]
    assert len(page.images) == 1 and page.images[0].startswith("data:image/png;base64,")
    assert "icml25 reproduce toy-mean --quick --seed 1" in page.codes
    assert "needs torch" in path.read_text()
    assert [r.name for r in load_results(tmp_path)] == ["toy-broken", "toy-mean"]


def test_empty_report_says_nothing_was_run(tmp_path):
    text = write_report(tmp_path).read_text()
    assert "No experiments have been run" in text


def test_cli_reproduce_runs_selected_experiment_and_fails_on_failure(tmp_path, toy_experiments):
    from typer.testing import CliRunner

    from icml25.cli import app

    ok = CliRunner().invoke(app, ["reproduce", "toy-mean", "--out", str(tmp_path), "--seed", "2"])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "report.html").exists() and (tmp_path / "toy-mean" / "result.json").exists()
    bad = CliRunner().invoke(app, ["reproduce", "toy-broken", "--out", str(tmp_path)])
    assert bad.exit_code == 1 and "boom" in bad.output


def test_torch_threads_pinned_by_an_experiment_are_given_back(tmp_path):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()

    @experiment("toy-threads", subsystem="toy", paper="Toy", reproduces="nothing")
    def toy_threads(ctx):
        torch.set_num_threads(before + 1)
        return Outcome()

    try:
        (exp,) = select(["toy-threads"])
        assert run_experiment(exp, out_root=tmp_path).status == "ok"
        assert torch.get_num_threads() == before
    finally:
        unregister("toy-threads")


def test_reproduce_imports_only_the_rooms_it_is_asked_for():
    import subprocess
    import sys

    from icml25.core.registry import rooms_for

    assert rooms_for(["conformal-binomial", "missing-score", "conformal"]) == (
        "conformal", "missing_score")
    assert rooms_for([]) is None and rooms_for(["no-such-thing"]) is None
    code = ("import sys; from icml25.core.registry import load_experiments, rooms_for; "
            "load_experiments(rooms_for(['conformal-binomial'])); "
            "print(sorted(m for m in ('icml25.mdm.experiments', 'icml25.review.experiments', "
            "'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
