"""einsql: an embedded database engine for sparse tensors, driven by SQL or
tensor index notation, with Arrow, numpy and scipy.sparse interchange.

    import einsql, numpy as np, scipy.sparse as sp

    con = einsql.connect()
    A = sp.random_array((4, 3), density=0.5, format="csr")
    y = con.einsum("y[i] = SUM(j) A[i,j] * x[j]", A=A, x=np.ones(3))
    con.sql("SELECT i, v FROM y ORDER BY v DESC LIMIT 2").fetchall()

See docs/python.md in the repository for the whole API.
"""

from ._connection import Connection, connect, einsum
from ._einsql import (
    ArrowError,
    CancelledError,
    CatalogError,
    Error,
    FileFormatError,
    IndexExistsError,
    IntegerOverflowError,
    InternalError,
    InvalidInputError,
    IoError,
    NotSupportedError,
    OutOfMemoryError,
    ParquetError,
    ParseError,
    TableExistsError,
    TypeMismatchError,
    UnknownNameError,
    UnsupportedFileError,
    __version__,
)
from ._result import Result

__all__ = [
    "ArrowError",
    "CancelledError",
    "CatalogError",
    "Connection",
    "Error",
    "FileFormatError",
    "IndexExistsError",
    "IntegerOverflowError",
    "InternalError",
    "InvalidInputError",
    "IoError",
    "NotSupportedError",
    "OutOfMemoryError",
    "ParquetError",
    "ParseError",
    "Result",
    "TableExistsError",
    "TypeMismatchError",
    "UnknownNameError",
    "UnsupportedFileError",
    "__version__",
    "connect",
    "einsum",
]
