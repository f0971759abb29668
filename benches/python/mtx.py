"""Matrix Market files for the benchmark scripts: a sparse matrix as a
coordinate file, a dense matrix (or a vector, as one column) as an array
file. Values are written with 17 significant digits, so they read back
exactly. Shared by outer.py, spores.py, systemml.py and batax.py.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def write_sparse(path: str, x: sp.coo_matrix) -> None:
    """`x` as a coordinate file (1-based coordinates)."""
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{x.shape[0]} {x.shape[1]} {x.nnz}\n")
        np.savetxt(
            f,
            np.column_stack([x.row + 1, x.col + 1, x.data]),
            fmt=["%d", "%d", "%.17g"],
        )


def write_dense(path: str, a: np.ndarray) -> None:
    """`a` as an array file (a vector as one column)."""
    if a.ndim == 1:
        a = a[:, None]
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix array real general\n")
        f.write(f"{a.shape[0]} {a.shape[1]}\n")
        # Column-major, as the format stores arrays.
        np.savetxt(f, a.flatten(order="F"), fmt="%.17g")
