//! Triangle counting and weighted triangle sums on random graphs with hubs,
//! where the executor's innermost loop over two sorted fibers merges,
//! searches the longer one (galloping) or maps the fiber that stays while
//! the loop above runs, and 4-clique counts and sums, whose innermost loop
//! over three fibers intersects the two that stay once per visit of the
//! loops above (`src/exec/product.rs`): the results equal a direct
//! computation, on one thread and two, under the optimizer's plans and the
//! default ones.

mod common;

use common::{Rng, lines, under_plans_and_threads};
use einsql::Database;

/// The edges `(i, j)`, `i > j`, of a graph on `n` vertices whose first
/// `hubs` vertices are each adjacent to about half of the others, the
/// rest sparsely connected.
fn graph(rng: &mut Rng, n: usize, hubs: usize) -> Vec<(usize, usize)> {
    let mut edges = Vec::new();
    for i in 0..n {
        for j in 0..i {
            let percent = if j < hubs { 50 } else { 4 };
            if rng.below(100) < percent {
                edges.push((i, j));
            }
        }
    }
    edges
}

/// The weight of edge `(i, j)`.
fn weight(i: usize, j: usize) -> f64 {
    1.0 + ((i * 7 + j * 3) % 5) as f64 / 4.0
}

/// The number of triangles and the sum over them of their weights'
/// product, directly.
fn direct(n: usize, edges: &[(usize, usize)]) -> (u64, f64) {
    let mut adjacent = vec![vec![false; n]; n];
    for &(i, j) in edges {
        adjacent[i][j] = true;
    }
    let (mut count, mut sum) = (0, 0.0);
    for &(i, j) in edges {
        for (k, (&jk, &ik)) in adjacent[j].iter().zip(&adjacent[i]).enumerate().take(j) {
            if jk && ik {
                count += 1;
                sum += weight(i, j) * weight(j, k) * weight(i, k);
            }
        }
    }
    (count, sum)
}

/// Runs `program` (a count into `t`, a weighted sum into `s`) under the
/// optimizer's plans and the default ones, on one thread and two, and
/// checks both against `expected` (the sum up to 1e-9 relative) for the
/// graph of `n` vertices.
fn counts_and_sums_equal(db: &Database, program: &str, expected: (u64, f64), n: usize) {
    let (count, sum) = expected;
    under_plans_and_threads(db, |case| {
        db.execute_all(program).expect("counts");
        let t = lines(&db.execute("SELECT * FROM t").expect("reads"));
        assert_eq!(t, [count.to_string()], "n {n}, {case}");
        let s = lines(&db.execute("SELECT * FROM s").expect("reads"));
        let got: f64 = s[0].parse().expect("a number");
        assert!(
            (got - sum).abs() <= 1e-9 * sum.abs(),
            "n {n}, {case}: {got} against {sum}"
        );
    });
}

#[test]
fn triangle_counts_and_weighted_sums_equal_a_direct_computation() {
    let mut rng = Rng(0x7f1a_2026_1126_0001);
    for (n, hubs) in [(120, 2), (400, 6), (900, 3)] {
        let edges = graph(&mut rng, n, hubs);
        let (count, sum) = direct(n, &edges);
        let rows: Vec<String> = edges.iter().map(|(i, j)| format!("({i},{j})")).collect();
        let weighted: Vec<String> = edges
            .iter()
            .map(|&(i, j)| format!("({i},{j},{})", weight(i, j)))
            .collect();
        let db = Database::open_in_memory();
        db.execute_all(&format!(
            "CREATE TABLE l (i BIGINT, j BIGINT);
             INSERT INTO l VALUES {};
             CREATE TABLE w (i BIGINT, j BIGINT, v DOUBLE);
             INSERT INTO w VALUES {};",
            rows.join(","),
            weighted.join(",")
        ))
        .expect("loads");
        counts_and_sums_equal(
            &db,
            "t = SUM(i,j,k) l[i,j] * l[j,k] * l[i,k];
             s = SUM(i,j,k) w[i,j] * w[j,k] * w[i,k];",
            (count, sum),
            n,
        );
    }
}

#[test]
fn repeated_rows_count_as_often_as_they_are_stored() {
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE l (i BIGINT, j BIGINT);
         INSERT INTO l VALUES (1,0),(2,0),(2,1),(3,0),(3,1);
         t = SUM(i,j,k) l[i,j] * l[j,k] * l[i,k];",
    )
    .expect("counts");
    assert_eq!(lines(&db.execute("SELECT * FROM t").expect("reads")), ["2"]);
    // (1,0) twice: every triangle on it counts twice.
    db.execute_all(
        "INSERT INTO l VALUES (1,0);
         t = SUM(i,j,k) l[i,j] * l[j,k] * l[i,k];",
    )
    .expect("counts");
    assert_eq!(lines(&db.execute("SELECT * FROM t").expect("reads")), ["4"]);
}

/// The number of ordered 4-cliques `(a, b, c, d)` (every pair adjacent)
/// of the undirected graph `edges`, and the sum over them of the product
/// of their six edges' weights, directly.
fn direct_cliques(n: usize, edges: &[(usize, usize)]) -> (u64, f64) {
    let mut w = vec![vec![0.0; n]; n];
    for &(i, j) in edges {
        w[i][j] = weight(i, j);
        w[j][i] = weight(i, j);
    }
    let neighbours: Vec<Vec<usize>> = (0..n)
        .map(|i| (0..n).filter(|&j| w[i][j] != 0.0).collect())
        .collect();
    let (mut count, mut sum) = (0, 0.0);
    for a in 0..n {
        for &b in &neighbours[a] {
            for &c in &neighbours[a] {
                if w[b][c] == 0.0 {
                    continue;
                }
                for &d in &neighbours[a] {
                    if w[b][d] != 0.0 && w[c][d] != 0.0 {
                        count += 1;
                        sum += w[a][b] * w[a][c] * w[a][d] * w[b][c] * w[b][d] * w[c][d];
                    }
                }
            }
        }
    }
    (count, sum)
}

#[test]
fn four_clique_counts_and_weighted_sums_equal_a_direct_computation() {
    let mut rng = Rng(0x7f1a_2026_1128_0004);
    for (n, hubs) in [(60, 2), (150, 5), (260, 3)] {
        let edges = graph(&mut rng, n, hubs);
        let (count, sum) = direct_cliques(n, &edges);
        assert!(count > 0, "n {n}: a graph with 4-cliques");
        let both = |row: &dyn Fn(usize, usize) -> String| -> String {
            edges
                .iter()
                .flat_map(|&(i, j)| [row(i, j), row(j, i)])
                .collect::<Vec<_>>()
                .join(",")
        };
        let db = Database::open_in_memory();
        db.execute_all(&format!(
            "CREATE TABLE e (i BIGINT, j BIGINT);
             INSERT INTO e VALUES {};
             CREATE TABLE w (i BIGINT, j BIGINT, v DOUBLE);
             INSERT INTO w VALUES {};",
            both(&|i, j| format!("({i},{j})")),
            both(&|i, j| format!("({i},{j},{})", weight(i.max(j), i.min(j)))),
        ))
        .expect("loads");
        counts_and_sums_equal(
            &db,
            "t = SUM(a,b,c,d) e[a,b] * e[a,c] * e[a,d] * e[b,c] * e[b,d] * e[c,d];
             s = SUM(a,b,c,d) w[a,b] * w[a,c] * w[a,d] * w[b,c] * w[b,d] * w[c,d];",
            (count, sum),
            n,
        );
        // Every edge stored twice: each clique counts 2^6 times.
        db.execute_all(&format!(
            "INSERT INTO e VALUES {};
             t = SUM(a,b,c,d) e[a,b] * e[a,c] * e[a,d] * e[b,c] * e[b,d] * e[c,d];",
            both(&|i, j| format!("({i},{j})"))
        ))
        .expect("counts");
        let t = lines(&db.execute("SELECT * FROM t").expect("reads"));
        assert_eq!(t, [(count * 64).to_string()], "n {n}, every edge twice");
    }
}
