//! The uniform sparsity estimator (Galley section 7.3.1): a tensor is its
//! dimension sizes and its number of non-fill entries, assumed spread
//! uniformly and independently over the dimension space.
//!
//! With `n_i` the size of index `i`, `I_j` the indices of argument `j`, `C`
//! the indices of the result and `p_j = nnz_j / Π_{i∈I_j} n_i` the density
//! of argument `j`:
//!
//! - join (annihilating map): `nnz = Π_{i∈C} n_i · Π_j p_j`;
//! - union (non-annihilating map): `nnz = Π_{i∈C} n_i · (1 − Π_j (1 − p_j))`;
//! - aggregate over `I'`: `nnz = Π_{i∈I∖I'} n_i · (1 − (1 − p)^{Π_{i∈I'} n_i})`;
//! - a stored tensor read with a constant coordinate keeps `1/n` of its
//!   entries per constant, and a variable repeated over `k` dimensions keeps
//!   `1/n^(k−1)` (the chance that `k` uniform coordinates agree).
//!
//! Products of sizes are computed as sums of logarithms, and `1 − (1 − p)^N`
//! with `ln_1p`/`expm1`, so huge dimension spaces and tiny densities stay
//! accurate; estimates saturate at `f64::MAX` instead of overflowing.

use crate::error::{Error, Result};
use crate::ir::IndexTerm;
use crate::optimizer::estimate::{Leaf, SparsityEstimator};

/// The uniform estimator; its statistics are [`UniformStats`].
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformEstimator;

/// The variables of a sub-expression with their sizes, and its estimated
/// number of non-fill entries.
#[derive(Clone, Debug, PartialEq)]
pub struct UniformStats {
    vars: Vec<(String, u64)>,
    nnz: f64,
}

impl UniformStats {
    /// The free variables with their dimension sizes.
    pub fn vars(&self) -> &[(String, u64)] {
        &self.vars
    }

    /// The estimated number of non-fill entries.
    pub fn nnz(&self) -> f64 {
        self.nnz
    }

    /// `ln` of the number of assignments of the variables.
    fn ln_space(&self) -> f64 {
        ln_space(self.vars.iter().map(|(_, s)| *s))
    }

    /// The fraction of assignments that are entries, in `0..=1`.
    fn density(&self) -> f64 {
        if self.nnz <= 0.0 {
            return 0.0;
        }
        (self.nnz.ln() - self.ln_space()).exp().min(1.0)
    }

    /// Stats over `vars` with `ln_nnz`, capped by the space of `vars`.
    fn from_ln(vars: Vec<(String, u64)>, ln_nnz: f64) -> UniformStats {
        let ln_max = ln_space(vars.iter().map(|(_, s)| *s));
        let nnz = if ln_nnz.is_nan() {
            0.0
        } else {
            ln_nnz.min(ln_max).exp().min(f64::MAX)
        };
        UniformStats { vars, nnz }
    }
}

/// `ln` of the product of `sizes` (`-inf` if one is 0).
fn ln_space(sizes: impl Iterator<Item = u64>) -> f64 {
    sizes.map(|s| (s as f64).ln()).sum()
}

/// The union of the variables of `stats`, in order of appearance.
fn union_vars<'a>(stats: impl Iterator<Item = &'a UniformStats>) -> Vec<(String, u64)> {
    let mut vars: Vec<(String, u64)> = Vec::new();
    for s in stats {
        for (name, size) in &s.vars {
            match vars.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = slot.1.min(*size),
                None => vars.push((name.clone(), *size)),
            }
        }
    }
    vars
}

/// The variables and `ln` of the selectivity of reading dimensions of the
/// given sizes through `terms`: `1/n` per constant, `1/n` per repeat.
fn read_terms(sizes: &[u64], terms: &[IndexTerm]) -> Result<(Vec<(String, u64)>, f64)> {
    if sizes.len() != terms.len() {
        return Err(Error::Invalid(format!(
            "{} index terms for a tensor of {} dimensions",
            terms.len(),
            sizes.len()
        )));
    }
    let mut vars: Vec<(String, u64)> = Vec::new();
    let mut ln_selectivity = 0.0;
    for (term, &size) in terms.iter().zip(sizes) {
        match term {
            IndexTerm::Const(_) => ln_selectivity -= (size as f64).ln(),
            IndexTerm::Var(v) => match vars.iter_mut().find(|(n, _)| n == v) {
                Some(slot) => {
                    slot.1 = slot.1.min(size);
                    ln_selectivity -= (size as f64).ln();
                }
                None => vars.push((v.clone(), size)),
            },
        }
    }
    Ok((vars, ln_selectivity))
}

impl SparsityEstimator for UniformEstimator {
    type Stats = UniformStats;

    fn leaf(&self, leaf: Leaf<'_, UniformStats>) -> Result<UniformStats> {
        match leaf {
            Leaf::Stored { tensor, terms } => {
                let sizes: Vec<u64> = tensor.dims().iter().map(|d| d.size).collect();
                let (vars, ln_selectivity) = read_terms(&sizes, terms)?;
                let nnz = tensor.statistics().nnz() as f64;
                Ok(UniformStats::from_ln(vars, nnz.ln() + ln_selectivity))
            }
            Leaf::Estimated {
                stats,
                indices,
                terms,
            } => {
                let sizes: Vec<u64> = indices
                    .iter()
                    .map(|name| {
                        stats
                            .vars
                            .iter()
                            .find(|(n, _)| n == name)
                            .map_or(1, |(_, s)| *s)
                    })
                    .collect();
                let (vars, ln_selectivity) = read_terms(&sizes, terms)?;
                Ok(UniformStats::from_ln(vars, stats.nnz.ln() + ln_selectivity))
            }
            Leaf::Dense { vars } => {
                let vars = vars.to_vec();
                let ln = ln_space(vars.iter().map(|(_, s)| *s));
                Ok(UniformStats::from_ln(vars, ln))
            }
            Leaf::Empty => Ok(UniformStats {
                vars: Vec::new(),
                nnz: 0.0,
            }),
        }
    }

    fn join(&self, args: &[&UniformStats]) -> Result<UniformStats> {
        let vars = union_vars(args.iter().copied());
        if args.iter().any(|a| a.nnz <= 0.0) {
            return Ok(UniformStats { vars, nnz: 0.0 });
        }
        let ln_densities: f64 = args.iter().map(|a| a.nnz.ln() - a.ln_space()).sum();
        let ln = ln_space(vars.iter().map(|(_, s)| *s)) + ln_densities;
        Ok(UniformStats::from_ln(vars, ln))
    }

    fn union(&self, args: &[&UniformStats]) -> Result<UniformStats> {
        let vars = union_vars(args.iter().copied());
        // ln of the chance that an assignment is fill in every argument.
        let ln_all_fill: f64 = args.iter().map(|a| (-a.density()).ln_1p()).sum();
        let filled = -ln_all_fill.exp_m1();
        let ln = ln_space(vars.iter().map(|(_, s)| *s)) + filled.ln();
        Ok(UniformStats::from_ln(vars, ln))
    }

    fn aggregate(&self, indices: &[String], body: &UniformStats) -> Result<UniformStats> {
        let (summed, kept): (Vec<_>, Vec<_>) = body
            .vars
            .iter()
            .cloned()
            .partition(|(name, _)| indices.contains(name));
        let copies: f64 = summed.iter().map(|(_, s)| *s as f64).product();
        let p = body.density();
        if p <= 0.0 || copies <= 0.0 {
            return Ok(UniformStats {
                vars: kept,
                nnz: 0.0,
            });
        }
        // 1 − (1 − p)^copies: the chance that a group has an entry.
        let filled = -(copies * (-p).ln_1p()).exp_m1();
        let ln = ln_space(kept.iter().map(|(_, s)| *s)) + filled.ln();
        Ok(UniformStats::from_ln(kept, ln))
    }

    fn estimate(&self, stats: &UniformStats) -> f64 {
        stats.nnz
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(vars: &[(&str, u64)], nnz: f64) -> UniformStats {
        UniformStats {
            vars: vars.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            nnz,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn formulas_of_section_7_3_1() {
        let u = UniformEstimator;
        let a = stats(&[("i", 10), ("j", 20)], 50.0);
        let b = stats(&[("j", 20), ("k", 5)], 10.0);
        // Join: 10·20·5 · (50/200) · (10/100).
        let joined = u.join(&[&a, &b]).unwrap();
        assert!(close(joined.nnz(), 25.0), "{joined:?}");
        assert_eq!(joined.vars().len(), 3);
        // Union: 1000 · (1 − (1 − 0.25)(1 − 0.1)).
        let united = u.union(&[&a, &b]).unwrap();
        assert!(close(united.nnz(), 1000.0 * (1.0 - 0.75 * 0.9)));
        // Aggregate over j: 10 · (1 − 0.75^20).
        let summed = u.aggregate(&["j".to_string()], &a).unwrap();
        assert!(close(summed.nnz(), 10.0 * (1.0 - 0.75f64.powi(20))));
        assert_eq!(summed.vars(), &[("i".to_string(), 10)]);
    }

    #[test]
    fn huge_spaces_and_empty_inputs() {
        let u = UniformEstimator;
        let big = stats(&[("i", 1 << 40), ("j", 1 << 40)], 1e6);
        let summed = u.aggregate(&["j".to_string()], &big).unwrap();
        assert!(summed.nnz() > 0.0 && summed.nnz() <= 1e6 * 1.000_001);
        let empty = u.leaf(Leaf::Empty).unwrap();
        assert_eq!(u.join(&[&big, &empty]).unwrap().nnz(), 0.0);
        assert!(close(u.union(&[&big, &empty]).unwrap().nnz(), 1e6));
    }
}
