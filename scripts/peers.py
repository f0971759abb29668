"""Runs SQL on a peer engine (DuckDB, DataFusion or Spark) over Parquet
tables and compares each answer with einsql's.

    python peers.py JOB.json

JOB.json:

    {"engine": "duckdb" | "datafusion" | "spark",
     "threads": 2, "memory_limit": "4GB", "temp_directory": "/tmp/x",
     "timeout": 30,
     "tables": {"edges": "/path/edges.parquet", ...},
     "cases": [{"name": "...", "sql": "...",
                "expected": "/path/expected.parquet"   # or
                "expected_rows": [[12]]                # or neither: time only
               }, ...]}

Prints one JSON line per case: name, status (ok, mismatch, error,
timeout), seconds (the engine's time to run the statement and fetch its
rows), rows, detail. Rows compare as multisets (SQL has no row order
without ORDER BY): integers, strings and booleans exactly, floats to a
relative (or, near zero, absolute) 1e-9; NaN equals NaN.

DuckDB runs with memory_limit, temp_directory, max_temp_directory_size
and threads set, and is interrupted at the timeout. DataFusion runs each
case in a child process that is killed at the timeout. Spark runs in
local mode (local[threads]) and cancels the job group at the timeout;
spark-submit with a master URL runs the same SQL on a cluster.
"""

import json
import math
import multiprocessing
import os
import sys
import threading
import time


def rows_of(table):
    """The rows of a pyarrow table as lists of Python values."""
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return [list(r) for r in zip(*columns)] if columns else []


def normal(value):
    """A value as (kind, value) for sorting and comparing."""
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, int):
        return (2, value)
    if isinstance(value, float):
        if math.isnan(value):
            return (3, float("inf"), 1)
        if value.is_integer() and abs(value) < 2**53:
            return (2, int(value))
        return (3, value, 0)
    if hasattr(value, "__int__") and not isinstance(value, str):
        # Decimals: HUGEINT as DECIMAL(38, 0) (exact), Spark's and DuckDB's
        # sums of literals.
        if value == int(value):
            return (2, int(value))
        return normal(float(value))
    return (4, str(value))


def same(a, b):
    if a == b:
        return True
    if a[0] in (2, 3) and b[0] in (2, 3):
        x, y = float(a[1]), float(b[1])
        if math.isnan(x) or math.isnan(y):
            return False
        if a[0] == 2 and b[0] == 2:
            return a[1] == b[1]
        error = abs(x - y)
        return error <= 1e-9 * max(abs(x), abs(y)) or error <= 1e-9
    return False


def compare(actual, expected):
    """None if the multisets of rows agree, else what differs."""
    if len(actual) != len(expected):
        return f"{len(actual)} rows, expected {len(expected)}"
    a = sorted([normal(v) for v in r] for r in actual)
    e = sorted([normal(v) for v in r] for r in expected)
    for ra, re in zip(a, e):
        if len(ra) != len(re) or not all(same(x, y) for x, y in zip(ra, re)):
            return f"row {ra} differs from expected {re}"
    return None


def expected_rows(case):
    if "expected_rows" in case:
        return case["expected_rows"]
    if case.get("expected"):
        import pyarrow.parquet as pq

        return rows_of(pq.read_table(case["expected"]))
    return None


def duckdb_runner(job):
    import duckdb

    con = duckdb.connect()
    temp = job.get("temp_directory", "/tmp/einsql-duckdb")
    con.execute(f"SET memory_limit = '{job.get('memory_limit', '4GB')}'")
    con.execute(f"SET temp_directory = '{temp}'")
    con.execute(f"SET max_temp_directory_size = '{job.get('max_temp', '8GB')}'")
    con.execute(f"SET threads = {int(job.get('threads', 2))}")
    for name, path in job["tables"].items():
        quoted = '"' + name.replace('"', '""') + '"'
        con.execute(f"CREATE VIEW {quoted} AS SELECT * FROM read_parquet('{path}')")

    def run(sql, timeout):
        timer = threading.Timer(timeout, con.interrupt)
        timer.start()
        try:
            result = con.execute(sql)
            if hasattr(result, "to_arrow_table"):
                return rows_of(result.to_arrow_table())
            return rows_of(result.fetch_arrow_table())
        except duckdb.InterruptException as e:
            raise TimeoutError(str(e))
        finally:
            timer.cancel()

    return run


def datafusion_child(job, sql, queue):
    try:
        from datafusion import SessionConfig, SessionContext

        config = SessionConfig().with_target_partitions(int(job.get("threads", 2)))
        ctx = SessionContext(config)
        for name, path in job["tables"].items():
            ctx.register_parquet(name, path)
        import pyarrow as pa

        batches = ctx.sql(sql).collect()
        table = pa.Table.from_batches(batches) if batches else None
        queue.put(("ok", rows_of(table) if table is not None else []))
    except Exception as e:  # noqa: BLE001 - reported to the parent
        queue.put(("error", f"{type(e).__name__}: {e}"))


def datafusion_runner(job):
    context = multiprocessing.get_context("fork")

    def run(sql, timeout):
        queue = context.Queue()
        child = context.Process(target=datafusion_child, args=(job, sql, queue))
        child.start()
        try:
            status, value = queue.get(timeout=timeout)
        except Exception:
            child.kill()
            child.join()
            raise TimeoutError(f"killed after {timeout} s")
        child.join()
        if status == "error":
            raise RuntimeError(value)
        return value

    return run


def spark_runner(job):
    from pyspark.sql import SparkSession

    threads = int(job.get("threads", 2))
    spark = (
        SparkSession.builder.master(os.environ.get("SPARK_MASTER", f"local[{threads}]"))
        .appName("einsql-peers")
        .config("spark.driver.memory", job.get("memory_limit", "4g").lower().replace("gb", "g"))
        .config("spark.sql.shuffle.partitions", str(threads))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for name, path in job["tables"].items():
        spark.read.parquet(path).createOrReplaceTempView(name)
    print(
        json.dumps({"spark": spark.version, "ansi": spark.conf.get("spark.sql.ansi.enabled")}),
        file=sys.stderr,
    )

    def run(sql, timeout):
        group = f"case-{time.monotonic_ns()}"
        spark.sparkContext.setJobGroup(group, group, interruptOnCancel=True)
        timer = threading.Timer(timeout, lambda: spark.sparkContext.cancelJobGroup(group))
        timer.start()
        started = time.monotonic()
        try:
            return [list(r) for r in spark.sql(sql).collect()]
        except Exception as e:  # noqa: BLE001
            if time.monotonic() - started >= timeout:
                raise TimeoutError(f"cancelled after {timeout} s")
            raise RuntimeError(str(e).splitlines()[0] if str(e) else type(e).__name__)
        finally:
            timer.cancel()

    return run


def main():
    with open(sys.argv[1]) as f:
        job = json.load(f)
    runner = {"duckdb": duckdb_runner, "datafusion": datafusion_runner, "spark": spark_runner}[
        job["engine"]
    ](job)
    timeout = float(job.get("timeout", 30))
    for case in job["cases"]:
        started = time.monotonic()
        out = {"name": case["name"]}
        try:
            rows = runner(case["sql"], timeout)
            out["seconds"] = time.monotonic() - started
            out["rows"] = len(rows)
            expected = expected_rows(case)
            problem = None if expected is None else compare(rows, expected)
            out["status"] = "ok" if problem is None else "mismatch"
            if problem:
                out["detail"] = problem
        except TimeoutError as e:
            out.update(status="timeout", seconds=time.monotonic() - started, detail=str(e))
        except Exception as e:  # noqa: BLE001 - every failure is reported
            out.update(
                status="error",
                seconds=time.monotonic() - started,
                detail=f"{type(e).__name__}: {e}".splitlines()[0][:500],
            )
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
