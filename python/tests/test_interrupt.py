"""Statements run with the GIL released; Ctrl-C stops them and leaves the
connection usable."""

import _thread
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import einsql

# Four vertices a, b, c, d with every edge from the earlier to the later
# one: over a minute at one thread, far past the half second after which
# the tests interrupt it (a triangle count took about 3 s, and one CI run
# saw it return without the interrupt).
CLIQUES = (
    "SELECT COUNT(*) FROM e e1, e e2, e e3, e e4, e e5, e e6 "
    "WHERE e1.src = e2.src AND e1.src = e3.src AND e1.dst = e4.src AND e2.dst = e4.dst "
    "AND e1.dst = e5.src AND e3.dst = e5.dst AND e2.dst = e6.src AND e3.dst = e6.dst"
)


@pytest.fixture(scope="module")
def con():
    """A dense random graph whose 4-clique count takes a long time."""
    rng = np.random.default_rng(42)
    n, m = 3000, 1_500_000
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    con = einsql.connect()
    con.execute("SET threads = 1")
    con.register("e", pa.table({"src": src, "dst": dst}))
    return con


def test_keyboard_interrupt_stops_a_long_statement(con):
    timer = threading.Timer(0.5, _thread.interrupt_main)
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        con.sql(CLIQUES)
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
            con.sql(CLIQUES)
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
