//! Factorized loop nests (the `factorize` optimizer phase): homomorphism
//! counts of random query graphs on random data graphs are the same with
//! the phase on and off, with the whole optimizer off, and with the
//! program planned as one loop nest (`eliminate` off, where the tree does
//! all the work); EXPLAIN shows the tree (a sibling subtree's loop marked
//! `×`, and a sibling that repeats the one before it, a twin vertex of the
//! query graph, marked as taken once), and a good share of the cases do
//! get one.

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

/// The count of `statement` under each setting, in order.
fn counts(db: &Database, settings: &[&str], statement: &str) -> Vec<String> {
    settings
        .iter()
        .map(|setting| {
            db.execute_all(&format!("{setting};\n{statement}"))
                .unwrap_or_else(|e| panic!("{setting}: {e}\n{statement}"));
            let result = db
                .execute("SELECT * FROM c")
                .unwrap_or_else(|e| panic!("{setting}: {e}\n{statement}"));
            lines(&result).join(",")
        })
        .collect()
}

#[test]
fn factorized_counts_agree_with_every_other_plan() {
    let mut rng = Rng(0xfac7_0212_2026_1126);
    let settings = [
        "SET disabled_optimizers = 'eliminate'",
        "SET disabled_optimizers = 'eliminate, factorize'",
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
        let all = counts(&db, &settings, &statement);
        assert!(
            all.iter().all(|c| *c == all[0]),
            "case {case}: counts differ across plans {all:?}\n{statement}"
        );
        db.execute("RESET optimizer").expect("resets");
        db.execute("SET disabled_optimizers = 'eliminate'")
            .expect("sets");
        let plan = lines(
            &db.execute(&format!("EXPLAIN {statement}"))
                .unwrap_or_else(|e| panic!("case {case}: {e}")),
        )
        .join("\n");
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
         SET disabled_optimizers = 'eliminate';",
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
    db.execute("SET disabled_optimizers = 'eliminate, factorize'")
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
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE e (s BIGINT, d BIGINT);
         INSERT INTO e VALUES (0,1),(1,0),(0,2),(2,0),(1,2),(2,1),(2,3),(3,2),(1,3),(3,1);
         CREATE TABLE f (s BIGINT, d BIGINT);
         INSERT INTO f VALUES (0,1),(1,0),(0,2),(2,0),(1,2),(2,1),(0,3),(3,0);
         SET disabled_optimizers = 'eliminate';",
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
        db.execute("SET disabled_optimizers = 'eliminate'")
            .expect("sets");
        let (loops, count) = plan_and_count(&db, statement);
        assert!(loops.iter().any(|l| l.starts_with("× for")), "{loops:#?}");
        assert_eq!(repeated(&loops), 0, "{statement}\n{loops:#?}");
        db.execute("SET disabled_optimizers = 'eliminate, factorize'")
            .expect("sets");
        let (_, path) = plan_and_count(&db, statement);
        assert_eq!(count, path, "{statement}");
    }
}
