"""Statements run with the GIL released; Ctrl-C stops them and leaves the
connection usable."""

import _thread
import signal
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import einsql

TRIANGLES = (
    "SELECT COUNT(*) FROM e e1, e e2, e e3 "
    "WHERE e1.dst = e2.src AND e2.dst = e3.dst AND e1.src = e3.src"
)


@pytest.fixture(scope="module")
def con():
    """A dense random graph whose triangle count takes a long time."""
    rng = np.random.default_rng(42)
    n, m = 3000, 1_500_000
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    con = einsql.connect()
    con.execute("SET threads = 1")
    con.register("e", pa.table({"src": src, "dst": dst}))
    return con


@pytest.fixture
def ctrl_c():
    """Python's own SIGINT handler while the test runs: a process started
    in the background of a non-interactive shell inherits SIGINT ignored,
    and `_thread.interrupt_main()` then does nothing (the statement ran to
    its end and the test failed with "DID NOT RAISE")."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_keyboard_interrupt_stops_a_long_statement(con, ctrl_c):
    timer = threading.Timer(0.5, _thread.interrupt_main)
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        con.sql(TRIANGLES)
    elapsed = time.perf_counter() - start
    timer.join()
    assert elapsed < 5, f"the statement stopped {elapsed:.1f} s after it started"
    # The connection still works, and nothing is left pending.
    assert con.sql("SELECT COUNT(*) FROM e").fetchall()[0][0] > 0
    con.execute("CREATE TABLE after (i INT)")
    assert "after" in con.tables()


def test_other_threads_run_meanwhile_and_interrupt_cancels(con):
    outcome = {}

    def run():
        try:
            con.sql(TRIANGLES)
            outcome["result"] = "finished"
        except einsql.CancelledError as error:
            outcome["result"] = error

    worker = threading.Thread(target=run)
    worker.start()
    counted = 0
    deadline = time.perf_counter() + 0.5
    while time.perf_counter() < deadline:
        counted += 1
    con.interrupt()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert isinstance(outcome["result"], einsql.CancelledError)
    assert str(outcome["result"]) == "Cancelled: the statement was interrupted"
    # The Python thread kept running while the statement ran.
    assert counted > 10_000
    assert con.sql("SELECT COUNT(*) FROM e").fetchall()[0][0] > 0
