//! Streaming, parallel line parsing shared by the text formats.
//!
//! The Matrix Market and FROSTT `.tns` readers read their file through a
//! [`TextReader`]: header lines one at a time ([`TextReader::next_line`]),
//! then the body in blocks of whole lines that are cut into pieces of about
//! a megabyte and parsed on the rayon pool ([`TextReader::parse_pieces`]).
//! Only one block is in memory at a time, so memory follows the tensor being
//! built, not the size of the file. Every piece knows the number of its
//! first line, and a [`Cursor`] walks a piece field by field while counting
//! lines, so errors name the exact line. The module also holds the byte-level
//! number parsers, the second pass that names the line of a duplicate entry,
//! and what the writers share: checking the dimensions, picking the one
//! value column and formatting values exactly.

use std::fmt::Write as _;
use std::fs::File;
use std::hash::Hash;
use std::io::{ErrorKind, Read};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use arrow::array::{Array, BooleanArray, Float64Array, Int64Array};
use hashbrown::HashMap;
use hashbrown::hash_map::Entry;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::io::progress_label;
use crate::progress::ProgressSink;
use crate::storage::{ColumnRef, Tensor, ValueType};

/// Bytes read per block; no line may be longer than this.
const BLOCK_BYTES: usize = 8 << 20;
/// Target size of the pieces a block is cut into for parallel parsing (and
/// the granularity of progress reports).
const PIECE_BYTES: usize = 1 << 20;

/// Reads a text file line by line or block by block; see the module
/// documentation. Reports progress to its sink and finishes the report when
/// dropped.
pub(crate) struct TextReader<'a> {
    path: PathBuf,
    file: File,
    buffer: Vec<u8>,
    /// First unconsumed byte of `buffer`.
    start: usize,
    /// End of the valid bytes of `buffer`.
    end: usize,
    /// Number of the line that starts at `start`.
    line: u64,
    eof: bool,
    /// Bytes consumed by `next_line` and not yet reported.
    unreported: u64,
    progress: &'a dyn ProgressSink,
}

impl<'a> TextReader<'a> {
    /// Opens `path` and starts a progress report labelled with its name.
    pub(crate) fn open(path: &Path, progress: &'a dyn ProgressSink) -> Result<TextReader<'a>> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
        progress.start(&progress_label(path), size);
        Ok(TextReader {
            path: path.to_path_buf(),
            file,
            buffer: vec![0; BLOCK_BYTES],
            start: 0,
            end: 0,
            line: 1,
            eof: false,
            unreported: 0,
            progress,
        })
    }

    /// The file being read.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The number of the last line read (at least 1): where errors about
    /// the end of the file point.
    pub(crate) fn last_line(&self) -> u64 {
        self.line.saturating_sub(1).max(1)
    }

    /// Moves the unconsumed bytes to the front of the buffer and fills the
    /// rest from the file.
    fn fill(&mut self) -> Result<()> {
        self.buffer.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        while !self.eof && self.end < self.buffer.len() {
            match self.file.read(&mut self.buffer[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
        Ok(())
    }

    fn line_too_long(&self) -> Error {
        Error::file_format(
            &self.path,
            self.line,
            format!(
                "line is longer than {} MiB; this does not look like a text tensor file",
                BLOCK_BYTES >> 20
            ),
        )
    }

    /// The next line (without its line break) and its number, or `None` at
    /// the end of the file.
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, &[u8])>> {
        loop {
            let pending = &self.buffer[self.start..self.end];
            let found = pending.iter().position(|&b| b == b'\n');
            if found.is_some() || (self.eof && !pending.is_empty()) {
                let length = found.unwrap_or(pending.len());
                let consumed = found.map_or(length, |k| k + 1);
                let number = self.line;
                let begin = self.start;
                self.start += consumed;
                self.line += 1;
                self.unreported += consumed as u64;
                return Ok(Some((number, trim_cr(&self.buffer[begin..begin + length]))));
            }
            if self.eof {
                return Ok(None);
            }
            if self.start == 0 && self.end == self.buffer.len() {
                return Err(self.line_too_long());
            }
            self.fill()?;
        }
    }

    /// Parses the rest of the file in parallel: each piece of whole lines is
    /// given to `parse` (as a [`Cursor`] that knows its line numbers), and
    /// the results are handed to `consume` in file order. The first error in
    /// file order wins. `consume` may stop the reading early.
    pub(crate) fn parse_pieces<T: Send>(
        &mut self,
        parse: impl Fn(Cursor<'_>) -> Result<T> + Sync,
        mut consume: impl FnMut(T) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        self.progress.advance(std::mem::take(&mut self.unreported));
        loop {
            crate::progress::check_cancelled(self.progress)?;
            if !self.eof {
                self.fill()?;
            }
            let pending = &self.buffer[self.start..self.end];
            if pending.is_empty() {
                return Ok(());
            }
            let length = if self.eof {
                pending.len()
            } else {
                match pending.iter().rposition(|&b| b == b'\n') {
                    Some(k) => k + 1,
                    None => return Err(self.line_too_long()),
                }
            };
            let block = &pending[..length];
            let (pieces, next_line) = split_pieces(block, self.line);
            let progress = self.progress;
            let results: Vec<Result<T>> = pieces
                .par_iter()
                .map(|&(first_line, bytes)| {
                    let result = parse(Cursor::new(bytes, first_line));
                    progress.advance(bytes.len() as u64);
                    result
                })
                .collect();
            let unterminated = u64::from(block.last() != Some(&b'\n'));
            self.line = next_line + unterminated;
            self.start += length;
            for result in results {
                if consume(result?)?.is_break() {
                    return Ok(());
                }
            }
        }
    }
}

impl Drop for TextReader<'_> {
    fn drop(&mut self) {
        self.progress.advance(self.unreported);
        self.progress.finish();
    }
}

/// Cuts `block` (whole lines) into pieces of about [`PIECE_BYTES`] that
/// end at line breaks, each with the number of its first line; also
/// returns the number of the line after the last line break.
fn split_pieces(block: &[u8], first_line: u64) -> (Vec<(u64, &[u8])>, u64) {
    let mut pieces = Vec::with_capacity(block.len() / PIECE_BYTES + 1);
    let mut begin = 0;
    let mut line = first_line;
    while begin < block.len() {
        let target = (begin + PIECE_BYTES).min(block.len());
        let end = match block[target..].iter().position(|&b| b == b'\n') {
            Some(k) => target + k + 1,
            None => block.len(),
        };
        let piece = &block[begin..end];
        pieces.push((line, piece));
        line += count_newlines(piece) as u64;
        begin = end;
    }
    (pieces, line)
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Whitespace between fields: anything ASCII-blank except the line break.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

/// Walks a piece of text line by line and field by field, counting lines.
#[derive(Clone)]
pub(crate) struct Cursor<'b> {
    bytes: &'b [u8],
    pos: usize,
    line: u64,
    /// Whether `pos` is inside a line that `next_line` must skip first.
    in_line: bool,
}

impl<'b> Cursor<'b> {
    /// A cursor at the start of `bytes`, whose first line is `first_line`.
    pub(crate) fn new(bytes: &'b [u8], first_line: u64) -> Self {
        Cursor {
            bytes,
            pos: 0,
            line: first_line,
            in_line: false,
        }
    }

    /// The number of the current line.
    pub(crate) fn line(&self) -> u64 {
        self.line
    }

    /// Moves to the next line that has content, skipping blank lines and
    /// lines whose first non-blank byte is `comment`. Returns `false` at the
    /// end of the text.
    pub(crate) fn next_line(&mut self, comment: u8) -> bool {
        loop {
            if self.in_line {
                match self.bytes[self.pos..].iter().position(|&b| b == b'\n') {
                    Some(k) => {
                        self.pos += k + 1;
                        self.line += 1;
                    }
                    None => self.pos = self.bytes.len(),
                }
                self.in_line = false;
            }
            while self.pos < self.bytes.len() && is_blank(self.bytes[self.pos]) {
                self.pos += 1;
            }
            match self.bytes.get(self.pos) {
                None => return false,
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                }
                Some(&b) => {
                    self.in_line = true;
                    if b != comment {
                        return true;
                    }
                }
            }
        }
    }

    /// The next field of the current line, or `None` at its end.
    pub(crate) fn field(&mut self) -> Option<&'b [u8]> {
        let bytes = self.bytes;
        while self.pos < bytes.len() && is_blank(bytes[self.pos]) {
            self.pos += 1;
        }
        let begin = self.pos;
        while self.pos < bytes.len() && !is_blank(bytes[self.pos]) && bytes[self.pos] != b'\n' {
            self.pos += 1;
        }
        (self.pos > begin).then(|| &bytes[begin..self.pos])
    }

    /// The number of fields left on the current line (consuming them).
    pub(crate) fn remaining_fields(&mut self) -> usize {
        std::iter::from_fn(|| self.field()).count()
    }
}

/// Why a field is not a valid integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntError {
    /// Not an optionally signed run of decimal digits.
    Syntax,
    /// Digits, but outside the range of the target type.
    Overflow,
}

/// Parses an unsigned decimal integer (an optional `+`, then digits).
pub(crate) fn parse_u64(field: &[u8]) -> Result<u64, IntError> {
    let digits = field.strip_prefix(b"+").unwrap_or(field);
    if digits.is_empty() {
        return Err(IntError::Syntax);
    }
    let mut value: u64 = 0;
    let mut overflow = false;
    for &b in digits {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return Err(IntError::Syntax);
        }
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit)))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
    }
    if overflow {
        Err(IntError::Overflow)
    } else {
        Ok(value)
    }
}

/// Parses a signed decimal integer that must fit in an `i64`.
pub(crate) fn parse_i64(field: &[u8]) -> Result<i64, IntError> {
    match field.split_first() {
        Some((b'-', digits)) if !digits.starts_with(b"+") => {
            let magnitude = parse_u64(digits)?;
            0i64.checked_sub_unsigned(magnitude)
                .ok_or(IntError::Overflow)
        }
        _ => i64::try_from(parse_u64(field)?).map_err(|_| IntError::Overflow),
    }
}

/// Parses a decimal floating-point number (also `inf`, `-inf`, `nan`).
pub(crate) fn parse_f64(field: &[u8]) -> Option<f64> {
    short_decimal(field).or_else(|| std::str::from_utf8(field).ok()?.parse().ok())
}

/// Exact powers of ten up to 10^15.
const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The fast path for the common case, a plain decimal (`-12.5`, `.25`)
/// with at most 15 digits: the digits form an integer below 2^53 and the
/// divisor a power of ten that is exact in a double, so one correctly
/// rounded division gives the correctly rounded value. `None` for
/// anything else, which the general parser handles.
fn short_decimal(field: &[u8]) -> Option<f64> {
    let (negative, body) = match field.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, field),
    };
    let mut mantissa: u64 = 0;
    let mut digits = 0;
    let mut fraction_digits = 0;
    let mut seen_point = false;
    for &b in body {
        match b {
            b'0'..=b'9' => {
                digits += 1;
                if digits > 15 {
                    return None;
                }
                mantissa = mantissa * 10 + u64::from(b - b'0');
                fraction_digits += usize::from(seen_point);
            }
            b'.' if !seen_point => seen_point = true,
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    let magnitude = mantissa as f64 / POWERS_OF_TEN[fraction_digits];
    Some(if negative { -magnitude } else { magnitude })
}

/// A field quoted for an error message: lossy UTF-8, cut to 40 characters.
pub(crate) fn show(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    let mut shown: String = text.chars().take(40).collect();
    if text.chars().nth(40).is_some() {
        shown.push_str("...");
    }
    format!("'{shown}'")
}

/// Appends `value` in the shortest form that reads back to the same float,
/// always with a decimal point, an exponent, `inf` or `nan` so that readers
/// see a float rather than an integer.
pub(crate) fn push_f64(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("nan");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "inf" } else { "-inf" });
    } else {
        // `Debug` is the shortest round-trip form and always marks floats.
        let _ = write!(out, "{value:?}");
    }
}

/// The dimensions of `tensor` in the order users see them, checked to be
/// integer coordinates that a text file (`format`) can hold.
pub(crate) fn integer_keys(tensor: &Tensor, format: &str) -> Result<Vec<usize>> {
    let keys: Vec<usize> = tensor
        .column_order()
        .iter()
        .filter_map(|c| match *c {
            ColumnRef::Key(d) => Some(d),
            ColumnRef::Value(_) => None,
        })
        .collect();
    if let Some(&d) = keys
        .iter()
        .find(|&&d| tensor.dims()[d].dictionary.is_some())
    {
        return Err(Error::NotSupported(format!(
            "dimension '{}' holds strings, which {format} files cannot store; write the table \
             as Parquet or CSV instead",
            tensor.dims()[d].name
        )));
    }
    Ok(keys)
}

/// The annotation of every entry of a tensor, as the text writers emit it.
pub(crate) enum Annotation<'t> {
    Real(&'t [f64]),
    Integer(&'t [i64]),
    Boolean(&'t BooleanArray),
    /// The multiplicities of a bag.
    Multiplicity(&'t [i64]),
}

impl<'t> Annotation<'t> {
    /// The single annotation of `tensor`; several value columns are an
    /// error, since `format` files hold one value per entry.
    pub(crate) fn of(tensor: &'t Tensor, format: &str) -> Result<Annotation<'t>> {
        if let Some(counts) = tensor.multiplicities() {
            return Ok(Annotation::Multiplicity(counts));
        }
        let [column] = tensor.values() else {
            return Err(Error::NotSupported(format!(
                "{format} files hold one value per entry, but this table has {} value columns; \
                 write it as Parquet or CSV instead",
                tensor.values().len()
            )));
        };
        let any = tensor.annotation_columns()[0].as_any();
        let annotation = match column.ty {
            ValueType::Float64 => any
                .downcast_ref::<Float64Array>()
                .map(|a| Annotation::Real(a.values())),
            ValueType::Int64 => any
                .downcast_ref::<Int64Array>()
                .map(|a| Annotation::Integer(a.values())),
            ValueType::Boolean => any.downcast_ref::<BooleanArray>().map(Annotation::Boolean),
            ValueType::Int128 => {
                return Err(Error::NotSupported(format!(
                    "writing the HUGEINT column '{}' as {format} (its readers take 64-bit \
                     integers); write it as Parquet or CSV instead",
                    column.name
                )));
            }
        };
        annotation.ok_or_else(|| {
            Error::Type(format!(
                "value column '{}' is not stored as {}",
                column.name,
                column.ty.sql_name()
            ))
        })
    }

    /// Appends a space and the value of entry `k` (booleans as 0 or 1).
    pub(crate) fn push(&self, out: &mut String, k: usize) {
        out.push(' ');
        match self {
            Annotation::Real(v) => push_f64(out, v[k]),
            Annotation::Integer(v) | Annotation::Multiplicity(v) => {
                let _ = write!(out, "{}", v[k]);
            }
            Annotation::Boolean(v) => out.push(if v.value(k) { '1' } else { '0' }),
        }
    }
}

/// The error for the first entry (in file order) whose key repeats an
/// earlier entry's, found by a second pass over the file: `keyed` yields
/// every entry's key and line, and `show` writes a key as the file does
/// (e.g. `3, 4`). The second pass read `found` entries where the first read
/// `expected`; a different count, or no repeated key, means that the file
/// changed in between, and that error is returned instead.
pub(crate) fn find_duplicate<K: Eq + Hash>(
    path: &Path,
    found: usize,
    expected: usize,
    keyed: impl IntoIterator<Item = (K, u64)>,
    show: impl Fn(&K) -> String,
) -> Result<Error> {
    if found != expected {
        return Err(changed_while_reading(path));
    }
    let mut seen: HashMap<K, u64> = HashMap::with_capacity(expected);
    for (key, line) in keyed {
        match seen.entry(key) {
            Entry::Occupied(first) => {
                return Ok(Error::file_format(
                    path,
                    line,
                    format!(
                        "duplicate entry ({}): line {} has the same coordinates",
                        show(first.key()),
                        first.get()
                    ),
                ));
            }
            Entry::Vacant(slot) => {
                slot.insert(line);
            }
        }
    }
    Err(changed_while_reading(path))
}

/// The error for a file whose second reading disagrees with the first.
pub(crate) fn changed_while_reading(path: &Path) -> Error {
    Error::Invalid(format!(
        "'{}' changed while it was being read",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_integers_with_overflow_detection() {
        assert_eq!(parse_u64(b"12345"), Ok(12345));
        assert_eq!(parse_u64(b"+7"), Ok(7));
        assert_eq!(parse_u64(b""), Err(IntError::Syntax));
        assert_eq!(parse_u64(b"1x"), Err(IntError::Syntax));
        assert_eq!(parse_u64(b"18446744073709551616"), Err(IntError::Overflow));
        assert_eq!(parse_i64(b"-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), Err(IntError::Overflow));
        assert_eq!(parse_i64(b"-"), Err(IntError::Syntax));
        assert_eq!(parse_i64(b"-+1"), Err(IntError::Syntax));
        assert_eq!(parse_i64(b"1.5"), Err(IntError::Syntax));
    }

    #[test]
    fn cursor_skips_blank_and_comment_lines_and_counts_lines() {
        let text = b"% c\n\n  1 2  3\r\n\t% c\n4\t5 6";
        let mut cursor = Cursor::new(text, 10);
        assert!(cursor.next_line(b'%'));
        assert_eq!(cursor.line(), 12);
        assert_eq!(cursor.field(), Some(&b"1"[..]));
        assert_eq!(cursor.remaining_fields(), 2);
        assert!(cursor.next_line(b'%'));
        assert_eq!(cursor.line(), 14);
        assert_eq!(cursor.field(), Some(&b"4"[..]));
        assert!(!cursor.next_line(b'%'));
    }

    #[test]
    fn pieces_end_at_line_breaks_and_know_their_lines() {
        let line = b"1 2 3.5\n";
        let block: Vec<u8> = line
            .iter()
            .copied()
            .cycle()
            .take(line.len() * 300_000)
            .collect();
        let (pieces, next_line) = split_pieces(&block, 5);
        assert!(pieces.len() > 1);
        assert_eq!(next_line, 300_005);
        let mut expected = 5;
        for (first, bytes) in pieces {
            assert_eq!(first, expected);
            assert_eq!(bytes.last(), Some(&b'\n'));
            expected += count_newlines(bytes) as u64;
        }
        assert_eq!(expected, 300_005);
    }

    #[test]
    fn floats_are_formatted_to_round_trip() {
        for value in [0.1, 1.0, -0.0, 1e300, 5e-324, 123456.789, f64::MAX] {
            let mut out = String::new();
            push_f64(&mut out, value);
            assert!(out.contains(['.', 'e']), "{out}");
            assert_eq!(
                parse_f64(out.as_bytes()).map(f64::to_bits),
                Some(value.to_bits())
            );
        }
        let mut out = String::new();
        push_f64(&mut out, f64::NEG_INFINITY);
        assert_eq!(out, "-inf");
    }

    #[test]
    fn short_decimals_parse_like_the_standard_parser() {
        let cases = [
            "0",
            "-0",
            "1",
            "+7",
            ".5",
            "5.",
            "-.2788416",
            "0.0625",
            "123456789012345",
            "0.00000000000001",
            "9.99999999999999",
            "-1234.5678",
            "0.1",
            "0.3",
            "2.675",
        ];
        for case in cases {
            let expected: f64 = case.parse().expect("valid");
            let fast = short_decimal(case.as_bytes()).expect("short decimal");
            assert_eq!(fast.to_bits(), expected.to_bits(), "{case}");
        }
        for case in [
            "1e5",
            "1234567890123456",
            ".",
            "-",
            "1.2.3",
            "inf",
            "0x10",
            "",
        ] {
            assert_eq!(short_decimal(case.as_bytes()), None, "{case}");
        }
        assert_eq!(parse_f64(b"1e5"), Some(1e5));
        assert_eq!(parse_f64(b"1.2.3"), None);
    }
}
