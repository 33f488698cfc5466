"""The report says what falls short: verdict counts per experiment, shortfalls first, a verdict
per row, provenance folded away, figures at natural width."""

import re
from html.parser import HTMLParser

from icml25.core import verdicts as v
from icml25.core.records import Comparison, ExperimentResult
from icml25.core.report import verdict_counts, write_report


def _result(name, rows, *, status="ok", notes=(), provenance=()):
    return ExperimentResult(
        name=name, subsystem="toy", paper="Toy 2025", reproduces="Table 1", mode="quick",
        seed=0, settings={"n": 10}, command=f"icml25 reproduce {name} --quick --seed 0",
        status=status, comparisons=[Comparison(q, o, p, verdict=verdict, rule=rule)
                                    for q, o, p, verdict, rule in rows],
        notes=list(notes), provenance=list(provenance))


class _Summary(HTMLParser):
    """Rows of the first table (the summary): a list of cell texts per row."""

    def __init__(self):
        super().__init__()
        self.rows, self._cell, self._tables, self.classes = [], None, 0, []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._tables += 1
        if self._tables == 1 and tag == "tr":
            self.rows.append([])
            self.classes.append([])
        if self._tables == 1 and tag in ("td", "th"):
            self._cell = ""
            self.classes[-1].append(dict(attrs).get("class") or "")

    def handle_endtag(self, tag):
        if self._tables == 1 and tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _page(tmp_path):
    good = _result("toy-a-good", [("mean", 0.5, 0.5, v.AGREES, "agrees within 0.1")])
    bad = _result("toy-z-bad", [
        ("solved (%)", 0.0, 98.3, v.FALLS_SHORT, "agrees within 2"),
        ("ranking", "Zeroed best", "IW best", v.CONTRADICTS, "agrees when the same answer"),
        ("coverage", 0.9, 0.9, v.AGREES, "agrees within 0.01"),
        ("time (s)", 3.0, None, v.NOT_COMPARABLE, ""),
    ], notes=["Trained with: icml25 mdm train --preset cpu (command: see model card)",
              "Puzzles generated."], provenance=["model card: 6M parameters"])
    return write_report(tmp_path, [good, bad]).read_text()


def test_summary_counts_verdicts_and_lists_the_worst_experiment_first(tmp_path):
    text = _page(tmp_path)
    table = _Summary()
    table.feed(text)
    head, *rows, foot = table.rows
    assert head[3:8] == list(v.VERDICTS)
    assert [r[0] for r in rows] == ["toy-z-bad", "toy-a-good"]  # shortfalls first
    bad = dict(zip(head, rows[0], strict=True))
    assert (bad["agrees"], bad["falls short"], bad["contradicts"], bad["not comparable"]) == (
        "1", "1", "1", "1")
    assert bad["within scale gap"] == "0"
    assert "v-contra" in table.classes[1][head.index("contradicts")]  # coloured
    assert "zero" in table.classes[1][head.index("within scale gap")]
    assert foot[1:6] == ["2", "0", "1", "1", "1"]  # totals over every experiment


def test_shortfalls_are_listed_before_the_sections_with_each_row_verdict(tmp_path):
    text = _page(tmp_path)
    short = text.index("What falls short")
    assert short < text.index("<section")
    listed = text[short:text.index("<section")]
    assert listed.index("ranking") < listed.index("solved (%)")  # contradicts before short
    assert "mean" not in listed and "coverage" not in listed
    section = text[text.index("<section id='toy-z-bad'>"):]
    row = re.search(r"<tr><td>solved \(%\)</td>.*?</tr>", section).group(0)
    assert "falls short" in row and "agrees within 2" in row and "v-short" in row


def test_a_clean_run_says_nothing_falls_short(tmp_path):
    good = _result("toy-a-good", [("mean", 0.5, 0.5, v.AGREES, "")])
    text = write_report(tmp_path, [good]).read_text()
    assert "No comparison contradicts the paper or falls short of it." in text


def test_a_failed_experiment_is_a_shortfall_too(tmp_path):
    broken = _result("toy-broken", [], status="failed")
    broken.error = "Traceback...\nRuntimeError: boom"
    text = write_report(tmp_path, [broken]).read_text()
    assert "What falls short" in text and "failed" in text
    assert "<p class='failed'>RuntimeError: boom</p>" in text  # last line shown, rest folded


def test_provenance_is_folded_under_details_and_figures_keep_their_width(tmp_path):
    text = _page(tmp_path)
    section = text[text.index("<section id='toy-z-bad'>"):]
    details = section[section.index("<details>"):section.index("</details>")]
    assert "model card: 6M parameters" in details and "icml25 mdm train" in details
    assert "icml25 reproduce toy-z-bad --quick --seed 0" in details
    shown = section[:section.index("<details>")]
    assert "Puzzles generated." in shown and "icml25 mdm train" not in shown
    assert "max-width:520px" not in text and "figure img{max-width:100%" in text


def test_chance_column_only_where_a_row_has_a_chance_level(tmp_path):
    r = _result("toy-acc", [("accuracy (%)", 40.0, 90.0, v.FALLS_SHORT, "")])
    r.comparisons[0].chance = 11.1
    plain = _result("toy-plain", [("mean", 0.5, 0.5, v.AGREES, "")])
    text = write_report(tmp_path, [r, plain]).read_text()
    acc = text[text.index("<section id='toy-acc'>"):text.index("<section id='toy-plain'>")]
    assert "<th>chance</th>" in acc and "11.1" in acc
    assert "<th>chance</th>" not in text[text.index("<section id='toy-plain'>"):]


def test_verdict_counts_of_a_record():
    r = _result("x", [("a", 1, 1, v.AGREES, ""), ("b", 1, 2, v.FALLS_SHORT, "")])
    assert verdict_counts(r)[v.FALLS_SHORT] == 1 and sum(verdict_counts(r).values()) == 2
