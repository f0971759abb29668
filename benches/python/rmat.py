"""The R-MAT graphs of the Python benchmarks (bench.py, triangles.py): a
power-law generator with the Graph500 parameters."""

import numpy as np


def rmat_edges(scale: int, edge_factor: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Undirected R-MAT edges (u > v, distinct) of 2^scale vertices."""
    a, b, c = 0.57, 0.19, 0.19
    rng = np.random.default_rng(seed)
    m = edge_factor << scale
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    for bit in range(scale):
        r = rng.random(m)
        # Quadrants: a (0,0), b (0,1), c (1,0), d (1,1).
        down = r >= a + b
        right = ((r >= a) & (r < a + b)) | (r >= a + b + c)
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    keep = src != dst
    u = np.maximum(src[keep], dst[keep])
    v = np.minimum(src[keep], dst[keep])
    pairs = np.unique(u * (1 << scale) + v)
    return pairs >> scale, pairs & ((1 << scale) - 1)
