//! Galley's TPC-H machine-learning workloads (issue 21): the seven models of
//! `sql/tpch_star.sql` and `sql/tpch_selfjoin.sql` at SF 0.01 against
//! numpy on the materialized feature matrix, as
//! `scripts/record-tpch-ml-answers` recorded it in
//! `tests/tpch_ml/answers.txt` (checksums over every entry and the entries
//! at a sample of keys, each within a relative 1e-9); and the star-join
//! models' plans, which never build a step as large as the feature matrix.

mod common;

use std::collections::HashMap;

use einsql::Database;
use einsql::storage::ValueData;

const STAR: &str = include_str!("../sql/tpch_star.sql");
const SELF_JOIN: &str = include_str!("../sql/tpch_selfjoin.sql");
const ANSWERS: &str = include_str!("tpch_ml/answers.txt");

/// The weight of an entry in the weighted checksum, as
/// `scripts/tpch_ml_answers.py` defines it: ((sum of key * prime) mod 97 +
/// 1) / 97.
const PRIMES: [i64; 4] = [131, 31, 17, 7];

/// One model's recorded answer.
#[derive(Default)]
struct Answer {
    rows: usize,
    sum: f64,
    abs: f64,
    squares: f64,
    weighted: f64,
    entries: Vec<(Vec<i64>, f64)>,
}

/// The recorded scale factor and each model's answer.
fn answers() -> (String, HashMap<String, Answer>) {
    let mut sf = String::new();
    let mut models: HashMap<String, Answer> = HashMap::new();
    for line in ANSWERS.lines().filter(|l| !l.starts_with('#')) {
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "sf" => sf = words[1].to_string(),
            "checksum" => {
                let number = |name: &str| -> f64 {
                    let at = words.iter().position(|w| *w == name).unwrap();
                    words[at + 1].parse().unwrap()
                };
                let answer = models.entry(words[1].to_string()).or_default();
                answer.rows = number("rows") as usize;
                answer.sum = number("sum");
                answer.abs = number("abs");
                answer.squares = number("squares");
                answer.weighted = number("weighted");
            }
            "entry" => {
                let keys = words[2..words.len() - 1]
                    .iter()
                    .map(|k| k.parse().unwrap())
                    .collect();
                let value = words[words.len() - 1].parse().unwrap();
                models
                    .entry(words[1].to_string())
                    .or_default()
                    .entries
                    .push((keys, value));
            }
            other => panic!("unknown line kind {other} in answers.txt"),
        }
    }
    (sf, models)
}

/// The sections of a script marked by `-- @name` lines, by name.
fn section<'a>(script: &'a str, name: &str) -> &'a str {
    let marker = format!("-- @{name}\n");
    let start = script.find(&marker).expect("the section exists");
    let rest = &script[start + marker.len()..];
    &rest[..rest.find("\n-- @").map_or(rest.len(), |end| end + 1)]
}

/// A database with the TPC-H tables at the recorded scale factor.
fn tpch(sf: &str) -> Database {
    let db = Database::open_in_memory();
    db.execute(&format!("CALL dbgen(sf = {sf})")).unwrap();
    db
}

/// The entries of a stored result: its keys and its value, read from the
/// stored tensor (`SELECT * FROM y2`, 1.9 million entries over four
/// dimensions, stops with an out-of-memory error: its rows query is
/// reserved for far more entries than the table has).
fn entries(db: &Database, table: &str) -> Vec<(Vec<i64>, f64)> {
    let coo = db.table(table).unwrap().to_coo();
    let [(_, ValueData::Float64(values))] = coo.values.as_slice() else {
        panic!("{table} has one DOUBLE value column");
    };
    values
        .iter()
        .enumerate()
        .map(|(row, v)| (coo.coords.iter().map(|c| c[row]).collect(), *v))
        .collect()
}

/// Checks `table` against the recorded answer of the model of that name.
fn check(db: &Database, table: &str, answer: &Answer) {
    let got = entries(db, table);
    let weight = |keys: &[i64]| {
        let s: i64 = keys.iter().zip(PRIMES).map(|(k, p)| k * p).sum();
        (s % 97 + 1) as f64 / 97.0
    };
    let rows = got.iter().filter(|(_, v)| v.abs() > 1e-6).count();
    let sum: f64 = got.iter().map(|(_, v)| v).sum();
    let abs: f64 = got.iter().map(|(_, v)| v.abs()).sum();
    let squares: f64 = got.iter().map(|(_, v)| v * v).sum();
    let weighted: f64 = got.iter().map(|(k, v)| weight(k) * v).sum();
    assert_eq!(rows, answer.rows, "{table}: entries above 1e-6");
    let scale = answer.abs.max(1.0);
    for (what, got, want, tolerance) in [
        ("sum", sum, answer.sum, 1e-9 * scale),
        ("abs", abs, answer.abs, 1e-9 * scale),
        ("squares", squares, answer.squares, 1e-9 * answer.squares),
        ("weighted", weighted, answer.weighted, 1e-9 * scale),
    ] {
        assert!(
            (got - want).abs() <= tolerance,
            "{table}: {what} {got} != {want}"
        );
    }
    let values: HashMap<&[i64], f64> = got.iter().map(|(k, v)| (k.as_slice(), *v)).collect();
    assert!(
        answer.entries.len() >= 30,
        "{table}: too few sampled entries"
    );
    for (keys, want) in &answer.entries {
        let got = values.get(keys.as_slice()).copied().unwrap_or(0.0);
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "{table}{keys:?}: {got} != {want}"
        );
    }
}

/// The entries of every step of `statement`'s plan, from `EXPLAIN ANALYZE`.
fn step_sizes(db: &Database, statement: &str) -> Vec<(String, u64)> {
    common::lines(&db.execute(&format!("EXPLAIN ANALYZE {statement}")).unwrap())
        .iter()
        .filter_map(|line| {
            let (step, rest) = line.trim().split_once(": ")?;
            let (entries, _) = rest.split_once(" entries")?;
            Some((step.to_string(), entries.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_star_join_models_equal_numpy_on_the_materialized_matrix() {
    let (sf, answers) = answers();
    let db = tpch(&sf);
    db.execute(STAR).unwrap();
    for model in ["y", "logistic", "cov", "nn"] {
        check(&db, model, &answers[model]);
    }

    // The materialized feature matrix, for its size: no step of the
    // regressions' or the covariance's plans is as large (theta is pushed
    // into each feature table; the covariance sums per block pair), and
    // the network's first layer is built from the blocks' products with W1
    // (25 values per line item) without it.
    db.execute("X[o,n,j] = SUM(s,p,c) L[o,n,s,p,c] * (S[s,j] + P[p,j] + O[o,j] + C[c,j])")
        .unwrap();
    let x: u64 = common::lines(&db.execute("SELECT COUNT(*) FROM X").unwrap())[0]
        .parse()
        .unwrap();
    assert!(x > 10 * 60_000, "{x}");
    for model in [
        "linear_regression",
        "logistic_regression",
        "covariance",
        "neural_network",
    ] {
        let statement = section(STAR, model)
            .lines()
            .filter(|l| !l.starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        let first = statement.split(';').next().unwrap();
        let sizes = step_sizes(&db, first);
        assert!(sizes.len() > 1, "{model}: {sizes:?}");
        let limit = if model == "neural_network" {
            25 * 60_175
        } else {
            x
        };
        assert!(
            sizes.iter().all(|(_, n)| *n < limit),
            "{model}: a step of {limit} entries or more: {sizes:?}"
        );
    }

    // The network's first layer adds the four blocks' products with W1 in
    // one pass over L (four rows of 25 values per line item): no block is
    // planned through a projection of L and added to the others apart.
    let first_layer = section(STAR, "neural_network")
        .lines()
        .find(|l| l.starts_with("h1["))
        .unwrap();
    let plan = common::lines(&db.execute(&format!("EXPLAIN {first_layer}")).unwrap());
    let over_l: Vec<&String> = plan
        .iter()
        .filter(|l| l.trim_start().starts_with("Query") && l.contains("L[o,n,s,p,c]"))
        .collect();
    assert_eq!(over_l.len(), 1, "{plan:#?}");
    assert!(
        over_l[0].contains("(#e1[s,k] + #e2[p,k] + #e3[o,k] + #e4[c,k])"),
        "{plan:#?}"
    );

    // The covariance pairs each line item with itself through the key
    // (o, n) of L: L's rows are a pattern of ones, its own square, so no
    // step reads L twice (the loops would intersect it with itself).
    let covariance = section(STAR, "covariance")
        .lines()
        .filter(|l| !l.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    let plan = common::lines(&db.execute(&format!("EXPLAIN {covariance}")).unwrap());
    let steps: Vec<&String> = plan
        .iter()
        .filter(|l| l.trim_start().starts_with("Query"))
        .collect();
    assert!(
        steps.iter().any(|l| l.contains("L[o,n,s,p,c]")),
        "{plan:#?}"
    );
    assert!(
        steps.iter().all(|l| l.matches("L[o,n,s,p,c]").count() <= 1),
        "{plan:#?}"
    );
}

#[test]
fn the_self_join_models_equal_numpy_on_the_materialized_matrix() {
    let (sf, answers) = answers();
    let db = tpch(&sf);
    db.execute(section(STAR, "features")).unwrap();
    db.execute(SELF_JOIN).unwrap();
    for model in ["y2", "logistic2", "cov2"] {
        check(&db, model, &answers[model]);
    }
}
