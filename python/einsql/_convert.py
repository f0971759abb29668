"""Conversions between Python objects and the Arrow tables einsql stores.

Into einsql: pyarrow tables and record batches, anything with
``__arrow_c_stream__`` or ``__arrow_c_array__`` (polars, DuckDB results, ...),
pandas frames, numpy arrays (dense tensors: every element is an entry) and
scipy.sparse arrays and matrices of any format (n-dimensional COO included).
Numeric buffers are handed over as they are: ``pa.array`` over a contiguous
numpy array shares its memory, and einsql keeps a float64 value column of
sorted, duplicate-free entries without copying it.

Out of einsql: a result's key columns become coordinates, its value column
the values of a scipy.sparse or dense numpy array.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa

#: Field metadata that einsql reads and writes (see src/storage/from_arrow.rs).
ROLE = b"einsql:role"
SIZE = b"einsql:size"
POSITION = b"einsql:position"

#: The value column of registered arrays, as of einsum results.
DEFAULT_VALUE = "v"


def default_keys(ndim: int) -> list[str]:
    """Dimension names of an ``ndim``-dimensional array: i, j, k, ..."""
    letters = "ijklmnopqrstuvwxyzabcdefgh"
    if ndim <= len(letters):
        return list(letters[:ndim])
    return [f"d{d}" for d in range(ndim)]


def is_scipy_sparse(obj: Any) -> bool:
    """Whether ``obj`` is a scipy.sparse array or matrix (without importing
    scipy when the program has not)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(obj)


def _is_pandas_frame(obj: Any) -> bool:
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(obj, pandas.DataFrame)


def to_arrow(
    obj: Any, keys: Optional[Sequence[str]], values: Optional[Sequence[str]]
) -> tuple[pa.Table, Optional[list[str]], Optional[list[str]]]:
    """``obj`` as a pyarrow table with the key and value columns that einsql
    should give it (None: einsql's defaults)."""
    keys = None if keys is None else _names(keys, "keys")
    values = None if values is None else _names(values, "values")
    if is_scipy_sparse(obj):
        return _from_scipy(obj, keys, values)
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, keys, values)
    if isinstance(obj, pa.Table):
        table = obj
    elif isinstance(obj, pa.RecordBatch):
        table = pa.Table.from_batches([obj])
    elif _is_pandas_frame(obj):
        table = pa.Table.from_pandas(obj, preserve_index=False)
    elif hasattr(obj, "__arrow_c_stream__"):
        table = pa.table(obj)
    elif hasattr(obj, "__arrow_c_array__"):
        table = pa.Table.from_batches([pa.record_batch(obj)])
    else:
        raise TypeError(
            "cannot register an object of type "
            f"{type(obj).__module__}.{type(obj).__qualname__}: expected Arrow data "
            "(__arrow_c_stream__ or __arrow_c_array__), a pandas or polars frame, "
            "a numpy array or a scipy.sparse array"
        )
    return _ordered(table, keys, values), keys, values


def _names(names: Sequence[str], what: str) -> list[str]:
    if isinstance(names, str):
        return [names]
    names = list(names)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"{what} must be column names (strings)")
    return names


def _ordered(
    table: pa.Table, keys: Optional[list[str]], values: Optional[list[str]]
) -> pa.Table:
    """The table with the listed keys first, in their order (the stored
    dimension order), then the listed values. Names that do not match are
    left for einsql to report."""
    if keys is None and values is None:
        return table
    listed = (keys or []) + (values or [])
    found = [_find(table.column_names, name) for name in listed]
    if any(f is None for f in found) or len(set(found)) != len(found):
        return table
    rest = [n for n in table.column_names if n not in found]
    if keys is None:
        order = rest + found
    else:
        order = found[: len(keys)] + rest + found[len(keys) :]
    return table.select(order)


def _find(names: list[str], name: str) -> Optional[str]:
    if name in names:
        return name
    matches = [n for n in names if n.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else None


def _value_name(values: Optional[list[str]]) -> str:
    if values is None:
        return DEFAULT_VALUE
    if len(values) != 1:
        raise ValueError(f"an array has one value column; got values={values!r}")
    return values[0]


def _key_names(keys: Optional[list[str]], ndim: int) -> list[str]:
    if keys is None:
        return default_keys(ndim)
    if len(keys) != ndim:
        raise ValueError(
            f"an array with {ndim} dimensions needs {ndim} key names; got keys={keys!r}"
        )
    return keys


def _check_dtype(dtype: np.dtype) -> None:
    if dtype.kind not in "biuf":
        raise TypeError(
            f"einsql stores integer, floating-point and boolean values, not {dtype}"
        )


def _table(
    coords: Sequence[np.ndarray],
    key_names: list[str],
    shape: Sequence[int],
    data: np.ndarray,
    value: str,
) -> pa.Table:
    fields = [
        pa.field(name, pa.from_numpy_dtype(c.dtype), nullable=False, metadata={SIZE: str(n)})
        for name, c, n in zip(key_names, coords, shape)
    ]
    fields.append(pa.field(value, pa.from_numpy_dtype(data.dtype), nullable=False))
    arrays = [_arrow_array(c) for c in coords] + [_arrow_array(data)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _arrow_array(array: np.ndarray) -> pa.Array:
    """A one-dimensional numpy array as an Arrow array sharing its memory
    (booleans are packed into bits: a copy). Unlike ``pa.array``, this does
    not import pandas."""
    if array.dtype == np.bool_:
        return pa.array(array)
    array = np.ascontiguousarray(array)
    kind = pa.from_numpy_dtype(array.dtype)
    return pa.Array.from_buffers(kind, len(array), [None, pa.py_buffer(array)])


def _from_numpy(
    array: np.ndarray, keys: Optional[list[str]], values: Optional[list[str]]
) -> tuple[pa.Table, list[str], list[str]]:
    array = np.asarray(array)
    _check_dtype(array.dtype)
    shape = array.shape
    key_names = _key_names(keys, array.ndim)
    value = _value_name(values)
    # Row-major coordinates: sorted, so the values are stored as they are.
    coords = []
    for d, size in enumerate(shape):
        inner = int(np.prod(shape[d + 1 :], dtype=np.int64))
        outer = int(np.prod(shape[:d], dtype=np.int64))
        coords.append(np.tile(np.repeat(np.arange(size, dtype=np.int64), inner), outer))
    data = np.ascontiguousarray(array).reshape(-1)
    return _table(coords, key_names, shape, data, value), key_names, [value]


def _from_scipy(
    matrix: Any, keys: Optional[list[str]], values: Optional[list[str]]
) -> tuple[pa.Table, list[str], list[str]]:
    _check_dtype(matrix.dtype)
    shape = tuple(int(n) for n in matrix.shape)
    key_names = _key_names(keys, len(shape))
    value = _value_name(values)
    if matrix.format in ("csr", "csc"):
        nnz = int(matrix.indptr[-1])
        lengths = np.diff(matrix.indptr)
        outer = np.repeat(np.arange(len(lengths), dtype=matrix.indices.dtype), lengths)
        inner = matrix.indices[:nnz]
        coords = [outer, inner] if matrix.format == "csr" else [inner, outer]
        data = matrix.data[:nnz]
    else:
        coo = matrix if matrix.format == "coo" else matrix.tocoo()
        coords = list(coo.coords) if hasattr(coo, "coords") else [coo.row, coo.col]
        data = coo.data
    return _table(coords, key_names, shape, data, value), key_names, [value]


def roles(
    schema: pa.Schema, keys: Optional[Sequence[str]], value: Optional[str], ndim: Optional[int]
) -> tuple[list[str], Optional[str]]:
    """The key columns and the value column (None: each row counts 1) of a
    result. Explicit ``keys``/``value`` win; then einsql's field metadata (a
    stored table); else the last column is the value and the others are
    keys, unless the result has exactly ``ndim`` columns (then all are
    keys)."""
    names = schema.names
    if keys is not None:
        keys = _names(keys, "keys")
        if value is None:
            rest = [n for n in names if n not in keys]
            value = rest[-1] if rest else None
        return keys, value
    if names and is_stored(schema):

        def of_role(role: bytes) -> list[pa.Field]:
            fields = [f for f in schema if f.metadata[ROLE] == role]
            return sorted(fields, key=lambda f: int(f.metadata.get(POSITION, b"0")))

        key_fields = of_role(b"key")
        value_fields = of_role(b"value")
        if value is None and len(value_fields) > 1:
            raise ValueError(
                f"the result has {len(value_fields)} value columns; choose one with value="
            )
        if value is None and value_fields:
            value = value_fields[0].name
        return [f.name for f in key_fields], value
    if value is not None:
        return [n for n in names if n != value], value
    if ndim is not None and len(names) == ndim:
        return list(names), None
    return list(names[:-1]), (names[-1] if names else None)


def is_stored(schema: pa.Schema) -> bool:
    """Whether ``schema`` is a stored table's (every field has a role)."""
    return all(f.metadata and ROLE in f.metadata for f in schema)


def coordinates(
    table: pa.Table, keys: Sequence[str], shape: Optional[Sequence[int]]
) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """The coordinates of the key columns and the shape they index: the
    given shape, else each dimension's stored size, else max + 1."""
    coords = []
    sizes = []
    for name in keys:
        field = table.schema.field(name)
        if not pa.types.is_integer(field.type):
            raise TypeError(
                f"column '{name}' has type {field.type}; array coordinates come from "
                "integer key columns"
            )
        column = table.column(name).to_numpy()
        coords.append(column)
        if field.metadata and SIZE in field.metadata:
            sizes.append(int(field.metadata[SIZE]))
        else:
            sizes.append(int(column.max()) + 1 if len(column) else 0)
    if shape is None:
        shape = tuple(sizes)
    else:
        shape = tuple(int(n) for n in shape)
        if len(shape) != len(keys):
            raise ValueError(f"shape {shape} has {len(shape)} dimensions, expected {len(keys)}")
    return coords, shape


def values_of(table: pa.Table, value: Optional[str]) -> np.ndarray:
    """The values of column ``value`` (ones when None)."""
    if value is None:
        return np.ones(table.num_rows, dtype=np.int64)
    return table.column(value).to_numpy()
