//! Results of several hundred thousand entries, which the executor writes
//! in runs of 65,536 (`exec::accumulate::RUN`) and stores one run after
//! another: a self-join of items through their group, on the product
//! kernel (`BIGINT`) and on the general loop nest (a `DOUBLE` body with a
//! sum), under the optimizer's plans and the default ones, on one thread
//! and two. Their counts, checksums over coordinates and values, and the
//! column sums read back through the stored result equal a direct
//! computation.

mod common;

use common::{lines, under_plans_and_threads};
use einsql::Database;

/// Items `0..ITEMS`, each in one of `GROUPS` groups.
const ITEMS: i64 = 2000;
const GROUPS: i64 = 10;

fn group(a: i64) -> i64 {
    (a * 7) % GROUPS
}

/// The pairs `(a, b)` of items in one group, with `w(a, b)`.
fn pairs(w: impl Fn(i64, i64) -> f64) -> Vec<(i64, i64, f64)> {
    let mut out = Vec::new();
    for a in 0..ITEMS {
        for b in 0..ITEMS {
            if group(a) == group(b) {
                out.push((a, b, w(a, b)));
            }
        }
    }
    out
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs().max(1.0)
}

#[test]
fn results_of_many_runs_equal_a_direct_computation() {
    let items: Vec<String> = (0..ITEMS)
        .map(|a| format!("({a},{},{})", group(a), a + 1))
        .collect();
    let db = Database::open_in_memory();
    db.execute_all(&format!(
        "CREATE TABLE p (a BIGINT, g BIGINT, v BIGINT, PRIMARY KEY (a, g));
         INSERT INTO p VALUES {rows};
         CREATE TABLE q (a BIGINT, g BIGINT, v DOUBLE, PRIMARY KEY (a, g));
         INSERT INTO q VALUES {rows};",
        rows = items.join(",")
    ))
    .expect("loads");
    let products = pairs(|a, b| ((a + 1) * (b + 1)) as f64);
    let general = pairs(|a, b| (a + 1) as f64 * (b + 1) as f64 * ((b + 1) as f64 + 0.5));
    assert!(products.len() > 5 * 65_536);
    let mut columns = vec![0i64; ITEMS as usize];
    for &(a, b, _) in &products {
        columns[b as usize] += (a + 1) * (b + 1);
    }
    let column_sums: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(b, v)| format!("{b}|{v}"))
        .collect();
    under_plans_and_threads(&db, |case| {
        db.execute_all(
            "m[a,b] = SUM(g) p[a,g] * p[b,g];
             f[a,b] = SUM(g) q[a,g] * q[b,g] * (q[b,g] + 0.5);
             r[b] = SUM(a) m[a,b];",
        )
        .expect("runs");
        for (table, want) in [("m", &products), ("f", &general)] {
            let got = lines(
                &db.execute(&format!(
                    "SELECT COUNT(*), SUM(v), SUM(v * (3 * a + b)) FROM {table}"
                ))
                .expect("reads"),
            );
            let cells: Vec<f64> = got[0]
                .split('|')
                .map(|c| c.parse().expect("a number"))
                .collect();
            let sum: f64 = want.iter().map(|&(_, _, v)| v).sum();
            let weighted: f64 = want.iter().map(|&(a, b, v)| v * (3 * a + b) as f64).sum();
            assert_eq!(cells[0], want.len() as f64, "{table}, {case}");
            assert!(close(cells[1], sum), "{table}, {case}: {}", cells[1]);
            assert!(close(cells[2], weighted), "{table}, {case}: {}", cells[2]);
        }
        // The column sums of `m`, read through its stored index.
        let got = lines(&db.execute("SELECT b, v FROM r ORDER BY b").expect("reads"));
        assert_eq!(got, column_sums, "{case}");
    });
}
