"""Shipped task fixtures are self-consistent; the JSONL loader reads public-dataset shapes."""

import json

import pytest

from icml25.collab import bleu, math_equivalent, run_code_tests
from icml25.collab.tasks import builtin_tasks, load_tasks_jsonl


def test_fixtures_score_perfectly_against_their_own_references():
    tasks = builtin_tasks()
    assert {t["kind"] for t in tasks} == {"document", "code", "math"} and len(tasks) == 9
    for t in tasks:
        m = t["metric"]
        if m["type"] == "bleu":
            assert bleu(t["reference"], m["reference"]) == pytest.approx(1.0)
        elif m["type"] == "math":
            assert math_equivalent(m["answer"], m["answer"])
        else:
            assert run_code_tests(t["reference"], m["tests"], timeout_s=10).pass_rate == 1.0
            assert run_code_tests("pass", m["tests"], timeout_s=10).pass_rate == 0.0
    assert [t["metric"]["answer"] for t in builtin_tasks("math")] == ["5", "720",
                                                                      "\\frac{2}{3}"]
    with pytest.raises(ValueError):
        builtin_tasks("poetry")


def test_loader_reads_math_medium_and_code_rows(tmp_path):
    f = tmp_path / "math.jsonl"
    f.write_text(json.dumps({"problem": "1+1?", "solution": "It is \\boxed{2}."}) + "\n")
    (t,) = load_tasks_jsonl(f, "math")
    assert t["metric"] == {"type": "math", "answer": "2"} and t["prompt"] == "1+1?"
    f.write_text(json.dumps({"title": "Bees", "text": "Bees are great."}) + "\n")
    (t,) = load_tasks_jsonl(f, "document")
    assert "about Bees" in t["prompt"] and t["metric"]["reference"] == "Bees are great."
    f.write_text(json.dumps({"prompt": "f", "completion": "x"}) + "\n")
    with pytest.raises(ValueError, match="tests"):
        load_tasks_jsonl(f, "code")
    with pytest.raises(FileNotFoundError):
        load_tasks_jsonl(tmp_path / "nope.jsonl", "math")
