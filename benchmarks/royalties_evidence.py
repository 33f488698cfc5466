"""What the minimum-evidence rule holds back: the generated scenario (8 holders, 16 artifacts
that each imitate one holder) plus one unrelated sentence, a pool of 1,700.00, at several
``min_evidence`` thresholds (nats per token).

    .venv/bin/python benchmarks/royalties_evidence.py
"""

from __future__ import annotations

from icml25.royalties import compute_statement, make_scenario
from icml25.royalties.statements import format_cents

UNRELATED = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
             "incididunt ut labore et dolore magna aliqua.")


def main() -> None:
    sc = make_scenario(0)
    arts = {**sc.artifacts, "unrelated-lorem": UNRELATED}
    print("| min_evidence | unrelated artifact paid | held back | imitated holder's share |")
    print("|---|---|---|---|")
    for me in (0.0, 0.05, 0.1, 0.2):
        st = compute_statement(sc.corpora, arts, "1700.00", baseline=sc.baseline,
                               min_evidence=me)
        paid = total = 0
        for line in st.artifacts:
            if line.artifact in sc.imitates:
                paid += line.holder_cents[st.holders.index(sc.imitates[line.artifact])]
                total += line.amount_cents
        lorem = next(a for a in st.artifacts if a.artifact == "unrelated-lorem")
        print(f"| {me:g} | {format_cents(sum(lorem.holder_cents))} of "
              f"{format_cents(lorem.amount_cents)} | {format_cents(st.held_back_cents)} | "
              f"{paid / total:.3f} |")


if __name__ == "__main__":
    main()
