//! Unit tests of the einsum front-end: the text form of the IR (golden
//! strings), printing and parsing back, and positions in errors.

use std::sync::Arc;

use super::*;
use crate::ir::{AggOp, Expr, IndexTerm, ScalarOp};
use crate::storage::{Coo, DimensionSpec, Tensor, ValueData};

/// A tensor with dimensions `dims` (all of size 4) and, unless `bag`, one
/// float value column `v`, holding the single entry at the origin.
fn tensor(dims: &[&str], bag: bool) -> Arc<Tensor> {
    let values = if bag {
        Vec::new()
    } else {
        vec![("v".to_string(), ValueData::Float64(vec![1.0]))]
    };
    Arc::new(
        Tensor::from_coo(Coo {
            dims: dims
                .iter()
                .map(|d| DimensionSpec::new(*d, Some(4)))
                .collect(),
            coords: dims.iter().map(|_| vec![0]).collect(),
            values,
            column_order: None,
        })
        .unwrap(),
    )
}

fn catalog() -> Catalog {
    let mut catalog = Catalog::in_memory();
    for (name, dims, bag) in [
        ("A", &["i", "j"][..], false),
        ("B", &["j", "k"][..], false),
        ("E", &["src", "dst"][..], true),
        ("X", &["i", "j"][..], false),
        ("theta", &["j"][..], false),
        ("L", &["i"][..], false),
        ("labels", &["node", "label"][..], true),
    ] {
        catalog.put(name, tensor(dims, bag), false).unwrap();
    }
    catalog
}

fn compiled(text: &str) -> String {
    compile(text, &catalog()).unwrap().to_string()
}

fn error(text: &str) -> String {
    compile(text, &catalog()).unwrap_err().to_string()
}

#[test]
fn the_four_examples_print_as_golden_text() {
    let cases = [
        (
            "C[i,k] = SUM(j) A[i,j] * B[j,k];",
            "C[i,k] = SUM(j) A.v[i,j] * B.v[j,k];",
        ),
        (
            "t = SUM(i,j,k) E[i,j] * E[j,k] * E[i,k];",
            "t = SUM(i,j,k) E[i,j] * E[j,k] * E[i,k];",
        ),
        (
            "P[i] = sigmoid(SUM(j) X[i,j] * theta[j]);",
            "P[i] = sigmoid(SUM(j) X.v[i,j] * theta.v[j]);",
        ),
        (
            "V[i] = L[i] * MAX(j,k) E[i,j] * E[j,k] * E[i,k];",
            "V[i] = L.v[i] * MAX(j,k) E[i,j] * E[j,k] * E[i,k];",
        ),
    ];
    for (input, golden) in cases {
        assert_eq!(compiled(input), golden);
    }
}

#[test]
fn the_ir_has_galleys_shape() {
    let program = compile("C[i,k] = SUM(j) A[i,j] * B[j,k]", &catalog()).unwrap();
    let query = &program.queries[0];
    assert_eq!(query.indices, ["i", "k"]);
    let Expr::Agg { op, indices, body } = &query.expr else {
        panic!("expected an aggregate, got {:?}", query.expr)
    };
    assert_eq!(
        (*op, indices.as_slice()),
        (AggOp::Sum, &["j".to_string()][..])
    );
    let Expr::Map { op, args } = body.as_ref() else {
        panic!("expected a map, got {body:?}")
    };
    assert_eq!((*op, args.len()), (ScalarOp::Mul, 2));
    let Expr::Input(a) = &args[0] else {
        panic!("expected an input")
    };
    assert_eq!(
        a.indices,
        [IndexTerm::Var("i".into()), IndexTerm::Var("j".into())]
    );
}

#[test]
fn printing_keeps_needed_parentheses_and_parses_back() {
    let cases = [
        (
            "x[i] = (L[i] + 1) * 2 - -3;",
            "x[i] = (L.v[i] + 1) * 2 - -3;",
        ),
        ("x[i] = L[i] - (L[i] - 1);", "x[i] = L.v[i] - (L.v[i] - 1);"),
        (
            "x[i] = L[i] * (L[i] * 2.5);",
            "x[i] = L.v[i] * L.v[i] * 2.5;",
        ),
        (
            "x[i] = (SUM(j) A[i,j]) + L[i];",
            "x[i] = (SUM(j) A.v[i,j]) + L.v[i];",
        ),
        (
            "x[i] = L[i] > 0.5 and not_a_keyword[i] = 1 or L[i] < 0;",
            "",
        ),
        (
            "x[i] = -(L[i] + 1) / greatest(L[i], 0, relu(L[i]));",
            "x[i] = -(L.v[i] + 1) / greatest(L.v[i], 0, relu(L.v[i]));",
        ),
        (
            "n = COUNT(v) labels[v, 12] * (SUM(w) labels[w, 3]);",
            "n = COUNT(v) labels[v,12] * SUM(w) labels[w,3];",
        ),
        (
            "x[i] = SUM(j) A.*[i,j] * ifelse(coord(i) < COORD(j), L[i], -1);",
            "x[i] = SUM(j) A.*[i,j] * ifelse(coord(i) < coord(j), L.v[i], -1);",
        ),
    ];
    let catalog = catalog();
    for (input, golden) in cases {
        let Ok(program) = compile(input, &catalog) else {
            assert!(golden.is_empty(), "{input} should compile");
            continue;
        };
        let text = program.to_string();
        assert_eq!(text, golden);
        let again = compile(&text, &catalog).unwrap();
        assert_eq!(again, program, "{text} parses back to another IR");
    }
}

#[test]
fn aggregates_take_everything_to_their_right() {
    assert_eq!(
        compiled("x[i] = SUM(j) A[i,j] * theta[j] + 1"),
        "x[i] = SUM(j) A.v[i,j] * theta.v[j] + 1;"
    );
    let program = compile("x[i] = SUM(j) A[i,j] + 1", &catalog()).unwrap();
    assert!(matches!(program.queries[0].expr, Expr::Agg { .. }));
}

#[test]
fn errors_point_at_the_offending_text() {
    assert_eq!(
        error("C[i,k] = SUM(j) A[i,j] *\n  Bb[j,k];"),
        "2:3: Table 'Bb' does not exist (did you mean 'B'?)\n    Bb[j,k];\n    ^^"
    );
    assert_eq!(
        error("C[i] = A[i,j) ;"),
        "1:13: Syntax error: expected ',' or ']' after an index, found ')'\n  C[i] = A[i,j) ;\n              ^"
    );
    assert_eq!(
        error("C[i] = A[i,j] $ 2;"),
        "1:15: Syntax error: unexpected character '$'\n  C[i] = A[i,j] $ 2;\n                ^"
    );
    assert!(error("C[i] = SUM(j)").starts_with("1:8: Syntax error: SUM(...) must be followed"));
    assert!(
        error("C[i,i] = L[i]").starts_with("1:5: Invalid input: output index 'i' is listed twice")
    );
    assert!(error("C[i] = SUM(i) L[i]").starts_with(
        "1:3: Invalid input: output index 'i' is aggregated away on the right-hand side"
    ));
    assert!(error("C = 99999999999999999999").starts_with("1:5: Integer overflow"));
    assert!(error("C = 'x").starts_with("1:5: Syntax error: unterminated quoted string"));
    assert!(error("C = labels['a', 1]").contains("integer keys; the string 'a'"));
    assert!(error("SELECT 1").contains("expected an einsum statement"));
}

#[test]
fn deep_nesting_is_a_syntax_error_not_a_crash() {
    let deep = |open: &str, close: &str, n: usize| {
        format!("t = {}L[0]{}", open.repeat(n), close.repeat(n))
    };
    for text in [
        deep("(", ")", 100_000),
        deep("- ", "", 100_000),
        deep("sqrt(", ")", 100_000),
        deep("SUM(i) (", ")", 100_000),
    ] {
        let message = error(&text);
        assert!(
            message.contains("Syntax error: expression nested too deeply"),
            "{message}"
        );
        assert!(message.starts_with("1:"), "{message}");
    }
    // The position is that of the first token past the limit.
    let message = error(&deep("(", ")", parser::MAX_DEPTH + 1));
    let column = 5 + parser::MAX_DEPTH;
    assert!(message.starts_with(&format!("1:{column}: ")), "{message}");
    // Nesting up to the limit still compiles (and binds, and prints).
    let text = deep("(", ")", parser::MAX_DEPTH - 1);
    assert_eq!(compiled(&text), "t = L.v[0];");
    let text = deep("-(", ")", parser::MAX_DEPTH / 2 - 1);
    assert!(compile(&text, &catalog()).is_ok());
}

#[test]
fn long_operator_chains_are_a_syntax_error_not_a_crash() {
    let text = format!("t = L[0]{}", " + L[0]".repeat(100_000));
    let message = error(&text);
    assert!(message.contains("nested too deeply"), "{message}");
}

#[test]
fn block_comments_are_skipped_like_line_comments() {
    assert_eq!(
        compiled("/* c */ t = SUM(i) /* over\n i */ L[i] -- done"),
        "t = SUM(i) L.v[i];"
    );
    assert_eq!(compiled("t = L[0] /**/ / L[1]"), "t = L.v[0] / L.v[1];");
    assert_eq!(
        error("t = L[0]\n  /* never closed"),
        "2:3: Syntax error: unterminated comment: '/*' without '*/'\n    /* never closed\n    ^^"
    );
}
