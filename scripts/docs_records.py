"""Copy the records of a reproduction run into the documentation site's sources.

Usage: python scripts/docs_records.py RESULTS_DIR [RESULTS_DIR ...] DOCS_DIR

``make docs-records`` runs it. For each ``RESULTS_DIR/<name>/result.json`` (written by
``icml25 reproduce``; several folders hold runs of different subsystems) it writes
``DOCS_DIR/records/<name>.json`` (the record without its bulky ``data`` payload) and copies the
experiment's figures to ``DOCS_DIR/figures/<name>/``. The site's verdict tables and figures are
rendered from these files at build time (``scripts/mkdocs_hooks.py``), never typed by hand.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def main(results: list[Path], docs: Path) -> int:
    found = sorted((p for r in results for p in r.glob("*/result.json")),
                   key=lambda p: p.parent.name)
    if not found:
        print(f"error: no */result.json under {', '.join(map(str, results))}; run "
              "`icml25 reproduce` first", file=sys.stderr)
        return 1
    names = [p.parent.name for p in found]
    if len(set(names)) != len(names):
        print("error: an experiment appears in two results folders", file=sys.stderr)
        return 1
    records, figures = docs / "records", docs / "figures"
    for old in (records, figures):
        if old.exists():
            shutil.rmtree(old)
    records.mkdir(parents=True)
    for path in found:
        record = json.loads(path.read_text(encoding="utf-8"))
        record.pop("data", None)
        name = record["name"]
        (records / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n",
                                              encoding="utf-8")
        for fig in record.get("figures", []):
            src = path.parent / fig
            if src.suffix == ".png" and src.is_file():
                dest = figures / name / src.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)
    print(f"{len(found)} records -> {records}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[2])
    sys.exit(main([Path(a) for a in sys.argv[1:-1]], Path(sys.argv[-1])))
