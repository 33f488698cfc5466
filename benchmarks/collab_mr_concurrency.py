"""MR for N candidates: all N × S branches concurrently vs one candidate after another.

Claim: computing the multiturn-aware reward for N candidates with S samples
over a window of w turns against an endpoint with fixed latency takes about
(2w + 1) × latency (w rounds of user + assistant, then one judge call), not N × that.
The baseline scores candidates one after another (samples still in parallel), the way the
official package's dataset builder does; ANCHORS.md records that package at 1.13 s (N=1) and
4.49 s (N=4) for S=3, w=2 against a 200 ms stub.

Run: .venv/bin/python benchmarks/collab_mr_concurrency.py [--latency 0.2] [--samples 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import time

from icml25.collab import (
    Assistant,
    InteractivityJudge,
    MultiturnReward,
    OpenAIChatModel,
    RetryPolicy,
    UserSimulator,
)

HISTORY = [{"role": "user", "content": "Write a short post about bees."}]


def measure(mr: MultiturnReward, model: OpenAIChatModel, n: int, concurrent: bool) -> float:
    cands = [f"Candidate {i}: a first draft about bees." for i in range(n)]

    async def go() -> float:
        async with model:
            await model.chat(HISTORY)  # warm the client (lazy imports, connection pool)
            t0 = time.perf_counter()
            res = await mr.score(HISTORY, cands, concurrent=concurrent)
            elapsed = time.perf_counter() - t0
        assert all(s.n_valid == mr.n_samples for s in res), "a sample failed"
        return elapsed

    return asyncio.run(go())


_CHILD = """
import sys
from icml25.collab.stub_server import StubServer, collab_responder
with StubServer(responder=collab_responder, latency_s=float(sys.argv[1])) as srv:
    print(srv.url, flush=True)
    sys.stdin.read()  # serve until the parent closes stdin
"""


@contextlib.contextmanager
def stub_process(latency: float):
    """The stub in its own process, so its threads do not share the client's GIL."""
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(latency)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError("the stub server did not start")
        yield url
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--candidates", type=int, nargs="+", default=[1, 4, 16])
    args = ap.parse_args()
    ideal = (2 * args.window + 1) * args.latency
    print(f"stub latency {args.latency * 1000:.0f} ms, S={args.samples}, w={args.window}; "
          f"ideal ≈ {ideal:.2f} s")
    print(f"{'N':>3} {'concurrent s':>13} {'sequential s':>13} {'ratio':>6} {'conc/ideal':>10}")
    with stub_process(args.latency) as url:
        model = OpenAIChatModel("stub", url, max_concurrency=256,
                                retry=RetryPolicy(max_attempts=2, timeout_s=30))
        mr = MultiturnReward(UserSimulator(model, "blog post", "a 200-word post about bees"),
                             Assistant(model), judge=InteractivityJudge(model),
                             window=args.window, n_samples=args.samples, token_penalty=1e-4)
        for n in args.candidates:
            # Best of 3 for the concurrent run: on a shared 2-core box the client's per-request
            # CPU cost, not the endpoint, is the noise; the sequential run is long, so once.
            conc = min(measure(mr, model, n, True) for _ in range(3))
            seq = measure(mr, model, n, False)
            print(f"{n:>3} {conc:>13.2f} {seq:>13.2f} {seq / conc:>6.2f} {conc / ideal:>10.2f}")
        print(f"peak requests in flight (client side): {model.max_in_flight}")


if __name__ == "__main__":
    main()
