"""CPU time per request of the review app, in process: no network, no server, the thread pool
run inline (``--threads`` keeps it), ``--concurrency N`` requests at once; best of 8 rounds.

Measures what one request costs the app itself (the ORM, the authority, FastAPI), which the
closed-loop load test (`review_load.py`) cannot separate from queueing and the client.
To compare with other code, put its ``src`` first on the path:

    .venv/bin/python benchmarks/review_request_cpu.py
    PYTHONPATH=/path/to/old/checkout/src .venv/bin/python benchmarks/review_request_cpu.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import fastapi.dependencies.utils
import fastapi.routing
import httpx
import starlette.concurrency

sys.path.insert(0, str(Path(__file__).parent))
import review_load  # noqa: E402  (its venue set-up)
from icml25.review.db import Settings  # noqa: E402
from icml25.review.web import create_app  # noqa: E402


async def _inline(func, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
    return func(*args, **kwargs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", action="store_true", help="keep anyio's thread pool")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--requests", type=int, default=40, help="per round")
    args = ap.parse_args()
    if not args.threads:
        for mod in (fastapi.routing, fastapi.dependencies.utils, starlette.concurrency):
            if hasattr(mod, "run_in_threadpool"):
                mod.run_in_threadpool = _inline
    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'cpu.sqlite3'}"
    plan = review_load.setup(url, tmp, 8)
    settings = Settings(database_url=url, upload_dir=tmp / "up", argon2_time_cost=1,
                        argon2_memory_kib=8192, tick_seconds=0)
    asyncio.run(_measure(create_app(settings), plan, args))


async def _measure(app, plan: dict, args) -> None:  # noqa: ANN001
    view_token, sid = plan["views"][0]
    write_token, wsid = plan["writes"][0]
    fb_token, rid = plan["feedback"][0]
    n = [0]

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t/api/v1") as c:
        async def review() -> httpx.Response:
            n[0] += 1
            return await c.post(f"/submissions/{wsid}/review", headers=bearer(write_token), json={
                "summary": f"cpu {n[0]}", "strengths": "s", "questions": "q",
                "weaknesses": "w", "score": 1 + n[0] % 10, "confidence": 3, "submit": True})

        async def feedback() -> httpx.Response:
            n[0] += 1
            return await c.post(f"/reviews/{rid}/feedback", headers=bearer(fb_token), json={
                "comprehension": 1 + n[0] % 5, "constructiveness": 1 + n[0] % 5})

        kinds = {
            "token only (/me)": lambda: c.get("/me", headers=bearer(view_token)),
            "submission view": lambda: c.get(f"/submissions/{sid}", headers=bearer(view_token)),
            "venue view": lambda: c.get("/venues/load-rev", headers=bearer(view_token)),
            "review write": review,
            "feedback update": feedback,
        }
        per_round = max(args.requests // args.concurrency, 1)
        for name, fn in kinds.items():
            r = await fn()
            assert r.status_code == 200, (name, r.status_code, r.text[:200])
            best = float("inf")
            for _ in range(8):
                t0 = time.process_time()
                for _ in range(per_round):
                    await asyncio.gather(*(fn() for _ in range(args.concurrency)))
                best = min(best, (time.process_time() - t0) / (per_round * args.concurrency))
            print(f"{name:18s} {best * 1000:6.2f} ms CPU per request")


if __name__ == "__main__":
    main()
