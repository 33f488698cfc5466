"""The page-mix benchmark's seed and page list stay valid: every page of every role
answers 200 for that role's session (in process, SQLite), so a benchmark run measures pages,
not errors."""

from __future__ import annotations

import sys
from pathlib import Path

from fastapi.testclient import TestClient

from icml25.review.db import Settings, make_engine
from icml25.review.web import create_app

ROOT = Path(__file__).resolve().parents[2]


def test_every_page_of_the_mix_answers_its_role(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import review_load_tool_pages as bench

    url = f"sqlite:///{tmp_path / 'p29.sqlite3'}"
    plan = bench.setup(url, tmp_path, n_papers=4)
    users = bench.login_all(plan, len(bench.ROLE_MIX))
    assert {role for role, _, _ in users} == set(plan["pages"])
    settings = Settings(database_url=url, upload_dir=tmp_path, tick_seconds=0)
    engine = make_engine(url, settings)
    with TestClient(create_app(settings, engine)) as c:
        for role, cookie, csrf in users:
            c.cookies.set("icml25_session", cookie)
            for path in plan["pages"][role]:
                r = c.get(path)
                assert r.status_code == 200, (role, path, r.status_code, r.text[:200])
            if role == "chair":  # the optional proposal request
                r = c.post("/v/p29-asg/assignment", data={"csrf_token": csrf,
                                                          "objective": "total"})
                assert r.status_code == 200 and "constraint" in r.text.lower()
    engine.dispose()
