"""The result of a statement, readable as Arrow, pandas, polars, numpy and
scipy.sparse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np
import pyarrow as pa

from . import _convert
from ._einsql import QueryResult

if TYPE_CHECKING:
    import pandas
    import polars


class Result:
    """The rows of one statement (none for a statement that changed the
    database: see ``message``).

    The rows are Arrow record batches held by einsql; ``arrow()`` hands them
    over as a ``pyarrow.Table`` without copying, and every other reader goes
    through it. The result also implements the Arrow PyCapsule interface
    (``__arrow_c_stream__``), so ``polars.DataFrame(result)``,
    ``pyarrow.table(result)`` and DuckDB's ``duckdb.sql("SELECT * FROM
    result")`` read it directly.
    """

    __slots__ = ("_native", "_table")

    def __init__(self, native: QueryResult) -> None:
        self._native = native
        self._table: Optional[pa.Table] = None

    @property
    def message(self) -> Optional[str]:
        """What a statement without rows did, e.g. ``"Created table a (3
        entries)"``; None for a query."""
        return self._native.message

    @property
    def columns(self) -> list[str]:
        """The column names."""
        return self.arrow().column_names

    def __len__(self) -> int:
        return self._native.num_rows

    def __repr__(self) -> str:
        if self.message is not None and not self.columns:
            return f"<einsql.Result: {self.message}>"
        return f"<einsql.Result: {len(self)} rows>\n{self.arrow()}"

    def arrow(self) -> pa.Table:
        """The rows as a ``pyarrow.Table`` (sharing einsql's buffers)."""
        if self._table is None:
            self._table = self._native.to_arrow()
        return self._table

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The rows as an Arrow C stream (the Arrow PyCapsule interface)."""
        return self.arrow().__arrow_c_stream__(requested_schema)

    def df(self) -> "pandas.DataFrame":
        """The rows as a pandas DataFrame (needs pandas)."""
        return self.arrow().to_pandas()

    def pl(self) -> "polars.DataFrame":
        """The rows as a polars DataFrame (needs polars)."""
        import polars

        return polars.from_arrow(self.arrow())

    def fetchall(self) -> list[tuple[Any, ...]]:
        """The rows as a list of tuples (a HUGEINT as a Python ``int``, as
        DuckDB gives it)."""
        table = self.arrow()
        return list(zip(*(_python_values(column) for column in table.columns)))

    def to_scipy(
        self,
        format: str = "coo",
        *,
        keys: Optional[Sequence[str]] = None,
        value: Optional[str] = None,
        shape: Optional[Sequence[int]] = None,
    ) -> Any:
        """The rows as a scipy.sparse array: ``"coo"``, ``"csr"`` or
        ``"csc"`` (needs scipy).

        The key columns give the coordinates and the value column the
        values. For a stored table (``Connection.table``) both, and the
        shape, come from einsql's metadata; for a query, the last column is
        the value and the others are keys, except that a result of exactly
        two columns is a pattern (every row counts 1); otherwise the shape
        is each key's maximum + 1. ``keys``, ``value`` and ``shape`` choose
        them explicitly. CSR and CSC need two keys; COO takes any number
        (n-dimensional ``coo_array``).
        """
        import scipy.sparse

        if format not in ("coo", "csr", "csc"):
            raise ValueError(f"format must be 'coo', 'csr' or 'csc', not {format!r}")
        table = self.arrow()
        ndim = 2 if shape is None else len(shape)
        key_names, value_name = _convert.roles(table.schema, keys, value, ndim)
        coords, full_shape = _convert.coordinates(table, key_names, shape)
        if format != "coo" and len(full_shape) != 2:
            raise ValueError(
                f"{format.upper()} needs two key columns; the result has "
                f"{len(full_shape)} ({', '.join(key_names)}); use format='coo'"
            )
        data = _convert.values_of(table, value_name)
        coo = scipy.sparse.coo_array((data, tuple(coords)), shape=full_shape)
        if format == "csr":
            return coo.tocsr()
        if format == "csc":
            return coo.tocsc()
        return coo

    def numpy(
        self,
        *,
        keys: Optional[Sequence[str]] = None,
        value: Optional[str] = None,
        shape: Optional[Sequence[int]] = None,
    ) -> np.ndarray:
        """The rows as a dense numpy array: one axis per key column, the
        value at each row's coordinates and zero elsewhere (rows with the
        same coordinates add up). Keys, value and shape are found as for
        ``to_scipy``; a result without key columns gives a 0-d array of its
        one value (0 when it has no row)."""
        table = self.arrow()
        ndim = None if shape is None else len(shape)
        key_names, value_name = _convert.roles(table.schema, keys, value, ndim)
        coords, full_shape = _convert.coordinates(table, key_names, shape)
        data = _convert.values_of(table, value_name)
        out = np.zeros(full_shape, dtype=data.dtype)
        if coords and value_name is not None and _convert.is_stored(table.schema):
            # A stored table with a value column has one row per key.
            out[tuple(coords)] = data
        elif coords:
            np.add.at(out, tuple(coords), data)
        elif len(data) > 1:
            raise ValueError(
                f"a result without key columns has one row, not {len(data)}; "
                "name the key columns with keys="
            )
        elif len(data) == 1:
            out[()] = data[0]
        return out


def _python_values(column: "pa.ChunkedArray") -> list[Any]:
    """A column's values as Python objects; HUGEINT (``decimal128(38,
    0)``) values as ``int`` rather than ``Decimal``."""
    values = column.to_pylist()
    if pa.types.is_decimal(column.type) and column.type.scale == 0:
        return [None if v is None else int(v) for v in values]
    return values
