//! The dense path: a query that is one matrix product
//! ([`Contraction`], `C[m,n] = SUM(k) A[m,k] * B[k,n]`) runs over dense
//! arrays instead of its loop nest, and builds no fibertree index. `A` and
//! `B` are scattered from their stored entries into row-major `m × k` and
//! `k × n` arrays (absent entries are 0) and `C` is computed in a
//! row-major `m × n` one by a blocked matrix kernel (the `gemm` crate's,
//! with AVX-512 where the processor has it) in blocks of rows on the
//! thread pool; its non-zero cells are stored in the order of the
//! output's indices.
//!
//! The block sizes depend on `m` only, and every cell is one dot product
//! over `k` in the kernel's order, so results do not depend on the thread
//! count. The three arrays are charged against the memory limit while
//! they live.
//!
//! An operand holding a NaN or an infinity is left to the loops: the
//! kernel multiplies it by the 0 of every absent cell it meets (`0 × ∞`
//! is NaN), where the loops, like the reference evaluator, never read an
//! absent entry of a product.

use arrow::array::AsArray;
use arrow::datatypes::Float64Type;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::ir::Annotation;
use crate::storage::Tensor;

use super::ExecOptions;
use super::accumulate::{Entries, Finished};
use super::control::{Control, within_threads};
use super::plan::{Contraction, PhysicalQuery, Term};

/// Rows of `C` per block: enough that a block amortizes the kernel's
/// packing of `B`, few enough that the blocks spread over the threads.
const BLOCK_ROWS: usize = 256;

/// One operand as the product reads it: its entries' coordinates along
/// its outer variable (`m` or `n`; `None` for a vector) and along `k`,
/// and their values.
struct Operand<'a> {
    outer: Option<&'a [i64]>,
    inner: &'a [i64],
    values: &'a [f64],
}

impl<'a> Operand<'a> {
    /// The operand that input `input` of `query` reads from `tensor` (its
    /// value column `annotation`), `outer` being its variable other than
    /// `inner` (`k`).
    fn new(
        query: &PhysicalQuery,
        input: usize,
        tensor: &'a Tensor,
        annotation: Annotation,
        outer: Option<usize>,
        inner: usize,
    ) -> Result<Operand<'a>> {
        let terms = &query.inputs[input].terms;
        let dim = |var: usize| terms.iter().position(|t| *t == Term::Var(var));
        let Annotation::Column(column) = annotation else {
            return Err(internal(query, "reads the rows of a bag"));
        };
        let values = tensor
            .annotation_columns()
            .get(column)
            .and_then(|array| array.as_primitive_opt::<Float64Type>())
            .ok_or_else(|| internal(query, "reads a value column that is not DOUBLE"))?;
        let inner = dim(inner).ok_or_else(|| internal(query, "has an operand without k"))?;
        let outer = match outer {
            Some(var) => Some(
                dim(var).ok_or_else(|| internal(query, "has an operand without its variable"))?,
            ),
            None => None,
        };
        Ok(Operand {
            outer: outer.map(|d| tensor.coords(d)),
            inner: tensor.coords(inner),
            values: values.values(),
        })
    }

    /// Whether every value is finite.
    fn is_finite(&self) -> bool {
        self.values.iter().all(|v| v.is_finite())
    }

    /// The operand as a dense row-major array of `rows × cols` cells,
    /// where an entry's row is its coordinate along `row` (its outer
    /// variable when `by_outer`, else `k`) and its column the other.
    fn scatter(&self, by_outer: bool, rows: usize, cols: usize) -> Result<Vec<f64>> {
        let mut cells = vec![0.0; rows * cols];
        for (e, &value) in self.values.iter().enumerate() {
            let outer = self.outer.map_or(0, |c| c[e]);
            let inner = self.inner[e];
            let (r, c) = if by_outer {
                (outer, inner)
            } else {
                (inner, outer)
            };
            let (Ok(r), Ok(c)) = (usize::try_from(r), usize::try_from(c)) else {
                return Err(Error::Internal(
                    "a stored coordinate is negative".to_string(),
                ));
            };
            if r >= rows || c >= cols {
                return Err(Error::Internal(format!(
                    "a stored coordinate ({r}, {c}) lies outside {rows} × {cols}"
                )));
            }
            cells[r * cols + c] = value;
        }
        Ok(cells)
    }
}

/// Runs `query` as the matrix product `product`, its operands being the
/// tensors `left` and `right` read through their annotations; returns the
/// result's entries (the caller stores them as the loops' would be), or
/// `None` when an operand holds a value that is not finite (the caller
/// runs the loops).
pub(crate) fn run(
    query: &PhysicalQuery,
    product: &Contraction,
    left: (&Tensor, Annotation),
    right: (&Tensor, Annotation),
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Finished>> {
    let a = Operand::new(
        query,
        product.left,
        left.0,
        left.1,
        product.rows,
        product.inner,
    )?;
    let b = Operand::new(
        query,
        product.right,
        right.0,
        right.1,
        product.cols,
        product.inner,
    )?;
    if !(a.is_finite() && b.is_finite()) {
        return Ok(None);
    }
    let (m, n, k) = product.shape(query);
    let too_large = || {
        Error::OutOfMemory(format!(
            "the dense product of '{}' ({m} × {k} times {k} × {n}) does not fit in memory",
            query.name
        ))
    };
    let cells = m
        .checked_mul(k)
        .zip(k.checked_mul(n))
        .zip(m.checked_mul(n))
        .and_then(|((a, b), c)| a.checked_add(b)?.checked_add(c))
        .ok_or_else(too_large)?;
    let bytes = cells.checked_mul(8).ok_or_else(too_large)?;
    let (m, n, k) = (
        size(m, too_large)?,
        size(n, too_large)?,
        size(k, too_large)?,
    );
    control.reserve(bytes)?;
    let result = multiply(query, product, (&a, &b), (m, n, k), control, options);
    control.release(bytes);
    result.map(Some)
}

/// A size as `usize`, or the error `too_large` makes.
fn size(n: u64, too_large: impl Fn() -> Error) -> Result<usize> {
    usize::try_from(n).map_err(|_| too_large())
}

/// [`run`] once its arrays are charged.
fn multiply(
    query: &PhysicalQuery,
    product: &Contraction,
    (left, right): (&Operand<'_>, &Operand<'_>),
    (m, n, k): (usize, usize, usize),
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Finished> {
    let b = right.scatter(false, k, n)?;
    control.check()?;
    let mut c = vec![0.0; m * n];
    let a = left.scatter(true, m, k)?;
    control.check()?;
    if k > 0 && n > 0 {
        within_threads(options.threads, m * n, || {
            c.par_chunks_mut(BLOCK_ROWS * n)
                .zip(a.par_chunks(BLOCK_ROWS * k))
                .for_each(|(c, a)| gemm(a, &b, c, k, n));
            Ok(())
        })?;
    }
    control.check()?;
    Ok(Finished::Float(vec![entries(query, product, &c, m, n)]))
}

/// `c = a · b` for row-major `a` (`c.len() / n` rows of `k`), `b` (`k ×
/// n`) and `c`.
fn gemm(a: &[f64], b: &[f64], c: &mut [f64], k: usize, n: usize) {
    let m = c.len() / n;
    debug_assert!(a.len() == m * k && b.len() == k * n);
    // SAFETY: `a` holds `m × k` cells, `b` `k × n` and `c` `m × n`, all
    // row-major (row stride the column count, column stride 1), so every
    // cell the kernel reads or writes lies in its slice; `c` is borrowed
    // mutably, so it aliases neither `a` nor `b`. The strides fit `isize`
    // because the slices' lengths do. `c` is overwritten (not read).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// The non-zero cells of the `m × n` product `c`, in the order of the
/// query's output indices (row-major when `m` comes first, column-major
/// when `n` does), with a scalar's one value kept even when it is 0.
pub(super) fn entries(
    query: &PhysicalQuery,
    product: &Contraction,
    c: &[f64],
    m: usize,
    n: usize,
) -> Entries<f64> {
    let mut out = Entries::new(query.output.len());
    if query.output.is_empty() {
        out.push([], c.first().copied().unwrap_or(0.0));
        return out;
    }
    let rows_first = product.rows.is_some() && query.output.first() == product.rows.as_ref();
    let (outer, inner) = if rows_first { (m, n) } else { (n, m) };
    for x in 0..outer {
        for y in 0..inner {
            let value = if rows_first {
                c[x * n + y]
            } else {
                c[y * n + x]
            };
            if value != 0.0 {
                // With one output index the other side has one cell.
                match query.output.len() {
                    1 => out.push([x as i64], value),
                    _ => out.push([x as i64, y as i64], value),
                }
            }
        }
    }
    out.increasing = true;
    out
}

fn internal(query: &PhysicalQuery, what: &str) -> Error {
    Error::Internal(format!("the dense product of '{}' {what}", query.name))
}
