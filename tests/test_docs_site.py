"""The documentation site: every public name is in the API reference with a docstring, the
docstring examples run, the CLI reference covers every command, and the guides stay guides.

The site itself is built by ``make docs`` (``mkdocs build --strict``, in CI); these tests check
the generated pages' sources without building, so they stay fast.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py")
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)

#: rooms whose import needs an extra that may be missing -> that extra's module
_NEEDS = {"missing_score": "torch", "mdm": "torch", "creativity": "torch", "nn": "torch",
          "collab": "openai", "review": "fastapi"}


def _room(room: str):
    if room in _NEEDS:
        pytest.importorskip(_NEEDS[room])
    return importlib.import_module(f"icml25.{room}")


@pytest.mark.parametrize("room", list(hooks.ROOMS))
def test_every_public_name_is_in_the_api_reference_with_a_docstring(room):
    module = _room(room)
    page = hooks.api_page(room)
    entries = {name: path for name, _, path in hooks.api_entries(room)}
    assert sorted(entries) == sorted(module.__all__)
    for name, path in entries.items():
        assert f"::: {path}\n" in page, (room, name)
        obj = getattr(module, name)
        target = importlib.import_module(path.rsplit(".", 1)[0]) if "." in path else None
        if inspect.isclass(obj) or inspect.isfunction(obj):
            doc = (obj.__doc__ or "").strip()
            assert doc, f"icml25.{room}.{name} has no docstring"
            # a dataclass without one gets its signature as a docstring: that is not one
            assert not doc.startswith(f"{obj.__name__}("), f"icml25.{room}.{name}: no docstring"
        else:  # a constant: the page points at the module that defines it
            assert getattr(target, name) is obj, (room, name, path)


def test_every_room_has_an_api_page_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for room in hooks.ROOMS:
        assert f"api/{room}.md" in nav, room
    src_rooms = {p.parent.name for p in (ROOT / "src" / "icml25").glob("*/__init__.py")}
    assert src_rooms <= set(hooks.ROOMS), src_rooms - set(hooks.ROOMS)


def _commands(group, path=("icml25",)):
    yield " ".join(path)
    for name, sub in getattr(group, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_the_cli_reference_lists_every_command():
    pytest.importorskip("torch")
    pytest.importorskip("fastapi")
    pytest.importorskip("openai")
    page = hooks.cli_page()
    commands = list(_commands(hooks.cli_command()))
    assert len(commands) > 20
    for command in commands:
        assert f"`{command}`" in page, command
    assert "--alpha" in page and "Usage: icml25 conformal bound" in page


# --------------------------------------------------------------------------- docstring examples
def _doctests():
    """(room, name, doctest) for each public class/function whose docstring has examples."""
    out = []
    finder = doctest.DocTestFinder(recurse=False)
    for room in hooks.ROOMS:
        try:
            module = _room(room)
        except pytest.skip.Exception:
            continue
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            globs = vars(importlib.import_module(obj.__module__)).copy()
            for test in finder.find(obj, f"icml25.{room}.{name}", globs=globs):
                if test.examples:
                    out.append(pytest.param(test, id=f"{room}.{name}"))
    return out


_DOCTESTS = _doctests()


def test_the_most_used_names_have_examples():
    ids = {p.id for p in _DOCTESTS}
    wanted = {"conformal.ConformalRegressor", "conformal.ConformalClassifier",
              "conformal.RiskPosterior", "conformal.calibrate", "worstoff.value", "worstoff.par",
              "royalties.royalty_shares", "royalties.shapley_values"}
    if importlib.util.find_spec("torch"):
        wanted |= {"missing_score.MissingScoreGGM", "mdm.generate", "creativity.make_task"}
    assert wanted <= ids, sorted(wanted - ids)


@pytest.mark.parametrize("test", _DOCTESTS)
def test_docstring_example_runs(test, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)


#: rooms whose every public function/class docstring is complete (numpydoc)
COMPLETE_DOCSTRING_ROOMS = ["royalties", "mdm", "conformal", "creativity", "worstoff", "core",
                            "nn", "review", "missing_score", "collab"]


def _takes_parameters(obj) -> bool:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return False
    if inspect.isclass(obj):
        params = params[1:]  # self
    return bool(params) and not (inspect.isclass(obj) and target is object.__init__)


@pytest.mark.parametrize("room", COMPLETE_DOCSTRING_ROOMS)
def test_complete_rooms_have_parameters_and_examples(room):
    module = _room(room)
    lacking = []
    for name in module.__all__:
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        doc = inspect.getdoc(obj) or ""
        if "Examples" not in doc or (_takes_parameters(obj) and "Parameters" not in doc):
            lacking.append(name)
    assert not lacking, f"icml25.{room}: incomplete docstrings: {lacking}"


# --------------------------------------------------------------------------- guides
GUIDES = ["conformal", "worstoff", "royalties", "missing_score", "collab", "nn", "reproduce",
          "index", "install"]


@pytest.mark.parametrize("guide", GUIDES)
def test_guides_are_short(guide):
    text = (ROOT / "docs" / f"{guide}.md").read_text(encoding="utf-8")
    assert text.count("\n") <= 300, f"docs/{guide}.md is {text.count(chr(10))} lines"


def test_notes_are_dated():
    for note in (ROOT / "docs" / "notes").glob("*.md"):
        if note.name != "index.md":
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md", note.name), note.name


def test_pages_missing_from_the_nav_are_added_where_they_belong(tmp_path):
    for page in ("mdm.md", "mdm-planners.md", "nn.md", "extra.md", "notes/2026-01-02-b.md",
                 "notes/2026-01-01-a.md", "notes/index.md"):
        (tmp_path / page).parent.mkdir(exist_ok=True)
        (tmp_path / page).write_text("# x\n")
    nav = [{"Home": "mdm.md"}, {"Guides": [{"mdm": "mdm.md"}, {"nn": "nn.md"}]},
           {"Notes": ["notes/index.md"]}]
    out = hooks.complete_nav(nav, tmp_path)
    assert out[1]["Guides"] == [{"mdm": "mdm.md"}, "mdm-planners.md", {"nn": "nn.md"}, "extra.md"]
    assert out[2]["Notes"] == ["notes/index.md", "notes/2026-01-02-b.md", "notes/2026-01-01-a.md"]


def test_records_are_copied_without_their_data_and_rendered_as_tables(tmp_path, monkeypatch):
    _records = importlib.util.spec_from_file_location("docs_records",
                                                      ROOT / "scripts" / "docs_records.py")
    docs_records = importlib.util.module_from_spec(_records)
    _records.loader.exec_module(docs_records)
    run = tmp_path / "results" / "demo-exp"
    run.mkdir(parents=True)
    (run / "fig.png").write_bytes(b"\x89PNG")
    record = {"name": "demo-exp", "subsystem": "demo", "reproduces": "Table 9", "mode": "quick",
              "seed": 0, "started_at": "2026-01-02T03:04:05", "figures": ["fig.png"],
              "data": {"big": list(range(1000))},
              "comparisons": [{"quantity": "failure rate", "published": 0.2, "ours": 0.21,
                               "verdict": "agrees", "scale": "n=10"},
                              {"quantity": "width", "published": 3.0, "ours": 9.0,
                               "verdict": "falls short", "scale": ""}]}
    (run / "result.json").write_text(json.dumps(record))
    assert docs_records.main([tmp_path / "results"], tmp_path / "docs") == 0
    copied = json.loads((tmp_path / "docs" / "records" / "demo-exp.json").read_text())
    assert "data" not in copied and copied["comparisons"] == record["comparisons"]
    assert (tmp_path / "docs" / "figures" / "demo-exp" / "fig.png").is_file()
    monkeypatch.setattr(hooks, "RECORDS", tmp_path / "docs" / "records")
    table = hooks.verdict_table("demo")
    assert "| failure rate | 0.2 | 0.21 | **agrees** | n=10 |" in table
    assert "**falls short**" in table and "2026-01-02" in table
    summary = hooks.summary_table()
    assert "| `demo-exp` | demo | 1 | · | 1 | · | · |" in summary
