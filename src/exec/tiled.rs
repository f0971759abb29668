//! The tiled path: a matrix product ([`Contraction`], `C[m,n] = SUM(k)
//! A[m,k] * B[k,n]`) whose two stored operands have declared tiled indexes
//! ([`TiledIndex`]) with the same tile size along `k` runs over their
//! tiles. It joins `A`'s present blocks `(bm, bk)` with `B`'s `(bk, bn)` on
//! `bk` and multiplies each pair of tiles with the blocked kernel
//! (the `gemm` crate's), adding into a row-major `m × n` array for
//! `C`, whose non-zero cells are stored in the order of the output's
//! indices as on the dense path ([`super::dense`]). Absent blocks cost
//! nothing, and no operand is scattered: the tiles are the arrays.
//!
//! An index may list its dimensions in either order: a tile over `(k, m)`
//! is read as the transpose of one over `(m, k)` through the kernel's
//! strides. The rows of blocks of `C` run in parallel; within one, each
//! cell adds its tiles' products in increasing `bk`, so results do not
//! depend on the thread count. Cancellation is checked between tile
//! pairs, and `C`'s array is charged against the memory limit.
//!
//! As on the dense path, an operand holding a NaN or an infinity is left
//! to the loops (its tiles would multiply it by absent zeros).

use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::storage::fibertree::IndexLayout;
use crate::storage::tiles::TiledIndex;

use super::ExecOptions;
use super::accumulate::Finished;
use super::control::{Control, within_threads};
use super::dense;
use super::plan::{Contraction, PhysicalQuery, Source, Term};

/// One operand as the tiled path reads it.
#[derive(Debug)]
pub(crate) struct TiledOperand {
    /// The declared index's name.
    pub(crate) name: String,
    /// Its tiles.
    pub(crate) index: Arc<TiledIndex>,
    /// Whether its levels are `(k, outer)` rather than `(outer, k)`.
    transposed: bool,
}

impl TiledOperand {
    /// The tile sizes along the operand's outer variable and `k`.
    fn sizes(&self) -> (usize, usize) {
        let sizes = &self.index.spec().sizes;
        let (outer, inner) = if self.transposed {
            (sizes[1], sizes[0])
        } else {
            (sizes[0], sizes[1])
        };
        (outer as usize, inner as usize)
    }

    /// The block coordinates of present block `b` along the outer
    /// variable and `k`.
    fn block(&self, b: usize) -> (usize, usize) {
        let block = self.index.block(b);
        let (outer, inner) = if self.transposed {
            (block[1], block[0])
        } else {
            (block[0], block[1])
        };
        (outer as usize, inner as usize)
    }

    /// The strides of a tile read as `outer × k` (row, column).
    fn strides(&self) -> (isize, isize) {
        let (outer, inner) = self.sizes();
        if self.transposed {
            (1, outer as isize)
        } else {
            (inner as isize, 1)
        }
    }

    /// `EXPLAIN`'s description: `A USING a_t (3 of 8 × 8 tiles of 256 ×
    /// 256)`, the grid and tile sizes in `outer × k` order.
    fn describe(&self, input: &str, outer: u64, inner: u64) -> String {
        let (so, sk) = self.sizes();
        format!(
            "{input} USING {} ({} of {} × {} tiles of {so} × {sk})",
            self.name,
            self.index.len(),
            outer.div_ceil(so as u64),
            inner.div_ceil(sk as u64),
        )
    }
}

/// The two operands of a product the tiled path can run.
#[derive(Debug)]
pub(crate) struct TiledOperands {
    pub(crate) left: TiledOperand,
    pub(crate) right: TiledOperand,
}

impl TiledOperands {
    /// The multiply-adds of the product `(m, n, k)` its sizes: per pair
    /// of present blocks that meet on `bk`, the cells of their tiles that
    /// lie within the dimensions (`rows × depth × width`).
    pub(crate) fn multiply_adds(&self, (m, n, k): (u64, u64, u64)) -> f64 {
        let ((sm, sk), (sn, _)) = (self.left.sizes(), self.right.sizes());
        // Within the dimensions, the extent of block `b` of size `s`.
        let extent =
            |b: usize, s: usize, size: u64| (size as f64 - (b * s) as f64).clamp(0.0, s as f64);
        // Per `bk`: the rows of `A`'s tiles and the columns of `B`'s.
        let mut per_k: Vec<(f64, f64)> = Vec::new();
        let mut add = |bk: usize, rows: f64, cols: f64| {
            if per_k.len() <= bk {
                per_k.resize(bk + 1, (0.0, 0.0));
            }
            per_k[bk].0 += rows;
            per_k[bk].1 += cols;
        };
        for a in 0..self.left.index.len() {
            let (bm, bk) = self.left.block(a);
            add(bk, extent(bm, sm, m), 0.0);
        }
        for b in 0..self.right.index.len() {
            let (bn, bk) = self.right.block(b);
            add(bk, 0.0, extent(bn, sn, n));
        }
        per_k
            .iter()
            .enumerate()
            .map(|(bk, (rows, cols))| rows * cols * extent(bk, sk, k))
            .sum()
    }
}

/// The tiled operands of `product` in `query`: each a stored table with a
/// built, declared tiled index over its two variables, in either order,
/// the two with the same tile size along `k`. `None` for a product with a
/// vector, an operand computed by the plan, or no such indexes.
pub(crate) fn operands(query: &PhysicalQuery, product: &Contraction) -> Option<TiledOperands> {
    let lefts = candidates(query, product.left, product.rows?, product.inner);
    let rights = candidates(query, product.right, product.cols?, product.inner);
    lefts.into_iter().find_map(|left| {
        let k = left.sizes().1;
        let right = rights.iter().find(|r| r.sizes().1 == k)?;
        Some(TiledOperands {
            left,
            right: TiledOperand {
                name: right.name.clone(),
                index: Arc::clone(&right.index),
                transposed: right.transposed,
            },
        })
    })
}

/// Every built, declared tiled index of input `input` over its variables
/// `outer` and `inner`, in the order they were declared.
fn candidates(
    query: &PhysicalQuery,
    input: usize,
    outer: usize,
    inner: usize,
) -> Vec<TiledOperand> {
    let Some(access) = query.inputs.get(input) else {
        return Vec::new();
    };
    let Source::Table { tensor, .. } = &access.source else {
        return Vec::new();
    };
    let dim = |var: usize| access.terms.iter().position(|t| *t == Term::Var(var));
    let (Some(outer), Some(inner)) = (dim(outer), dim(inner)) else {
        return Vec::new();
    };
    tensor
        .declared_indexes()
        .into_iter()
        .filter_map(|declared| {
            let IndexLayout::Tiles(spec) = &declared.layout else {
                return None;
            };
            let transposed = match spec.order.as_slice() {
                [o, i] if (*o, *i) == (outer, inner) => false,
                [i, o] if (*o, *i) == (outer, inner) => true,
                _ => return None,
            };
            Some(TiledOperand {
                index: tensor.built_tiles(spec)?,
                name: declared.name,
                transposed,
            })
        })
        .collect()
}

/// `EXPLAIN`'s line for a product on the tiled path.
pub(crate) fn describe(
    query: &PhysicalQuery,
    product: &Contraction,
    (left, right): (&str, &str),
) -> String {
    let (m, n, k) = product.shape(query);
    match operands(query, product) {
        Some(tiled) => format!(
            "tiled matrix product: {} times {}",
            tiled.left.describe(left, m, k),
            tiled.right.describe(right, n, k)
        ),
        None => format!("tiled matrix product: {left} times {right} (tiles dropped)"),
    }
}

/// Runs `query` as the matrix product `product` over its operands' tiles;
/// returns the result's entries (the caller stores them as the loops'
/// would be), or `None` when the operands have no fitting tiles any more
/// or hold a value that is not finite (the caller runs the loops).
pub(crate) fn run(
    query: &PhysicalQuery,
    product: &Contraction,
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Finished>> {
    let Some(tiled) = operands(query, product) else {
        return Ok(None);
    };
    if !(tiled.left.index.is_finite() && tiled.right.index.is_finite()) {
        return Ok(None);
    }
    let (m, n, _) = product.shape(query);
    let too_large = || {
        Error::OutOfMemory(format!(
            "the tiled product of '{}' ({m} × {n} cells) does not fit in memory",
            query.name
        ))
    };
    let cells = m.checked_mul(n).ok_or_else(too_large)?;
    let bytes = cells.checked_mul(8).ok_or_else(too_large)?;
    let (m, n) = (
        usize::try_from(m).map_err(|_| too_large())?,
        usize::try_from(n).map_err(|_| too_large())?,
    );
    control.reserve(bytes)?;
    let result = multiply(query, product, &tiled, (m, n), control, options);
    control.release(bytes);
    result.map(Some)
}

/// [`run`] once `C`'s array is charged.
fn multiply(
    query: &PhysicalQuery,
    product: &Contraction,
    tiled: &TiledOperands,
    (m, n): (usize, usize),
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Finished> {
    let (left, right) = (&tiled.left, &tiled.right);
    let (sm, sk) = left.sizes();
    let (sn, _) = right.sizes();
    let k = query.vars[product.inner].size as usize;
    // `A`'s blocks by row of blocks, `B`'s by `bk`, each in increasing
    // order of the other block coordinate.
    let mut rows: Vec<Vec<(usize, usize)>> = vec![Vec::new(); m.div_ceil(sm)];
    for a in 0..left.index.len() {
        let (bm, bk) = left.block(a);
        let row = rows.get_mut(bm).ok_or_else(|| outside(query))?;
        row.push((bk, a));
    }
    let mut by_k: Vec<Vec<(usize, usize)>> = vec![Vec::new(); k.div_ceil(sk)];
    for b in 0..right.index.len() {
        let (bn, bk) = right.block(b);
        let column = by_k.get_mut(bk).ok_or_else(|| outside(query))?;
        column.push((bn, b));
    }
    for blocks in rows.iter_mut().chain(&mut by_k) {
        blocks.sort_unstable();
    }
    if bn_outside(&by_k, n, sn) {
        return Err(outside(query));
    }
    let mut c = vec![0.0; m * n];
    if n > 0 {
        within_threads(options.threads, m * n, || {
            c.par_chunks_mut(sm * n)
                .zip(&rows)
                .try_for_each(|(strip, blocks)| {
                    for &(bk, a) in blocks {
                        for &(bn, b) in by_k.get(bk).map_or(&[][..], Vec::as_slice) {
                            control.check()?;
                            let depth = sk.min(k.saturating_sub(bk * sk));
                            let width = sn.min(n - bn * sn);
                            add_product(
                                (left, a),
                                (right, b),
                                &mut strip[bn * sn..],
                                (depth, width, n),
                            );
                        }
                    }
                    Ok(())
                })
        })?;
    }
    control.check()?;
    Ok(Finished::Float(vec![dense::entries(
        query, product, &c, m, n,
    )]))
}

/// Whether a block of `B` starts past `C`'s `n` columns.
fn bn_outside(by_k: &[Vec<(usize, usize)>], n: usize, sn: usize) -> bool {
    by_k.iter().flatten().any(|&(bn, _)| bn * sn >= n)
}

/// `strip += A_a · B_b` for tile `a` of `left` and `b` of `right`, where
/// `strip` starts at the tiles' top-left cell of `C` (row stride `n`)
/// and runs over its rows of blocks: `depth` cells of `k` and `width`
/// columns, the rest of the tiles being past the dimensions' ends.
fn add_product(
    (left, a): (&TiledOperand, usize),
    (right, b): (&TiledOperand, usize),
    strip: &mut [f64],
    (depth, width, n): (usize, usize, usize),
) {
    let rows = left.sizes().0.min(strip.len().div_ceil(n));
    let (a_tile, b_tile) = (left.index.tile(a), right.index.tile(b));
    let (rsa, csa) = left.strides();
    // `B`'s tiles are read `k × n`: the transpose of its `outer × k`.
    let (csb, rsb) = right.strides();
    debug_assert!(rows == 0 || (rows - 1) * n + width <= strip.len());
    // SAFETY: a tile holds `outer × k` cells (both sizes at least the
    // `rows`, `depth` and `width` read), laid out as its strides say, so
    // every cell the kernel reads lies in `a_tile` or `b_tile`. `C`'s cells
    // (row `r < rows`, column `c < width`, at `r·n + c`) lie in `strip`:
    // its length is `n` per row but the last, which holds at least the
    // `width` columns of the tiles (checked against the dimensions by the
    // caller). `strip` is borrowed mutably, so it aliases neither tile.
    unsafe {
        gemm::gemm(
            rows,
            width,
            depth,
            strip.as_mut_ptr(),
            1,
            n as isize,
            true,
            a_tile.as_ptr(),
            csa,
            rsa,
            b_tile.as_ptr(),
            csb,
            rsb,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

fn outside(query: &PhysicalQuery) -> Error {
    Error::Internal(format!(
        "a tile of an operand of '{}' lies outside the product",
        query.name
    ))
}
