"""Records the answers of Galley's seven TPC-H models (numpy and pandas on
the materialized feature matrix, scripts/tpch_ml.py) into
tests/tpch_ml/answers.txt, which tests/tpch_ml.rs compares einsql's
sql/tpch_star.sql and sql/tpch_selfjoin.sql against. Run through
scripts/record-tpch-ml-answers.

Each model's output is a tensor with integer keys. The file holds, for
each, checksums over every entry (the count of entries above 1e-6 in
magnitude, the sum, the sum of magnitudes, the sum of squares and a sum
weighted by a function of the keys) and the full entries at a sample of
keys (tpch_ml.rs computes the same from einsql's tables).
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np

import tpch_ml

# The weight of an entry in the weighted checksum: ((sum of key * prime)
# mod 97 + 1) / 97.
PRIMES = [131, 31, 17, 7]
# An entry is sampled where (sum of key * factor) mod SAMPLE[model] is 0.
FACTORS = [1, 3, 5, 7]
SAMPLE = {"y": 101, "logistic": 101, "nn": 101, "cov": 31,
          "y2": 4999, "logistic2": 4999, "cov2": 31}


def weight(keys: np.ndarray) -> np.ndarray:
    primes = np.array(PRIMES[: keys.shape[1]])
    return ((keys @ primes) % 97 + 1) / 97.0


def sampled(keys: np.ndarray, model: str) -> np.ndarray:
    factors = np.array(FACTORS[: keys.shape[1]])
    return (keys @ factors) % SAMPLE[model] == 0


def lines(model: str, keys: np.ndarray, values: np.ndarray) -> list:
    out = [
        f"checksum {model} rows {int((np.abs(values) > 1e-6).sum())} "
        f"sum {float(values.sum())!r} abs {float(np.abs(values).sum())!r} "
        f"squares {float((values * values).sum())!r} "
        f"weighted {float((weight(keys) * values).sum())!r}"
    ]
    for k, v in zip(keys[sampled(keys, model)], values[sampled(keys, model)]):
        out.append(f"entry {model} {' '.join(str(int(x)) for x in k)} {float(v)!r}")
    return out


def matrix_keys(n: int) -> np.ndarray:
    j, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.stack([j.ravel(), k.ravel()], axis=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("--tpchgen", required=True)
    parser.add_argument("--sf", type=float, default=0.01)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tpch_ml.generate(args.tpchgen, args.sf, Path(tmp))
        tables = tpch_ml.load(Path(tmp))
    blocks = tpch_ml.feature_blocks(tables)
    theta, w1, w2, w3 = tpch_ml.weights()
    star = tpch_ml.Star(tables, blocks)
    star_out = tpch_ml.star_models(star.matrix(), theta, w1, w2, w3)
    pair_keys, self_out = tpch_ml.self_models(tpch_ml.SelfJoin(tables, blocks), theta)
    out = [
        "# Galley's TPC-H models on the materialized feature matrix (numpy "
        f"{np.__version__}), written by scripts/record-tpch-ml-answers; "
        "read by tests/tpch_ml.rs.",
        f"sf {args.sf}",
    ]
    for model in ["y", "logistic", "nn"]:
        out += lines(model, star.keys, star_out[model])
    out += lines("cov", matrix_keys(tpch_ml.STAR_FEATURES), star_out["cov"].ravel())
    for model in ["y2", "logistic2"]:
        out += lines(model, pair_keys, self_out[model])
    out += lines("cov2", matrix_keys(tpch_ml.SELF_FEATURES), self_out["cov2"].ravel())
    target = Path(args.repo) / "tests" / "tpch_ml" / "answers.txt"
    target.parent.mkdir(exist_ok=True)
    target.write_text("\n".join(out) + "\n")
    print(f"wrote {target}: {len(out)} lines, {len(pair_keys)} pairs")


if __name__ == "__main__":
    main()
