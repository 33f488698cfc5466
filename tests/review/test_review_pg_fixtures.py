"""The PostgreSQL fixture never hangs on a lock a test left open: it fails naming the holder."""

from __future__ import annotations

import conftest
import pytest
from sqlalchemy import text

from icml25.review.db import make_engine
from icml25.review.models import Base


def test_a_blocked_truncate_fails_fast_and_names_the_blocking_session(pg_server, monkeypatch):
    eng = make_engine(pg_server.new_database("lock"))
    Base.metadata.create_all(eng)
    monkeypatch.setattr(conftest, "LOCK_TIMEOUT", "200ms")
    blocker = eng.connect()
    tx = blocker.begin()
    blocker.execute(text("LOCK TABLE users IN ACCESS SHARE MODE"))  # an open transaction's lock
    try:
        with pytest.raises(pytest.fail.Exception, match="LOCK TABLE users") as err:
            conftest._empty_tables(eng)
        assert "idle in transaction" in str(err.value)
    finally:
        tx.rollback()
        blocker.close()
    conftest._empty_tables(eng)  # once released, the tables empty as usual
    eng.dispose()
