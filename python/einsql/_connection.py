"""Connections: statements, registration of Python data, and einsum."""

from __future__ import annotations

import os
import re
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _convert
from ._einsql import Database, Error
from ._result import Result

#: The output of an einsum statement: ``y[i] = ...`` or ``t = ...``.
_OUTPUT = re.compile(r'^\s*(?:"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_]*))\s*(?:\[|=)')

#: numpy's einsum subscripts without ellipsis: ``ij,jk->ik``.
_SUBSCRIPTS = re.compile(r"^[A-Za-z]*(,[A-Za-z]*)*(->[A-Za-z]*)?$")


class Connection:
    """A connection to an einsql database (in memory, or in a directory).

    Statements run with the GIL released, so other Python threads go on
    meanwhile; Ctrl-C (KeyboardInterrupt) stops a running statement, which
    then changes nothing, and the connection stays usable. One connection
    may be used from several threads at once; ``interrupt()`` and Ctrl-C
    stop every statement running on it.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]", None] = None) -> None:
        self._db: Optional[Database] = Database(None if path is None else os.fspath(path))

    @property
    def _native(self) -> Database:
        if self._db is None:
            raise Error("the connection is closed")
        return self._db

    def close(self) -> None:
        """Closes the connection (a database directory holds every change
        already)."""
        self._db = None

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._db is None:
            return "<einsql.Connection (closed)>"
        where = "on disk" if self._db.persistent else "in memory"
        return f"<einsql.Connection {where}: {len(self.tables())} tables>"

    def sql(self, query: str) -> Result:
        """Runs ``query`` (SQL or einsum statements; the last one's result
        is returned)."""
        return Result(self._native.execute(query))

    def execute(self, statement: str) -> Result:
        """Runs ``statement``: settings (``SET threads = 4``), DDL, inserts,
        einsum assignments, queries. Returns the last statement's result,
        whose ``message`` says what a change did."""
        return Result(self._native.execute(statement))

    def explain(self, statement: str) -> str:
        """The plan of ``statement`` (SQL or einsum) without running it."""
        plan = self.execute(f"EXPLAIN {statement}").arrow()
        return "\n".join(str(line) for line in plan.column(0).to_pylist())

    def register(
        self,
        name: str,
        data: Any,
        *,
        keys: Optional[Sequence[str]] = None,
        values: Optional[Sequence[str]] = None,
    ) -> "Connection":
        """Stores ``data`` as table ``name``, replacing a table of that
        name, and returns the connection.

        ``data`` is a pyarrow table or record batch, any object with
        ``__arrow_c_stream__`` or ``__arrow_c_array__`` (polars, DuckDB
        results, ...), a pandas DataFrame, a numpy array (a dense tensor:
        every element is an entry) or a scipy.sparse array or matrix of any
        format (n-dimensional COO too; the shape is kept as the dimension
        sizes).

        ``keys`` lists the key columns (the dimensions, in stored order) and
        ``values`` the value columns; either alone makes every other column
        the other kind; without both, integer and string columns are keys
        and floating-point and boolean columns values. For arrays, ``keys``
        names the dimensions (default ``i, j, k, ...``) and ``values`` the
        value column (default ``v``).

        Numeric buffers are shared, not copied, where the layout allows: a
        float64 value column of sorted, duplicate-free entries (a numpy
        array, a CSR matrix with sorted indices, a sorted pyarrow table of
        one chunk) is stored as the caller's memory.
        """
        table, keys, values = _convert.to_arrow(data, keys, values)
        self._native.register(name, table, keys, values)
        return self

    def unregister(self, name: str) -> "Connection":
        """Drops table ``name`` if it exists."""
        quoted = '"' + name.replace('"', '""') + '"'
        self.execute(f"DROP TABLE IF EXISTS {quoted}")
        return self

    def table(self, name: str) -> Result:
        """The stored rows of table ``name``, with each column's role and
        each dimension's size (so ``to_scipy()`` and ``numpy()`` give the
        stored shape); shares the table's buffers."""
        return Result(self._native.table(name))

    def tables(self) -> list[str]:
        """The table names, in alphabetical order."""
        return self._native.table_names()

    def interrupt(self) -> None:
        """Stops the statements running on this connection (call it from
        another thread); they raise ``CancelledError``."""
        self._native.interrupt()

    def einsum(self, statement: str, /, **operands: Any) -> Any:
        """Runs one einsum statement over the given operands and returns its
        output.

        Each keyword registers an operand under its name (replacing a table
        of that name), as ``register`` does; the output is stored as the
        table the statement names, and returned: a scalar for an output
        without indices, a numpy array when every array operand is dense or
        the output has one index, else a scipy.sparse array (CSR for two
        indices, COO for more)::

            y = con.einsum("y[i] = SUM(j) A[i,j] * x[j]", A=csr, x=vec)
        """
        pieces = [p for p in statement.split(";") if p.strip()]
        match = _OUTPUT.match(pieces[-1]) if pieces else None
        if match is None:
            raise ValueError(
                "expected an einsum statement such as 'y[i] = SUM(j) A[i,j] * x[j]', "
                f"got {statement!r}"
            )
        output = match.group(2) or match.group(1).replace('""', '"')
        for name, operand in operands.items():
            self.register(name, operand)
        self.execute(statement)
        sparse = any(_convert.is_scipy_sparse(o) for o in operands.values())
        return _output(self.table(output), sparse)


def _output(result: Result, sparse: bool) -> Any:
    """An einsum output as a scalar, a numpy array or a scipy.sparse array."""
    keys, _ = _convert.roles(result.arrow().schema, None, None, None)
    if not keys:
        return result.numpy()[()]
    if sparse and len(keys) >= 2:
        return result.to_scipy("csr" if len(keys) == 2 else "coo")
    return result.numpy()


def connect(path: Union[str, "os.PathLike[str]", None] = None) -> Connection:
    """A connection to a new in-memory database, or to the database in
    directory ``path`` (created if it does not exist)."""
    return Connection(path)


def einsum(subscripts: str, *operands: Any) -> Any:
    """numpy's ``einsum`` computed by einsql: ``einsum("ij,j->i", A, x)``.

    Operands are numpy arrays or scipy.sparse arrays and matrices. Each
    letter indexes one dimension; letters of the output (after ``->``)
    index the result and every other letter is summed; without ``->`` the
    output is the letters that appear once, in alphabetical order. Returns a
    numpy scalar for an output without letters, a numpy array when every
    operand is dense or the output has one letter, else a scipy.sparse array
    (CSR for two letters, COO for more). Ellipsis (``...``) and broadcasting
    are not supported.
    """
    spec = subscripts.replace(" ", "")
    if not _SUBSCRIPTS.match(spec):
        raise ValueError(
            f"einsum subscripts must be letters, commas and '->' (no ellipsis), "
            f"got {subscripts!r}"
        )
    inputs, _, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(
            f"einsum subscripts {subscripts!r} name {len(terms)} operands, "
            f"got {len(operands)}"
        )
    if "->" not in spec:
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    sizes: dict[str, int] = {}
    for term, operand in zip(terms, operands):
        shape = np.shape(operand) if not _convert.is_scipy_sparse(operand) else operand.shape
        if len(term) != len(shape):
            raise ValueError(
                f"einsum term {term!r} has {len(term)} letters for an operand of "
                f"shape {tuple(shape)}"
            )
        for letter, size in zip(term, shape):
            if sizes.setdefault(letter, int(size)) != int(size):
                raise ValueError(
                    f"einsum letter {letter!r} indexes dimensions of sizes "
                    f"{sizes[letter]} and {size}"
                )
    missing = [c for c in output if c not in sizes]
    if missing:
        raise ValueError(f"einsum output letters {missing} index no operand")
    con = Connection()
    names = [f"t{k}" for k in range(len(operands))]
    for name, operand in zip(names, operands):
        data = operand if _convert.is_scipy_sparse(operand) else np.asarray(operand)
        con.register(name, data)
    result = con.sql(f"SELECT * FROM einsum('{spec}', {', '.join(names)})")
    shape = [sizes[c] for c in output]
    columns = result.columns
    keys, value = columns[: len(output)], columns[len(output)]
    if not output:
        return result.numpy(keys=[], value=value)[()]
    sparse = any(_convert.is_scipy_sparse(o) for o in operands)
    if sparse and len(output) >= 2:
        return result.to_scipy(
            "csr" if len(output) == 2 else "coo", keys=keys, value=value, shape=shape
        )
    return result.numpy(keys=keys, value=value, shape=shape)
