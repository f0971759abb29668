//! Factorized loop nests (the `factorize` optimizer phase): homomorphism
//! counts of random query graphs on random data graphs are the same with
//! the phase on and off, with the whole optimizer off, and with the
//! program planned as one loop nest (`eliminate` off, where the tree does
//! all the work); EXPLAIN shows the tree (a sibling subtree's loop marked
//! `×`, and a sibling that repeats the one before it, a twin vertex of the
//! query graph, marked as taken once), and a good share of the cases do
//! get one. With output variables, a summed subtree that no input joins
//! to the output loops after it runs ahead of them, once per assignment
//! of the loops around it, and the results agree with every other plan.
//! The graphs are small: with the `trivial` phase on, the loop-order
//! search would keep its greedy orders, so the plans examined here are
//! found with it off, as on larger graphs.

mod common;

use common::{Rng, lines};
use einsql::Database;

/// A random symmetric data graph as `CREATE TABLE e` and its `INSERT`.
fn data_graph(rng: &mut Rng) -> String {
    let n = 8 + rng.below(20);
    let percent = 10 + rng.below(35);
    let mut rows = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            if rng.below(100) < percent {
                rows.push(format!("({a},{b}),({b},{a})"));
            }
        }
    }
    if rows.is_empty() {
        rows.push("(0,1),(1,0)".to_string());
    }
    format!(
        "CREATE TABLE e (s BIGINT, d BIGINT);\nINSERT INTO e VALUES {};",
        rows.join(",")
    )
}

/// A random connected query graph of hubs and the vertices around them
/// (each adjacent to one or more hubs, sometimes to another such vertex),
/// as the factors of its homomorphism count: `e[v0,v2] * e[v1,v2] * ...`.
fn query_graph(rng: &mut Rng) -> (Vec<String>, Vec<String>) {
    let hubs = 1 + rng.below(2);
    let vertices = hubs + 2 + rng.below(4);
    let names: Vec<String> = (0..vertices).map(|v| format!("v{v}")).collect();
    let mut edges: Vec<(usize, usize)> = Vec::new();
    if hubs == 2 && rng.below(2) == 0 {
        edges.push((0, 1));
    }
    for v in hubs..vertices {
        let first = rng.below(hubs);
        edges.push((first, v));
        for h in 0..hubs {
            if h != first && rng.below(2) == 0 {
                edges.push((h, v));
            }
        }
        if v > hubs && rng.below(4) == 0 {
            edges.push((hubs + rng.below(v - hubs), v));
        }
    }
    let factors = edges
        .iter()
        .map(|&(a, b)| format!("e[{},{}]", names[a], names[b]))
        .collect();
    (names, factors)
}

/// The rows of `statement`'s result `table` under each setting, in
/// order.
fn results(db: &Database, settings: &[&str], statement: &str, table: &str) -> Vec<Vec<String>> {
    settings
        .iter()
        .map(|setting| {
            db.execute_all(&format!("{setting};\n{statement}"))
                .unwrap_or_else(|e| panic!("{setting}: {e}\n{statement}"));
            let result = db
                .execute(&format!("SELECT * FROM {table}"))
                .unwrap_or_else(|e| panic!("{setting}: {e}\n{statement}"));
            lines(&result)
        })
        .collect()
}

/// The lines of `statement`'s plan with the optimizer's defaults except
/// variable elimination (so that the loop nest does all the work).
fn plan_without_elimination(db: &Database, statement: &str) -> Vec<String> {
    db.execute("RESET optimizer").expect("resets");
    db.execute("SET disabled_optimizers = 'eliminate, trivial'")
        .expect("sets");
    lines(
        &db.execute(&format!("EXPLAIN {statement}"))
            .unwrap_or_else(|e| panic!("{e}\n{statement}")),
    )
}

#[test]
fn factorized_counts_agree_with_every_other_plan() {
    let mut rng = Rng(0xfac7_0212_2026_1126);
    let settings = [
        "SET disabled_optimizers = 'eliminate, trivial'",
        "SET disabled_optimizers = 'eliminate, factorize, trivial'",
        "SET disabled_optimizers = ''",
        "SET disabled_optimizers = 'factorize'",
        "SET optimizer = 'none'",
    ];
    let (mut cases, mut trees, mut repeats) = (0, 0, 0);
    for case in 0..60 {
        let db = Database::open_in_memory();
        db.execute_all(&data_graph(&mut rng))
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        let (vars, factors) = query_graph(&mut rng);
        let statement = format!("c = SUM({}) {};", vars.join(","), factors.join(" * "));
        let all = results(&db, &settings, &statement, "c");
        assert!(
            all.iter().all(|c| *c == all[0]),
            "case {case}: counts differ across plans {all:?}\n{statement}"
        );
        let plan = plan_without_elimination(&db, &statement).join("\n");
        if plan.contains("× for") {
            trees += 1;
        }
        if plan.contains("taken once") {
            repeats += 1;
        }
        cases += 1;
    }
    eprintln!(
        "{cases} query graphs counted, {trees} of them through a loop tree, {repeats} with a repeated sibling"
    );
    assert!(trees >= cases / 4, "only {trees} of {cases} plans branch");
    assert!(
        repeats >= cases / 10,
        "only {repeats} of {cases} plans repeat a sibling"
    );
}

#[test]
fn explain_shows_the_loop_tree() {
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE e (s BIGINT, d BIGINT);
         INSERT INTO e VALUES (0,1),(1,0),(0,2),(2,0),(1,2),(2,1),(2,3),(3,2),(1,3),(3,1);
         SET disabled_optimizers = 'eliminate, trivial';",
    )
    .expect("loads");
    // Given x and y, the common neighbours a and b are independent: the
    // count is, per (x, y), the square of their number.
    let statement = "c = SUM(x,y,a,b) e[x,y] * e[x,a] * e[y,a] * e[x,b] * e[y,b];";
    let plan = lines(
        &db.execute(&format!("EXPLAIN {statement}"))
            .expect("explains"),
    )
    .join("\n");
    let loops: Vec<&str> = plan
        .lines()
        .filter(|l| l.trim_start().starts_with("for ") || l.trim_start().starts_with("× for "))
        .collect();
    assert_eq!(loops.len(), 4, "{plan}");
    let sibling = loops
        .iter()
        .position(|l| l.trim_start().starts_with("× for "))
        .unwrap_or_else(|| panic!("no sibling loop:\n{plan}"));
    // The sibling sits at the depth of the loop just above it, and reads
    // what that loop reads with its variable renamed: its sum is the same.
    let indent = |l: &str| l.len() - l.trim_start().len();
    assert_eq!(indent(loops[sibling]), indent(loops[sibling - 1]), "{plan}");
    let twin = loops[sibling - 1]
        .trim_start()
        .strip_prefix("for ")
        .and_then(|l| l.split(':').next())
        .unwrap_or_else(|| panic!("no loop variable:\n{plan}"));
    assert!(
        loops[sibling].ends_with(&format!("the same sum as for {twin}, taken once")),
        "{plan}"
    );
    db.execute_all(statement).expect("counts");
    let factorized = lines(&db.execute("SELECT * FROM c").expect("reads"));
    db.execute("SET disabled_optimizers = 'eliminate, factorize, trivial'")
        .expect("sets");
    let plan = lines(
        &db.execute(&format!("EXPLAIN {statement}"))
            .expect("explains"),
    )
    .join("\n");
    assert!(!plan.contains("× for"), "{plan}");
    db.execute_all(statement).expect("counts");
    assert_eq!(
        lines(&db.execute("SELECT * FROM c").expect("reads")),
        factorized
    );
    // Per edge, the square of its ends' common neighbours: {0,1} share 2,
    // {0,2} share 1, {1,2} share 0 and 3, {2,3} share 1, {1,3} share 2;
    // both directions of each: 2·(1 + 1 + 4 + 1 + 1) = 16.
    assert_eq!(factorized, ["16"]);
}

/// The loop lines of `statement`'s plan under the settings in force, and
/// its count.
fn plan_and_count(db: &Database, statement: &str) -> (Vec<String>, Vec<String>) {
    let plan = lines(
        &db.execute(&format!("EXPLAIN {statement}"))
            .unwrap_or_else(|e| panic!("{e}\n{statement}")),
    );
    let loops = plan
        .iter()
        .map(|l| l.trim().to_string())
        .filter(|l| l.starts_with("for ") || l.starts_with("× for "))
        .collect();
    db.execute_all(statement)
        .unwrap_or_else(|e| panic!("{e}\n{statement}"));
    let count = lines(&db.execute("SELECT * FROM c").expect("reads"));
    (loops, count)
}

#[test]
fn only_siblings_that_read_the_same_values_are_taken_once() {
    // The plans as written, and without the symmetry phase, which would
    // read each pattern's interchangeable `x` and `y` through the edges'
    // orientation and order the loops for that.
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE e (s BIGINT, d BIGINT);
         INSERT INTO e VALUES (0,1),(1,0),(0,2),(2,0),(1,2),(2,1),(2,3),(3,2),(1,3),(3,1);
         CREATE TABLE f (s BIGINT, d BIGINT);
         INSERT INTO f VALUES (0,1),(1,0),(0,2),(2,0),(1,2),(2,1),(0,3),(3,0);
         SET disabled_optimizers = 'eliminate, symmetry, trivial';",
    )
    .expect("loads");
    let repeated = |loops: &[String]| loops.iter().filter(|l| l.ends_with("taken once")).count();
    // Three twins: per edge, the cube of its ends' common neighbours
    // ({0,1}: 1, {0,2}: 1, {1,2}: 2, {2,3}: 1, {1,3}: 1), both directions.
    let (loops, count) = plan_and_count(
        &db,
        "c = SUM(x,y,a,b,z) e[x,y] * e[x,a] * e[y,a] * e[x,b] * e[y,b] * e[x,z] * e[y,z];",
    );
    assert_eq!(repeated(&loops), 2, "{loops:#?}");
    assert_eq!(count, ["24"]);
    // Siblings over different tables, or with different neighbours, are
    // each computed; the counts agree with the plan as a path.
    for statement in [
        "c = SUM(x,y,a,b) e[x,y] * e[x,a] * e[y,a] * f[x,b] * f[y,b];",
        "c = SUM(x,y,a,b) e[x,y] * e[x,a] * e[y,a] * e[x,b] * e[b,y];",
        "c = SUM(x,y,a,b) e[x,y] * e[x,a] * e[y,a] * e[x,b];",
    ] {
        db.execute("SET disabled_optimizers = 'eliminate, symmetry, trivial'")
            .expect("sets");
        let (loops, count) = plan_and_count(&db, statement);
        assert!(loops.iter().any(|l| l.starts_with("× for")), "{loops:#?}");
        assert_eq!(repeated(&loops), 0, "{statement}\n{loops:#?}");
        db.execute("SET disabled_optimizers = 'eliminate, factorize, symmetry, trivial'")
            .expect("sets");
        let (_, path) = plan_and_count(&db, statement);
        assert_eq!(count, path, "{statement}");
    }
}

#[test]
fn summed_subtrees_ahead_of_output_loops_agree_with_every_other_plan() {
    let mut rng = Rng(0x0a7e_ad0f_2026_1128);
    let settings = [
        "SET disabled_optimizers = 'eliminate, trivial'",
        "SET disabled_optimizers = 'eliminate, factorize, trivial'",
        "SET disabled_optimizers = ''",
        "SET optimizer = 'none'",
    ];
    let (mut cases, mut ahead) = (0, 0);
    for case in 0..60 {
        let db = Database::open_in_memory();
        db.execute_all(&data_graph(&mut rng))
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        let (vars, factors) = query_graph(&mut rng);
        // One or two of the vertices are the result's indices.
        let mut outputs = vec![vars[rng.below(vars.len())].clone()];
        let other = vars[rng.below(vars.len())].clone();
        if rng.below(2) == 0 && !outputs.contains(&other) {
            outputs.push(other);
        }
        let summed: Vec<&str> = vars
            .iter()
            .filter(|v| !outputs.contains(v))
            .map(String::as_str)
            .collect();
        let statement = format!(
            "r[{}] = SUM({}) {};",
            outputs.join(","),
            summed.join(","),
            factors.join(" * ")
        );
        let all = results(&db, &settings, &statement, "r");
        assert!(
            all.iter().all(|r| *r == all[0]),
            "case {case}: results differ across plans {all:?}\n{statement}"
        );
        let plan = plan_without_elimination(&db, &statement);
        let sibling_output = plan.iter().any(|l| {
            outputs
                .iter()
                .any(|v| l.trim_start().starts_with(&format!("× for {v}:")))
        });
        if sibling_output {
            ahead += 1;
        }
        cases += 1;
    }
    eprintln!("{cases} results computed, {ahead} with a summed subtree ahead of an output loop");
    assert!(
        ahead >= cases / 4,
        "only {ahead} of {cases} plans sum ahead of an output loop"
    );
}

#[test]
fn a_sum_that_shares_no_input_with_the_output_loops_runs_ahead_of_them() {
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE a (p BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (p, j));
         INSERT INTO a VALUES (1,1,0.5),(1,2,2.0),(2,1,1.5),(2,3,-1.0),(3,2,4.0);
         CREATE TABLE b (o BIGINT, p BIGINT, v DOUBLE, PRIMARY KEY (o, p));
         INSERT INTO b VALUES (1,1,1.0),(2,1,2.0),(3,1,3.0),(1,2,0.25),(4,2,0.75),(5,3,2.0);
         SET disabled_optimizers = 'eliminate, trivial';",
    )
    .expect("loads");
    // The Gram matrix of `a`'s rows weighted by the sums of `b`'s columns:
    // per part p, Σ_o b[o,p] once, not once per (j, k).
    let statement = "r[j,k] = SUM(o,p) a.v[p,j] * a.v[p,k] * b.v[o,p];";
    let plan = lines(
        &db.execute(&format!("EXPLAIN {statement}"))
            .expect("explains"),
    );
    let loops: Vec<&str> = plan
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("for ") || l.starts_with("× for "))
        .collect();
    let var = |l: &str| {
        l.trim_start_matches("× ")
            .trim_start_matches("for ")
            .split(':')
            .next()
            .unwrap_or("")
            .to_string()
    };
    let order: Vec<String> = loops.iter().map(|l| var(l)).collect();
    assert_eq!(order, ["p", "o", "j", "k"], "{plan:#?}");
    assert!(loops[2].starts_with("× for j"), "{plan:#?}");
    db.execute_all(statement).expect("computes");
    let ahead = lines(&db.execute("SELECT * FROM r").expect("reads"));
    db.execute("SET disabled_optimizers = 'eliminate, factorize, trivial'")
        .expect("sets");
    db.execute_all(statement).expect("computes");
    assert_eq!(lines(&db.execute("SELECT * FROM r").expect("reads")), ahead);
    // p = 1: Σ_o = 6, a[1,·] = (0.5, 2.0, 0); p = 2: Σ_o = 1, a[2,·] =
    // (1.5, 0, -1.0); p = 3: Σ_o = 2, a[3,·] = (0, 4.0, 0).
    assert_eq!(
        ahead,
        [
            "1|1|3.75", "1|2|6.0", "1|3|-1.5", "2|1|6.0", "2|2|56.0", "3|1|-1.5", "3|3|1.0"
        ]
    );
}
