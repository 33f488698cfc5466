"""The PostgreSQL fixture never hangs on a lock: a session an earlier test left idle in a
transaction is reported and ended; a blocker still at work fails the test, named."""

from __future__ import annotations

import threading
import time

import conftest
import pytest
from sqlalchemy import text

from icml25.review.db import make_engine
from icml25.review.models import Base


def _blocked_database(pg_server, monkeypatch):
    eng = make_engine(pg_server.new_database("lock"))
    Base.metadata.create_all(eng)
    monkeypatch.setattr(conftest, "LOCK_TIMEOUT", "200ms")
    return eng


def test_a_session_left_idle_in_a_transaction_is_reported_and_ended(pg_server, monkeypatch):
    eng = _blocked_database(pg_server, monkeypatch)
    left = eng.connect()
    left.begin()
    left.execute(text("LOCK TABLE users IN ACCESS SHARE MODE"))  # then idle, holding the lock
    with pytest.warns(conftest.LeftOpenWarning, match="idle in transaction.*LOCK TABLE users"):
        conftest._empty_tables(eng)
    left.invalidate()  # its server side was ended
    eng.dispose()


def test_a_working_blocker_fails_fast_and_is_named(pg_server, monkeypatch):
    eng = _blocked_database(pg_server, monkeypatch)
    worker = eng.connect()
    tx = worker.begin()
    worker.execute(text("LOCK TABLE users IN ACCESS SHARE MODE"))
    busy = threading.Thread(target=lambda: worker.execute(text("SELECT pg_sleep(3)")))
    busy.start()  # the holder is active (not idle) while the TRUNCATE waits
    try:
        time.sleep(0.3)
        with pytest.raises(pytest.fail.Exception, match=r"pg_sleep"):
            conftest._empty_tables(eng)
    finally:
        busy.join()
        tx.rollback()
        worker.close()
    conftest._empty_tables(eng)  # once released, the tables empty as usual
    eng.dispose()
