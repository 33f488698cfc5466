"""Bounded load test of the review platform: an asyncio client on loopback against
``icml25 review serve --workers 2`` sharing one PostgreSQL database.

50 concurrent users for 60 s mix page views (venue and submission JSON views, 60 %), review
submissions (25 %) and author feedback updates (15 %). Prints p50/p95/p99 latency per kind,
throughput and the error count. Target: p95 < 300 ms for page views, zero errors.

``--burst N``: instead of the closed loop, fire N review submissions at once (one request each,
all in flight together) and report the status counts, the share of fast 503s (with
``Retry-After``), the latency of the acknowledged writes and, from a separate process that
requests ``GET /login`` every 50 ms throughout, its p95 (target: 0 responses with
status 500, >= 95 % acknowledged or 503, ``GET /login`` p95 < 1 s).

``--think S``: each user waits uniformly 0.5 S to 1.5 S between requests, like a person
reading a page (locust's ``between``); the default 0 is a saturation test, in which every user
fires its next request the moment the last one returns, so latency measures the queue.

    .venv/bin/python benchmarks/review_load.py            # local PostgreSQL (ICML25_TEST_PG_URL)
    .venv/bin/python benchmarks/review_load.py --users 10 --seconds 10 --workers 2
    .venv/bin/python benchmarks/review_load.py --client raw --mix views   # page views alone
    .venv/bin/python benchmarks/review_load.py --burst 500    # the burst target
    .venv/bin/python benchmarks/review_load.py --burst 500 --sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy import select, text

from icml25.review import models as m
from icml25.review.db import Settings, make_engine, make_sessionmaker, upgrade
from icml25.review.demo import Cast, populate_venue
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase

PG_ADMIN = os.environ.get("ICML25_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(url: str, tmp: Path, n_papers: int) -> dict:
    """Two venues: one in reviewing (review writes), one in feedback (rating updates)."""
    upgrade(url)
    engine = make_engine(url)
    db = make_sessionmaker(engine)()
    settings = Settings(database_url=url, upload_dir=tmp / "up", argon2_time_cost=1,
                        argon2_memory_kib=8192)
    cast = Cast()
    rv = populate_venue(db, settings, "load-rev", Phase.ASSIGNMENT, n_papers=n_papers)
    base = ReviewService(db, settings)
    users = {e: db.scalar(select(m.User).where(m.User.email == e))
             for e in (cast.chair, *cast.reviewers, *cast.authors)}
    base.as_user(users[cast.chair]).advance_phase(rv)  # reviewing
    fv = populate_venue(db, settings, "load-fb", Phase.REVIEWING, n_papers=n_papers)
    base.as_user(users[cast.chair]).advance_phase(fv)  # feedback
    tokens = {e: base.as_user(u).create_api_token("load") for e, u in users.items()}
    rv_ids = [b.submission.id for b in base.bundles(rv)]
    writes = [(tokens[db.get(m.User, a.user_id).email], a.submission_id)
              for a in db.scalars(select(m.Assignment).where(
                  m.Assignment.role == "reviewer", m.Assignment.submission_id.in_(rv_ids)))]
    feedback = []
    for b in base.bundles(fv):
        author = db.get(m.User, b.submission.submitter_id).email
        for r in b.reviews[:-1]:  # never the last one: stage 2 stays closed, updates allowed
            feedback.append((tokens[author], r.id))
    views = [(tokens[e], s.id) for e in cast.reviewers for b in base.bundles(rv)
             for s in [b.submission] if b.assignment_of(users[e].id)]
    db.close()
    engine.dispose()
    return {"writes": writes, "feedback": feedback, "views": views,
            "chair": tokens[cast.chair]}


class RawResponse:
    def __init__(self, status: int, body: bytes) -> None:
        self.status_code, self.content = status, body

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class RawClient:
    """One user's keep-alive HTTP/1.1 connection on asyncio streams, with httpx's ``get`` /
    ``post`` signature. The load generator shares the server's cores: httpx's async client
    costs ~5-7 ms of CPU per request on these machines (about what the server spends), this
    one a fraction of that, so more of the CPU goes to what is measured."""

    def __init__(self, port: int, prefix: str = "/api/v1", timeout: float = 30.0) -> None:
        self.port, self.prefix, self.timeout = port, prefix, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str, headers: dict[str, str]) -> RawResponse:
        return await asyncio.wait_for(self._send("GET", path, headers, b""), self.timeout)

    async def post(self, path: str, headers: dict[str, str], json: dict) -> RawResponse:
        body = _json_dumps(json).encode()
        return await asyncio.wait_for(self._send(
            "POST", path, headers | {"Content-Type": "application/json"}, body), self.timeout)

    async def _send(self, method: str, path: str, headers: dict[str, str],
                    body: bytes) -> RawResponse:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            self.writer.write(f"{method} {self.prefix}{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              f"Content-Length: {len(body)}\r\n{head}\r\n".encode() + body)
            raw = await self.reader.readuntil(b"\r\n\r\n")
            first, *rows = raw.decode("latin-1").split("\r\n")
            fields = {k.strip().lower(): v.strip()
                      for k, _, v in (r.partition(":") for r in rows if r)}
            if fields.get("transfer-encoding") == "chunked":
                data = b""
                while (size := int((await self.reader.readline()).strip(), 16)):
                    data += await self.reader.readexactly(size + 2)
                    data = data[:-2]
                await self.reader.readline()
            else:
                data = await self.reader.readexactly(int(fields.get("content-length", 0)))
            if fields.get("connection") == "close":
                await self.aclose()
            return RawResponse(int(first.split()[1]), data)
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None


def _json_dumps(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":"))


VIEW_SHARE = {"mixed": 0.6, "views": 1.0}  # the rest: 25 % review writes, 15 % feedback


async def user(client: httpx.AsyncClient, plan: dict, until: float, rng: random.Random,
               lat: dict[str, list[float]], errors: list[str], think: float = 0.0,
               mix: str = "mixed") -> None:
    n = 0
    views = VIEW_SHARE[mix]
    if think:
        await asyncio.sleep(rng.uniform(0, think))  # users arrive spread out, not in a burst
    while time.perf_counter() < until:
        n += 1
        u = rng.random()
        t0 = time.perf_counter()
        try:
            if u < views:
                kind = "view"
                token, sid = rng.choice(plan["views"])
                path = f"/submissions/{sid}" if rng.random() < 0.5 else "/venues/load-rev"
                r = await client.get(path, headers={"Authorization": f"Bearer {token}"})
            elif u < views + 0.25 * (1 - views) / 0.4:
                kind = "review"
                token, sid = rng.choice(plan["writes"])
                r = await client.post(f"/submissions/{sid}/review", headers={
                    "Authorization": f"Bearer {token}"}, json={
                    "summary": f"load {n}", "strengths": "s", "questions": "q",
                    "weaknesses": "w", "score": 1 + n % 10, "confidence": 3, "submit": True})
            else:
                kind = "feedback"
                token, rid = rng.choice(plan["feedback"])
                r = await client.post(f"/reviews/{rid}/feedback", headers={
                    "Authorization": f"Bearer {token}"}, json={
                    "comprehension": 1 + n % 5, "constructiveness": 1 + n % 5})
            if r.status_code != 200:
                errors.append(f"{kind} {r.status_code} {r.text[:120]}")
        except (httpx.HTTPError, OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
            kind = "error"
            errors.append(repr(exc))
        lat.setdefault(kind, []).append(time.perf_counter() - t0)
        if think:
            await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))


async def drive(port: int, plan: dict, users: int, seconds: float,
                think: float = 0.0, client: str = "httpx",
                mix: str = "mixed") -> tuple[dict, list]:
    lat: dict[str, list[float]] = {}
    errors: list[str] = []
    if client == "raw":
        clients = [RawClient(port) for _ in range(users)]
        until = time.perf_counter() + seconds
        await asyncio.gather(*(user(c, plan, until, random.Random(i), lat, errors, think, mix)
                               for i, c in enumerate(clients)))
        for c in clients:
            await c.aclose()
        return lat, errors
    limits = httpx.Limits(max_connections=users, max_keepalive_connections=users)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=30,
                                 limits=limits) as client:
        until = time.perf_counter() + seconds
        await asyncio.gather(*(user(client, plan, until, random.Random(i), lat, errors, think, mix)
                               for i in range(users)))
    return lat, errors


async def http(port: int, method: str, path: str, headers: dict[str, str] | None = None,
               body: bytes = b"", timeout: float = 60.0) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request on a fresh loopback connection: (status, headers, body). A raw
    client on purpose: with 500 requests in flight httpx's connection pool spends seconds of
    client CPU and the benchmark would measure itself (all 200s arrived together at the end)."""

    async def go() -> tuple[int, dict[str, str], bytes]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close",
                     f"Content-Length: {len(body)}"]
            lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
            await writer.drain()
            data = await reader.read()
        finally:
            writer.close()
        head, _, rest = data.partition(b"\r\n\r\n")
        first, *rows = head.decode("latin-1").split("\r\n")
        hdrs = {k.strip().lower(): v.strip() for k, _, v in (r.partition(":") for r in rows)}
        return int(first.split()[1]), hdrs, rest

    return await asyncio.wait_for(go(), timeout)


def _failure(exc: BaseException) -> str:
    return "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__


def _probe(port: int, interval: float, stop, out, ready=None) -> None:  # noqa: ANN001
    """In its own process (so the burst client's CPU does not delay it): one ``GET /login`` on
    a fresh connection every ``interval`` s until ``stop`` is set; sets ``ready`` once the first
    probe has answered; puts a list of (start time.time(), latency s, status)."""

    async def one(rows: list) -> None:
        started, t0 = time.time(), time.perf_counter()
        try:
            status = (await http(port, "GET", "/login", timeout=30))[0]
        except (OSError, TimeoutError, ValueError, IndexError) as exc:
            status = _failure(exc)
        rows.append((started, time.perf_counter() - t0, status))
        if ready is not None:
            ready.set()

    async def run() -> list:
        rows: list = []
        tasks = []
        while not stop.is_set():
            tasks.append(asyncio.ensure_future(one(rows)))
            await asyncio.sleep(interval)
        await asyncio.gather(*tasks)
        return rows

    out.put(asyncio.run(run()))


async def burst(port: int, plan: dict, n: int, timeout: float = 60.0, tag: str = "",
                acked: list | None = None) -> dict:
    """``n`` review submissions at once (cycling over the assigned pairs), one request each;
    request ``i`` writes the marker ``burst{tag}-{i}`` into every text field. Returns the status
    counts, latencies per status, the wall time, the 503s without ``Retry-After`` and
    ``acked``: (token, submission id, marker) of every 200, appended as they arrive to the
    list passed in, if any."""
    statuses: Counter = Counter()
    lat: dict[str, list[float]] = {}
    acked = [] if acked is None else acked
    no_retry_after = 0

    async def one(i: int) -> None:
        nonlocal no_retry_after
        token, sid = plan["writes"][i % len(plan["writes"])]
        marker = f"burst{tag}-{i}"
        body = json.dumps({"summary": marker, "strengths": marker, "questions": marker,
                           "weaknesses": marker, "score": 1 + i % 10, "confidence": 3,
                           "submit": True}).encode()
        t0 = time.perf_counter()
        try:
            status, headers, _ = await http(port, "POST", f"/api/v1/submissions/{sid}/review",
                                            {"Authorization": f"Bearer {token}",
                                             "Content-Type": "application/json"}, body, timeout)
            key: int | str = status
            if status == 503 and "retry-after" not in headers:
                no_retry_after += 1
            if status == 200:
                acked.append((token, sid, marker))
        except (OSError, TimeoutError, ValueError, IndexError) as exc:
            key = _failure(exc)
        statuses[key] += 1
        lat.setdefault(str(key), []).append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return {"statuses": statuses, "lat": lat, "wall": time.perf_counter() - t0,
            "no_retry_after": no_retry_after, "acked": acked}


def run_burst(port: int, plan: dict, n: int, rounds: int = 1) -> dict:
    """Bursts with the ``GET /login`` probe running throughout; merged figures."""
    ctx = mp.get_context("spawn")
    stop, out, ready = ctx.Event(), ctx.Queue(), ctx.Event()
    probe = ctx.Process(target=_probe, args=(port, 0.05, stop, out, ready), daemon=True)
    probe.start()
    # the probe process is up and probing before the burst starts (on a loaded machine its
    # start-up alone can take seconds)
    if not ready.wait(timeout=60):
        raise RuntimeError("the GET /login probe did not start")
    time.sleep(0.2)
    begin = time.time()
    results = [asyncio.run(burst(port, plan, n, tag=str(k))) for k in range(rounds)]
    end = time.time()
    stop.set()
    rows = out.get(timeout=120)
    probe.join(timeout=30)
    merged: dict = {"statuses": Counter(), "lat": {}, "wall": [], "no_retry_after": 0,
                    "acked": []}
    for r in results:
        merged["statuses"].update(r["statuses"])
        for k, v in r["lat"].items():
            merged["lat"].setdefault(k, []).extend(v)
        merged["wall"].append(r["wall"])
        merged["no_retry_after"] += r["no_retry_after"]
        merged["acked"] += r["acked"]
    # the probes in flight at any time during the bursts
    merged["login"] = [(lat, st) for t, lat, st in rows if t <= end and t + lat >= begin]
    return merged


def report_burst(res: dict, n: int, rounds: int, workers: int,
                 backend: str = "PostgreSQL") -> bool:
    """Print the burst figures; True when the burst target is met."""
    st, total = res["statuses"], sum(res["statuses"].values())
    ok = sum(v for k, v in st.items() if isinstance(k, int) and 200 <= k < 300)
    busy = st.get(503, 0)
    lat_all = [x for v in res["lat"].values() for x in v]
    login = [t for t, _ in res["login"]]
    login_bad = sum(1 for _, s in res["login"] if s != 200)
    login = login or [float("nan")]
    login_p95 = float(np.percentile(login, 95))
    print(f"burst of {n} concurrent review submits x {rounds}, {workers} workers, {backend}: "
          f"{total} requests in {', '.join(f'{w:.1f}' for w in res['wall'])} s")
    print("  statuses:", ", ".join(f"{k}: {v}" for k, v in sorted(st.items(), key=str)))
    print(f"  acknowledged {ok} ({ok / total:.0%}), 503 {busy} ({busy / total:.0%}; "
          f"{res['no_retry_after']} without Retry-After), 500: {st.get(500, 0)}")
    for k, v in sorted(res["lat"].items()):
        ms = np.array(v) * 1000
        print(f"  latency {k:>16s}: n={len(ms):4d}  p50 {np.percentile(ms, 50):7.0f} ms  "
              f"p95 {np.percentile(ms, 95):7.0f} ms  max {ms.max():7.0f} ms")
    print(f"  max latency of any request {max(lat_all) * 1000:.0f} ms")
    print(f"  GET /login during the burst: n={len(login)}, p50 "
          f"{np.percentile(login, 50) * 1000:.0f} ms, p95 {login_p95 * 1000:.0f} ms, max "
          f"{max(login) * 1000:.0f} ms, {login_bad} not 200")
    met = st.get(500, 0) == 0 and (ok + busy) >= 0.95 * total and login_p95 < 1.0
    print(f"target (0 x 500, >= 95 % acknowledged or 503, /login p95 < 1 s): "
          f"{'met' if met else 'NOT met'}")
    return met


def start_server(url: str, tmp: Path, workers: int, log: str = os.devnull,
                 env: dict[str, str] | None = None) -> tuple[subprocess.Popen, int]:
    """``icml25 review serve --workers N`` on a free loopback port, its own process group;
    returns once every worker has started (each logs "Application startup complete": on a
    loaded machine a worker can take seconds longer than the first to import the app, and the
    clients connecting meanwhile would all land on the first)."""
    port = _port()
    env = dict(os.environ, ICML25_DATABASE_URL=url, ICML25_UPLOAD_DIR=str(tmp),
               ICML25_TICK_SECONDS="0") | (env or {})  # the caller's values win
    icml25 = Path(sys.executable).with_name("icml25")
    err = Path(tmp) / f"server-{port}.log" if log == os.devnull else Path(log)
    err.parent.mkdir(parents=True, exist_ok=True)
    start = err.stat().st_size if err.exists() else 0
    server = subprocess.Popen([str(icml25), "review", "serve", "--port", str(port),
                               "--workers", str(workers)], env=env,
                              stdout=subprocess.DEVNULL, start_new_session=True,
                              stderr=open(err, "ab"))  # noqa: SIM115
    deadline = time.monotonic() + 90
    while (err.read_bytes()[start:].decode(errors="replace")
           .count("Application startup complete") < workers):
        if server.poll() is not None or time.monotonic() > deadline:
            kill_server(server)
            raise RuntimeError("the server did not start:\n" + err.read_text()[-2000:])
        time.sleep(0.2)
    httpx.get(f"http://127.0.0.1:{port}/login", timeout=10)
    return server, port


def cpu_seconds(group: int, database: str | None = None) -> dict[str, float]:
    """CPU seconds (user + system) used so far by the server's process group and, if named,
    by the PostgreSQL backends serving ``database`` (from /proc; Linux only). CPU per request
    depends far less on what else the machine runs than throughput does."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {"server": 0.0, "postgres": 0.0}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        used = (int(fields[11]) + int(fields[12])) / tick
        if int(fields[2]) == group:
            out["server"] += used
        elif database and cmd.startswith("postgres:") and f" {database} " in cmd:
            out["postgres"] += used
    return out


def connections_per_worker(group: int, port: int) -> list[int]:
    """Established connections to ``port`` held by each process of the server's group, most
    first (from /proc; Linux only): how evenly the workers share the clients."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if int(f[1].rsplit(":", 1)[1], 16) == port and f[3] == "01":  # 01: ESTABLISHED
                inodes.add(f[9])
    counts = []
    for pid in os.listdir("/proc"):
        try:
            if not pid.isdigit() or int(Path(f"/proc/{pid}/stat").read_text()
                                        .rsplit(")", 1)[1].split()[2]) != group:
                continue
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        n = sum(1 for x in links if x.startswith("socket:[") and x[8:-1] in inodes)
        if n:
            counts.append(n)
    return sorted(counts, reverse=True)


@contextmanager
def scratch_database(prefix: str, sqlite: bool = False) -> Iterator[tuple[str, Path, str | None]]:
    """A fresh database for one run in a temporary directory: (URL, the directory, the
    PostgreSQL database's name or None for a SQLite file). Dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = None
    if not sqlite:
        admin = make_engine(PG_ADMIN).execution_options(isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            url = (f"sqlite:///{Path(tmp) / (name + '.sqlite3')}" if sqlite
                   else re.sub(r"/[^/]*$", f"/{name}", PG_ADMIN))
            yield url, Path(tmp), None if sqlite else name
    finally:
        if admin is not None:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


def kill_server(server: subprocess.Popen) -> None:
    """SIGKILL the whole group: uvicorn's workers outlive a killed parent."""
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--papers", type=int, default=8, help="per venue (4 reviewers, load 6)")
    ap.add_argument("--client", choices=("httpx", "raw"), default="httpx",
                    help="load generator: httpx's async client (one pool for all users) or a "
                    "raw keep-alive connection per user (far less client CPU)")
    ap.add_argument("--think", type=float, default=0.0,
                    help="mean seconds a user waits between requests (0: saturation test)")
    ap.add_argument("--mix", choices=sorted(VIEW_SHARE), default="mixed",
                    help="mixed: 60 %% views, 25 %% review writes, 15 %% feedback; views: "
                    "page views only (saturation throughput of page views)")
    ap.add_argument("--server-log", default=os.devnull, help="server stderr goes here")
    ap.add_argument("--burst", type=int, default=0, metavar="N",
                    help="fire N review submissions at once instead of the closed loop")
    ap.add_argument("--rounds", type=int, default=1, help="bursts, one after the other")
    ap.add_argument("--sqlite", action="store_true",
                    help="a SQLite file instead of PostgreSQL (ICML25_TEST_PG_URL)")
    args = ap.parse_args()
    backend = "SQLite" if args.sqlite else "PostgreSQL"
    server = None
    with scratch_database("icml25_review_load", args.sqlite) as (url, tmp, db_name):
        try:
            plan = setup(url, tmp, args.papers)
            server, port = start_server(url, tmp, args.workers, args.server_log)
            if args.burst:
                res = run_burst(port, plan, args.burst, args.rounds)
            else:
                cpu0, own0 = cpu_seconds(server.pid, db_name), time.process_time()
                timer = threading.Timer(min(5.0, args.seconds / 2), lambda: spread.extend(
                    connections_per_worker(server.pid, port)))
                spread: list[int] = []
                timer.start()
                lat, errors = asyncio.run(drive(port, plan, args.users, args.seconds,
                                                args.think, args.client, args.mix))
                timer.cancel()
                cpu1, own1 = cpu_seconds(server.pid, db_name), time.process_time()
        finally:
            if server is not None:
                kill_server(server)
    if args.burst:
        report_burst(res, args.burst, args.rounds, args.workers, backend)
        return
    total = sum(len(v) for v in lat.values())
    print(f"{args.users} users (think {args.think:g} s, {args.client} client, {args.mix}), "
          f"{args.seconds:.0f} s, "
          f"{args.workers} workers, {backend}: "
          f"{total} requests ({total / args.seconds:.0f}/s), {len(errors)} errors")
    for kind, xs in sorted(lat.items()):
        ms = np.array(xs) * 1000
        print(f"  {kind:9s} n={len(ms):6d}  p50 {np.percentile(ms, 50):7.1f} ms  "
              f"p95 {np.percentile(ms, 95):7.1f} ms  p99 {np.percentile(ms, 99):7.1f} ms")
    print(f"  client connections per worker: {spread}")
    for e in errors[:5]:
        print("  error:", e)
    views = len(lat.get("view", [])) / args.seconds
    print(f"CPU per request: server {(cpu1['server'] - cpu0['server']) / total * 1000:.2f} ms, "
          f"PostgreSQL {(cpu1['postgres'] - cpu0['postgres']) / total * 1000:.2f} ms, "
          f"client {(own1 - own0) / total * 1000:.2f} ms; views {views:.0f}/s")
    view_p95 = np.percentile(np.array(lat.get("view", [0])) * 1000, 95)
    print(f"page-view p95 {view_p95:.1f} ms (target < 300 ms): "
          f"{'met' if view_p95 < 300 else 'NOT met'}; errors: {len(errors)} (target 0)")


if __name__ == "__main__":
    main()
