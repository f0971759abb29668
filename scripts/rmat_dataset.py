#!/usr/bin/env python3
"""A subgraph-counting dataset on a generated R-MAT graph with skewed labels.

Writes a dataset folder in the Sun & Luo format that `benches/subgraph.rs`
and `scripts/subgraph-bench` read (see ../shared/datasets/README.md,
section subgraph/):

    OUT/NAME/NAME.graph               t N M, v id label degree, e u v
    OUT/NAME/queries/query_{dense,sparse}_{4,8,16}_K.graph
    OUT/NAME/queries-lite/            dense 4 and sparse 8 queries

There is no truth/ folder: the benchmark checks counts between engines.

The data graph is R-MAT (Chakrabarti, Zhan and Faloutsos, 2004) with the
Graph500 parameters a=0.57, b=0.19, c=0.19, d=0.05: EDGE_FACTOR * 2^SCALE
edge samples, each choosing one quadrant per level of the adjacency matrix;
self-loops and duplicates are dropped and edges are undirected. Vertex ids
are then shuffled (unless --no-permute) so that degree does not follow id.
Each vertex draws one label independently with the --label-weights
frequencies, so most vertices carry label 0.

Query graphs are sampled from the data graph as Sun & Luo generate theirs:
a random walk from a random non-isolated vertex collects K distinct
vertices (the edge by which the walk first reached each vertex forms a
spanning tree). A dense query keeps every edge the data graph induces on
them and is kept only if its average degree is at least 3; a sparse query
keeps the spanning tree plus a random number of other induced edges, as
many as keep its average degree below 3. Samples that do not meet the rule
are drawn again. Query vertices carry their data vertices' labels, so
every query has at least one match (the vertices it was taken from).

Everything is deterministic given --seed. Standard library only.
"""

import argparse
import math
import random
import sys
from pathlib import Path

# Graph500 R-MAT parameters (d = 1 - a - b - c = 0.05).
RMAT_A, RMAT_B, RMAT_C = 0.57, 0.19, 0.19

KINDS = ("dense", "sparse")


def rmat_edges(scale, edge_factor, rng):
    """The distinct undirected edges (u < v) of EDGE_FACTOR * 2^scale R-MAT
    samples, without self-loops, as a sorted list of pairs."""
    ab, abc = RMAT_A + RMAT_B, RMAT_A + RMAT_B + RMAT_C
    edges = set()
    rand = rng.random
    for _ in range(edge_factor << scale):
        src = dst = 0
        for _ in range(scale):
            r = rand()
            # Quadrants: a (0,0), b (0,1), c (1,0), d (1,1).
            src <<= 1
            dst <<= 1
            if r >= ab:
                src |= 1
                if r >= abc:
                    dst |= 1
            elif r >= RMAT_A:
                dst |= 1
        if src != dst:
            edges.add((src, dst) if src < dst else (dst, src))
    return sorted(edges)


def data_graph(args, rng):
    """(labels, adjacency sets, sorted edge list) of the data graph."""
    n = 1 << args.scale
    edges = rmat_edges(args.scale, args.edge_factor, rng)
    if not args.no_permute:
        perm = list(range(n))
        rng.shuffle(perm)
        edges = sorted(
            (min(perm[u], perm[v]), max(perm[u], perm[v])) for u, v in edges
        )
    labels = rng.choices(range(len(args.label_weights)), weights=args.label_weights, k=n)
    adjacency = [set() for _ in range(n)]
    for u, v in edges:
        adjacency[u].add(v)
        adjacency[v].add(u)
    return labels, adjacency, edges


def random_walk(neighbours, starts, k, rng, max_steps):
    """K distinct vertices reached by a random walk, in the order first
    reached, and the tree edges (index pairs into that order) by which
    each was first reached; None if it did not reach K distinct vertices
    within MAX_STEPS steps."""
    current = rng.choice(starts)
    order = [current]
    position = {current: 0}
    tree = []
    for _ in range(max_steps):
        if len(order) == k:
            return order, tree
        step = rng.choice(neighbours[current])
        if step not in position:
            position[step] = len(order)
            order.append(step)
            tree.append((position[current], position[step]))
        current = step
    return None


def sample_query(kind, k, neighbours, adjacency, starts, rng):
    """One query graph (vertex list of data vertices, edge list of index
    pairs) of the given kind and size, or None when this sample does not
    meet the density rule. `neighbours` lists each vertex's neighbours,
    `adjacency` holds them as sets."""
    walk = random_walk(neighbours, starts, k, rng, max_steps=50 * k)
    if walk is None:
        return None
    order, tree = walk
    induced = [
        (i, j)
        for i in range(k)
        for j in range(i + 1, k)
        if order[j] in adjacency[order[i]]
    ]
    if kind == "dense":
        # Average degree 2|E|/k >= 3.
        return (order, induced) if 2 * len(induced) >= 3 * k else None
    tree_set = {(min(e), max(e)) for e in tree}
    others = [e for e in induced if e not in tree_set]
    # At most (3k - 1) // 2 edges keep 2|E|/k < 3.
    room = (3 * k - 1) // 2 - len(tree_set)
    extra = rng.randint(0, min(room, len(others)))
    return order, sorted(tree_set) + sorted(rng.sample(others, extra))


def write_graph(path, labels, edges, edge_label):
    """A Sun & Luo graph file: vertex labels by id, undirected edges."""
    degree = [0] * len(labels)
    for u, v in edges:
        degree[u] += 1
        degree[v] += 1
    lines = [f"t {len(labels)} {len(edges)}"]
    lines += [f"v {i} {label} {degree[i]}" for i, label in enumerate(labels)]
    suffix = " 0" if edge_label else ""
    lines += [f"e {u} {v}{suffix}" for u, v in edges]
    path.write_text("\n".join(lines) + "\n")


def weights(text):
    values = [float(w) for w in text.split(",")]
    if not values or any(not math.isfinite(w) or w <= 0 for w in values):
        raise argparse.ArgumentTypeError("expected positive comma-separated weights")
    return values


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text}")
    return value


def largest_component(neighbours):
    """The number of vertices of the largest connected component."""
    seen = [False] * len(neighbours)
    largest = 0
    for root in range(len(neighbours)):
        if seen[root]:
            continue
        seen[root] = True
        stack, size = [root], 0
        while stack:
            v = stack.pop()
            size += 1
            for w in neighbours[v]:
                if not seen[w]:
                    seen[w] = True
                    stack.append(w)
        largest = max(largest, size)
    return largest


def sizes(text):
    values = [int(s) for s in text.split(",")]
    if any(s < 2 for s in values):
        raise argparse.ArgumentTypeError("query sizes must be at least 2")
    return values


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Example: scripts/rmat-dataset --out /tmp/rmat-data "
        "(writes /tmp/rmat-data/rmat-15/)",
    )
    parser.add_argument("--out", type=Path, required=True, help="parent folder of the dataset")
    parser.add_argument("--name", help="dataset name (default rmat-SCALE)")
    parser.add_argument("--scale", type=positive, default=15, help="2^SCALE vertices (default 15)")
    parser.add_argument(
        "--edge-factor",
        type=positive,
        default=16,
        help="edge samples per vertex before duplicates and self-loops go (default 16)",
    )
    parser.add_argument(
        "--label-weights",
        type=weights,
        default=weights("0.70,0.20,0.07,0.03"),
        help="relative frequency of labels 0, 1, ... (default 0.70,0.20,0.07,0.03)",
    )
    parser.add_argument(
        "--no-permute", action="store_true", help="keep R-MAT's ids (degree then follows id)"
    )
    parser.add_argument(
        "--queries", type=positive, default=20, help="queries per kind and size (default 20)"
    )
    parser.add_argument(
        "--sizes", type=sizes, default=sizes("4,8,16"), help="query sizes (default 4,8,16)"
    )
    parser.add_argument(
        "--lite",
        default="dense_4,sparse_8",
        help="KIND_SIZE groups copied to queries-lite/ (default dense_4,sparse_8)",
    )
    parser.add_argument(
        "--max-tries",
        type=positive,
        default=100_000,
        help="samples per query, counted over all queries of a kind and size, "
        "before giving up (default 100000)",
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    args = parser.parse_args()

    name = args.name or f"rmat-{args.scale}"
    folder = args.out / name
    rng = random.Random(args.seed)

    labels, adjacency, edges = data_graph(args, rng)
    neighbours = [sorted(a) for a in adjacency]
    starts = [v for v, a in enumerate(neighbours) if a]
    largest = largest_component(neighbours)
    if largest < max(args.sizes):
        sys.exit(
            f"{name}: the largest connected component has {largest} vertices, "
            f"fewer than a query of {max(args.sizes)}"
        )
    (folder / "queries").mkdir(parents=True, exist_ok=True)
    (folder / "queries-lite").mkdir(exist_ok=True)
    write_graph(folder / f"{name}.graph", labels, edges, edge_label=False)

    counts = [0] * len(args.label_weights)
    for label in labels:
        counts[label] += 1
    degrees = sorted((len(a) for a in neighbours), reverse=True)
    print(
        f"{name}: {len(labels)} vertices ({len(starts)} with an edge), "
        f"{len(edges)} undirected edges, max degree {degrees[0]}, "
        f"labels {' / '.join(f'{l}: {c}' for l, c in enumerate(counts))}",
        file=sys.stderr,
    )

    lite = {g.strip() for g in args.lite.split(",") if g.strip()}
    for kind in KINDS:
        for k in args.sizes:
            tries = 0
            for number in range(1, args.queries + 1):
                while True:
                    tries += 1
                    if tries > args.max_tries * args.queries:
                        sys.exit(f"{kind} {k}: no query after {tries} samples")
                    query = sample_query(kind, k, neighbours, adjacency, starts, rng)
                    if query is not None:
                        break
                order, query_edges = query
                file_name = f"query_{kind}_{k}_{number}.graph"
                path = folder / "queries" / file_name
                write_graph(path, [labels[v] for v in order], query_edges, edge_label=True)
                if f"{kind}_{k}" in lite:
                    (folder / "queries-lite" / file_name).write_text(path.read_text())
            print(f"  {kind} {k}: {args.queries} queries from {tries} samples", file=sys.stderr)


if __name__ == "__main__":
    main()
