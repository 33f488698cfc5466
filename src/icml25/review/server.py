"""Running the web app under uvicorn with several worker processes, each with its own listening
socket (``SO_REUSEPORT``), so that connections are spread evenly over the workers.

Why not uvicorn's own ``--workers``: there every worker accepts from one shared socket, and
Linux wakes the process that went idle last first (epoll's wake-up order is LIFO), so when many
keep-alive clients connect together one worker takes most of them. Measured with 50 clients and 2
workers (``benchmarks/review_load.py``): 35 connections on one worker and 15 on the other; the
first worker's queue then sets the latency of everyone on it while the other worker idles. With
``SO_REUSEPORT`` each worker has an accept queue of its own and the kernel assigns every new
connection to one of them by a hash of its addresses, independently of which worker woke last.

One worker, or a platform without ``SO_REUSEPORT``: plain ``uvicorn.run``. The supervisor below
does what uvicorn's does that matters here: it restarts a worker that dies, stops when a worker
fails before it could serve (a broken configuration fails the same way every time), and passes
SIGINT / SIGTERM on as a graceful shutdown.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import signal
import socket
import threading
import time

log = logging.getLogger("icml25.review.server")

#: exit status of a worker that could not start serving (uvicorn uses 3 for the same)
STARTUP_FAILURE = 3


def reuseport_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) with ``SO_REUSEADDR`` and ``SO_REUSEPORT`` (not yet
    listening: the server's event loop calls ``listen``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _worker(app: str, host: str, port: int) -> None:  # pragma: no cover - runs in a child
    import sys

    import uvicorn

    try:
        sock = reuseport_socket(host, port)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        sys.exit(STARTUP_FAILURE)
    uvicorn.Server(uvicorn.Config(app, factory=True, host=host, port=port)).run(sockets=[sock])


def run(app: str, *, host: str, port: int, workers: int) -> None:
    """Serve the app factory ``app`` ("module:function") on host:port with ``workers``
    processes; returns after SIGINT or SIGTERM once the workers have stopped."""
    import uvicorn

    if workers <= 1 or not hasattr(socket, "SO_REUSEPORT"):
        uvicorn.run(app, factory=True, host=host, port=port, workers=workers)
        return
    # Bound (never listening) for the server's life: a port that is taken fails here at once,
    # and it stays ours while a worker restarts. A socket that does not listen gets no
    # connections, so the kernel spreads them over the workers' sockets alone.
    reserve = reuseport_socket(host, port)
    ctx = mp.get_context("spawn")
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}

    def start() -> mp.process.BaseProcess:
        p = ctx.Process(target=_worker, args=(app, host, port), daemon=False)
        p.start()
        return p

    procs = [start() for _ in range(workers)]
    log.info("started %d workers on %s:%d (SO_REUSEPORT)", workers, host, port)
    try:
        while not stop.wait(0.5):
            for i, p in enumerate(procs):
                if p.is_alive():
                    continue
                if p.exitcode == STARTUP_FAILURE:
                    log.error("worker %s failed to start; stopping", p.pid)
                    stop.set()
                    break
                log.warning("worker %s exited with %s; starting another", p.pid, p.exitcode)
                time.sleep(0.5)  # a worker dying at once in a loop must not spin the CPU
                procs[i] = start()
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()  # SIGTERM: uvicorn finishes the requests in flight
        deadline = time.monotonic() + 30
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join()
        reserve.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if any(p.exitcode == STARTUP_FAILURE for p in procs):
        raise SystemExit(STARTUP_FAILURE)
