//! The cost-based optimizer's foundations: sparsity estimation (Galley
//! section 7).
//!
//! The optimizer compares plans by how many non-zeros their intermediates
//! will have. [`estimate`] defines what an estimator is (the five
//! functions of Galley 7.2, [`SparsityEstimator`]) and folds one over an IR
//! expression ([`estimate_expr`]); [`uniform`] assumes uniformly spread
//! entries (7.3.1); [`chain`] propagates the stored degree statistics and
//! bounds every intermediate from above with the chain bound (7.3.2), whose
//! search over the lattice of index sets lives in [`lattice`].
//!
//! # How the optimizer calls it
//!
//! To cost a candidate sub-expression (a minimal sub-expression while
//! searching elimination orders, or the body of one aggregation step), ask
//! for the statistics of that expression and estimate them:
//!
//! ```
//! use einsql::Database;
//! use einsql::ir::{AggOp, Expr, IndexTerm, Input, Annotation, TensorRef};
//! use einsql::optimizer::{ChainEstimator, SparsityEstimator, UniformEstimator, estimate_expr};
//!
//! let db = Database::open_in_memory();
//! db.execute("CREATE TABLE e (s INT, d INT, PRIMARY KEY (s, d))")?;
//! db.execute("INSERT INTO e VALUES (0, 1), (1, 2), (0, 2), (2, 0)")?;
//! let e = TensorRef { name: "e".into(), tensor: db.table("e")? };
//! let edge = |a: &str, b: &str| Expr::Input(Input {
//!     tensor: e.clone(),
//!     annotation: Annotation::Multiplicity,
//!     indices: vec![IndexTerm::Var(a.into()), IndexTerm::Var(b.into())],
//! });
//! // Paths of length two, i -> j -> k, with j summed away.
//! let paths = Expr::Agg {
//!     op: AggOp::Sum,
//!     indices: vec!["j".into()],
//!     body: Box::new(Expr::map(einsql::ir::ScalarOp::Mul, vec![edge("i", "j"), edge("j", "k")])),
//! };
//! let chain = ChainEstimator::default();
//! let stats = estimate_expr(&chain, &paths, &Default::default())?;
//! // The chain bound: 4 edges, each followed by at most 2 out-edges.
//! assert_eq!(chain.estimate(&stats), 8.0);
//! let uniform = UniformEstimator;
//! let guess = uniform.estimate(&estimate_expr(&uniform, &paths, &Default::default())?);
//! assert!(guess > 0.0 && guess < 9.0);
//! # Ok::<(), einsql::Error>(())
//! ```
//!
//! Statistics compose: the optimizer may keep the statistics of an
//! intermediate it plans to materialize and hand them to later queries as
//! [`AliasSource::Estimated`], so that an `Alias` of that result is
//! estimated from them. The chain bound is an upper bound on the number of
//! entries of every sub-expression; the uniform estimate is a guess that
//! can be far off on skewed data (Galley figure 10). Both are cheap: the
//! uniform estimator is constant time per node; the chain bound's lattice
//! search is bounded by [`ChainEstimator::budget`] expanded sets per
//! estimate (a valid, possibly looser bound when the budget runs out).

pub mod chain;
pub mod estimate;
pub mod lattice;
pub mod uniform;

pub use chain::{ChainEstimator, ChainStats};
pub use estimate::{AliasSource, Aliases, Leaf, SparsityEstimator, estimate_expr, estimate_nnz};
pub use uniform::{UniformEstimator, UniformStats};
