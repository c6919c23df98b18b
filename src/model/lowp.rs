//! Low-precision weight storage: 16-bit floats (FP16, BF16) and palettized (LUT) matrices.
//!
//! These are the payloads of [`Matrix::F16`](super::weights::Matrix::F16),
//! [`Matrix::BF16`](super::weights::Matrix::BF16) and
//! [`Matrix::Palettized`](super::weights::Matrix::Palettized). Every one decodes to f32 rows
//! ([`DenseHalf::decode_rows`], [`Palettized::decode_rows`]); engines decode panels of rows into
//! an f32 tile and multiply in f32, or use a kernel that reads the stored form directly.

/// Which 16-bit float format a [`DenseHalf`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfKind {
    /// IEEE 754 binary16 (1 sign, 5 exponent, 10 mantissa bits).
    F16,
    /// bfloat16 (the top 16 bits of an f32: 8 exponent, 7 mantissa bits).
    BF16,
}

impl HalfKind {
    /// Round an f32 to this format (round to nearest even), as raw bits.
    pub fn encode(self, x: f32) -> u16 {
        match self {
            HalfKind::F16 => half::f16::from_f32(x).to_bits(),
            HalfKind::BF16 => half::bf16::from_f32(x).to_bits(),
        }
    }
    /// The f32 value of raw bits in this format (exact).
    pub fn decode(self, bits: u16) -> f32 {
        match self {
            HalfKind::F16 => half::f16::from_bits(bits).to_f32(),
            HalfKind::BF16 => f32::from_bits((bits as u32) << 16),
        }
    }
    /// Decode a run of raw values into `out` (the shorter length of the two).
    pub fn decode_slice(self, bits: &[u16], out: &mut [f32]) {
        let n = bits.len().min(out.len());
        let (bits, out) = (&bits[..n], &mut out[..n]);
        match self {
            HalfKind::F16 => {
                use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
                // a zero-copy safe cast; `half` converts with F16C when the CPU has it
                let h: &[half::f16] = bits.reinterpret_cast();
                h.convert_to_f32_slice(out);
            }
            HalfKind::BF16 => {
                for (o, &b) in out.iter_mut().zip(bits) {
                    *o = f32::from_bits((b as u32) << 16);
                }
            }
        }
    }
}

/// Storage order of a [`DenseHalf`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfOrder {
    /// `[rows, cols]` row-major: `(r, c)` at `r·cols + c` (a Linear's `[out, in]`).
    RowMajor,
    /// The operand order of a pair-dot kernel (`vdpbf16ps`): rows in panels of 16 (the last one
    /// zero-padded), columns in pairs; `(r, c)` at `(r/16)·16·cp + (c/2)·32 + (r%16)·2 + c%2`
    /// with `cp` = `cols` rounded up to even (an odd last column is padded with zero).
    Pairs16,
}

/// Rows per panel of [`HalfOrder::Pairs16`].
pub const PANEL_ROWS: usize = 16;

/// A dense matrix of 16-bit floats (FP16 or BF16 bits; the format is the [`Matrix`] variant
/// that holds it).
///
/// [`Matrix`]: super::weights::Matrix
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenseHalf {
    rows: usize,
    cols: usize,
    order: HalfOrder,
    data: Vec<u16>,
}

impl DenseHalf {
    /// Round row-major f32 values to `kind`; `None` if `data.len() != rows * cols`.
    pub fn from_f32(rows: usize, cols: usize, data: &[f32], kind: HalfKind) -> Option<Self> {
        if data.len() != rows.checked_mul(cols)? {
            return None;
        }
        Some(Self {
            rows,
            cols,
            order: HalfOrder::RowMajor,
            data: data.iter().map(|&x| kind.encode(x)).collect(),
        })
    }
    /// Wrap row-major raw bits; `None` if `data.len() != rows * cols`.
    pub fn from_bits_row_major(rows: usize, cols: usize, data: Vec<u16>) -> Option<Self> {
        (Some(data.len()) == rows.checked_mul(cols)).then_some(Self {
            rows,
            cols,
            order: HalfOrder::RowMajor,
            data,
        })
    }
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Storage order of [`Self::data`].
    pub fn order(&self) -> HalfOrder {
        self.order
    }
    /// Raw bits in [`Self::order`] (including the zero padding of [`HalfOrder::Pairs16`]).
    pub fn data(&self) -> &[u16] {
        &self.data
    }
    /// Columns rounded up to even (the pair count × 2 of [`HalfOrder::Pairs16`]).
    pub fn cols_even(&self) -> usize {
        self.cols.next_multiple_of(2)
    }
    /// Index of `(r, c)` in [`Self::data`] (caller checks the range).
    fn index(&self, r: usize, c: usize) -> usize {
        match self.order {
            HalfOrder::RowMajor => r * self.cols + c,
            HalfOrder::Pairs16 => {
                (r / PANEL_ROWS) * PANEL_ROWS * self.cols_even() + (c / 2) * 32 + (r % PANEL_ROWS) * 2 + c % 2
            }
        }
    }
    /// Raw bits of element `(r, c)`; `None` outside the matrix.
    pub fn get_bits(&self, r: usize, c: usize) -> Option<u16> {
        (r < self.rows && c < self.cols).then(|| self.data[self.index(r, c)])
    }
    /// Same matrix stored in `order`.
    pub fn into_order(mut self, order: HalfOrder) -> Self {
        self.set_order(order);
        self
    }
    /// Change the storage order in place.
    pub fn set_order(&mut self, order: HalfOrder) {
        if order == self.order {
            return;
        }
        let (rows, cols) = (self.rows, self.cols);
        let target = DenseHalf { rows, cols, order, data: Vec::new() };
        let len = match order {
            HalfOrder::RowMajor => rows * cols,
            HalfOrder::Pairs16 => rows.next_multiple_of(PANEL_ROWS) * self.cols_even(),
        };
        let mut data = vec![0u16; len];
        for r in 0..rows {
            for c in 0..cols {
                data[target.index(r, c)] = self.data[self.index(r, c)];
            }
        }
        self.data = data;
        self.order = order;
    }
    /// Decode rows `[r0, r1)` as row-major f32 into `out` (`(r1 − r0)·cols` values); false if
    /// the range or the length does not fit.
    pub fn decode_rows(&self, kind: HalfKind, r0: usize, r1: usize, out: &mut [f32]) -> bool {
        let c = self.cols;
        if r0 > r1 || r1 > self.rows || out.len() != (r1 - r0) * c {
            return false;
        }
        match self.order {
            HalfOrder::RowMajor => kind.decode_slice(&self.data[r0 * c..r1 * c], out),
            HalfOrder::Pairs16 => {
                for (i, row) in out.chunks_exact_mut(c.max(1)).enumerate() {
                    let r = r0 + i;
                    let base = (r / PANEL_ROWS) * PANEL_ROWS * self.cols_even() + (r % PANEL_ROWS) * 2;
                    for (j, o) in row.iter_mut().enumerate() {
                        *o = kind.decode(self.data[base + (j / 2) * 32 + j % 2]);
                    }
                }
            }
        }
        true
    }
    /// Decode columns `[c0, c1)` of row `r` into `out` (`c1 − c0` values); false if out of range.
    pub fn decode_row_segment(
        &self,
        kind: HalfKind,
        r: usize,
        c0: usize,
        c1: usize,
        out: &mut [f32],
    ) -> bool {
        if r >= self.rows || c0 > c1 || c1 > self.cols || out.len() != c1 - c0 {
            return false;
        }
        match self.order {
            HalfOrder::RowMajor => kind.decode_slice(&self.data[r * self.cols + c0..r * self.cols + c1], out),
            HalfOrder::Pairs16 => {
                for (j, o) in out.iter_mut().enumerate() {
                    *o = kind.decode(self.data[self.index(r, c0 + j)]);
                }
            }
        }
        true
    }
}

/// A palettized (LUT-compressed) matrix: every group of `group_size` consecutive rows (output
/// channels) has a table of `2^bits` f32 centroids, and every element is stored as a `bits`-wide
/// index into its group's table.
///
/// Indices are packed per row, least significant bits first (index `c` of a row occupies bits
/// `[c·bits, (c+1)·bits)` of the row's little-endian bit stream); each row starts on a byte
/// boundary and takes [`Palettized::row_bytes`] bytes: one byte per index at 8 bits, two
/// indices per byte at 4 bits (low nibble first), four per three bytes at 6 bits. That is
/// [`PaletteOrder::RowMajor`], the order of palette files; an engine may switch 8-bit
/// palettes to [`PaletteOrder::Panels16`].
#[derive(Debug, Clone, PartialEq)]
pub struct Palettized {
    rows: usize,
    cols: usize,
    bits: u8,
    group_size: usize,
    order: PaletteOrder,
    lut: Vec<f32>,
    indices: Vec<u8>,
}

/// Order of the indices of a [`Palettized`] matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaletteOrder {
    /// Packed rows (see [`Palettized`]).
    RowMajor,
    /// 8-bit only: rows in panels of 16 (the last zero-padded), column-major inside a panel —
    /// `(r, c)` at `(r/16)·16·cols + c·16 + r%16` — so 16 output channels of one input column
    /// are 16 consecutive bytes (the order of a SIMD table-lookup decoder).
    Panels16,
}

/// Why a palettized matrix cannot be assembled from its parts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaletteShapeError {
    /// Bits outside 1..=8.
    #[error("palette index width {0} bits is outside 1..=8")]
    Bits(u8),
    /// Zero rows per group.
    #[error("palette group size must be at least 1 row")]
    GroupSize,
    /// Table or index payload of the wrong size.
    #[error("palette {what} has {found} values, expected {expected}")]
    Length {
        /// `lut` or `indices`.
        what: &'static str,
        /// Expected count.
        expected: usize,
        /// Count given.
        found: usize,
    },
    /// A table entry is NaN or infinite.
    #[error("palette table entry {0} is not finite")]
    NonFinite(usize),
}

impl Palettized {
    /// Bytes one packed row of `cols` indices of `bits` bits takes.
    pub fn row_bytes_for(cols: usize, bits: u8) -> usize {
        (cols * bits as usize).div_ceil(8)
    }
    /// Groups of `group_size` rows covering `rows` rows (the last may be short).
    pub fn groups_for(rows: usize, group_size: usize) -> usize {
        rows.div_ceil(group_size.max(1))
    }
    /// Assemble from a table (`groups × 2^bits` f32, group-major) and packed indices
    /// (`rows × row_bytes`), checking every size. Indices need no range check: `bits`-wide
    /// fields cannot leave a `2^bits` table.
    pub fn from_parts(
        rows: usize,
        cols: usize,
        bits: u8,
        group_size: usize,
        lut: Vec<f32>,
        indices: Vec<u8>,
    ) -> Result<Self, PaletteShapeError> {
        if !(1..=8).contains(&bits) {
            return Err(PaletteShapeError::Bits(bits));
        }
        if group_size == 0 {
            return Err(PaletteShapeError::GroupSize);
        }
        let want_lut = Self::groups_for(rows, group_size) << bits;
        if lut.len() != want_lut {
            return Err(PaletteShapeError::Length { what: "lut", expected: want_lut, found: lut.len() });
        }
        let want_idx = rows * Self::row_bytes_for(cols, bits);
        if indices.len() != want_idx {
            return Err(PaletteShapeError::Length {
                what: "indices",
                expected: want_idx,
                found: indices.len(),
            });
        }
        if let Some(i) = lut.iter().position(|x| !x.is_finite()) {
            return Err(PaletteShapeError::NonFinite(i));
        }
        Ok(Self { rows, cols, bits, group_size, order: PaletteOrder::RowMajor, lut, indices })
    }
    /// Order of [`Self::indices`].
    pub fn order(&self) -> PaletteOrder {
        self.order
    }
    /// Change the index order in place; false (and unchanged) for [`PaletteOrder::Panels16`]
    /// at another width than 8 bits.
    pub fn set_order(&mut self, order: PaletteOrder) -> bool {
        if order == self.order {
            return true;
        }
        if order == PaletteOrder::Panels16 && self.bits != 8 {
            return false;
        }
        let (rows, cols) = (self.rows, self.cols);
        let mut out = match order {
            PaletteOrder::RowMajor => vec![0u8; rows * self.row_bytes()],
            PaletteOrder::Panels16 => vec![0u8; rows.next_multiple_of(PANEL_ROWS) * cols],
        };
        let mut idx = vec![0u8; cols];
        for r in 0..rows {
            for (c, v) in idx.iter_mut().enumerate() {
                *v = self.index_unchecked(r, c);
            }
            match order {
                PaletteOrder::RowMajor => {
                    let rb = self.row_bytes();
                    pack_row(&idx, self.bits, &mut out[r * rb..(r + 1) * rb]);
                }
                PaletteOrder::Panels16 => {
                    let base = (r / PANEL_ROWS) * PANEL_ROWS * cols + r % PANEL_ROWS;
                    for (c, &v) in idx.iter().enumerate() {
                        out[base + c * PANEL_ROWS] = v;
                    }
                }
            }
        }
        self.indices = out;
        self.order = order;
        true
    }
    /// Same matrix with its indices in `order` (unchanged where [`Self::set_order`] refuses).
    pub fn into_order(mut self, order: PaletteOrder) -> Self {
        self.set_order(order);
        self
    }
    /// Index of `(r, c)` (in range).
    fn index_unchecked(&self, r: usize, c: usize) -> u8 {
        match self.order {
            PaletteOrder::RowMajor => {
                let rb = self.row_bytes();
                read_index(&self.indices[r * rb..(r + 1) * rb], c, self.bits)
            }
            PaletteOrder::Panels16 => {
                self.indices[(r / PANEL_ROWS) * PANEL_ROWS * self.cols + c * PANEL_ROWS + r % PANEL_ROWS]
            }
        }
    }
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Index width in bits.
    pub fn bits(&self) -> u8 {
        self.bits
    }
    /// Rows per table.
    pub fn group_size(&self) -> usize {
        self.group_size
    }
    /// Number of tables.
    pub fn groups(&self) -> usize {
        Self::groups_for(self.rows, self.group_size)
    }
    /// All tables, group-major (`groups × 2^bits`).
    pub fn lut(&self) -> &[f32] {
        &self.lut
    }
    /// Indices in [`Self::order`]: packed rows (`rows × row_bytes`) or 16-row panels.
    pub fn indices(&self) -> &[u8] {
        &self.indices
    }
    /// Bytes of one packed row.
    pub fn row_bytes(&self) -> usize {
        Self::row_bytes_for(self.cols, self.bits)
    }
    /// Payload bytes: packed indices plus f32 tables.
    pub fn storage_bytes(&self) -> usize {
        self.indices.len() + self.lut.len() * 4
    }
    /// The table index of element `(r, c)`; `None` outside the matrix.
    pub fn index(&self, r: usize, c: usize) -> Option<u8> {
        if r >= self.rows || c >= self.cols {
            return None;
        }
        Some(self.index_unchecked(r, c))
    }
    /// Decode rows `[r0, r1)` as row-major f32 into `out` (`(r1 − r0)·cols` values); false if
    /// the range or the length does not fit.
    pub fn decode_rows(&self, r0: usize, r1: usize, out: &mut [f32]) -> bool {
        let c = self.cols;
        if r0 > r1 || r1 > self.rows || out.len() != (r1 - r0) * c {
            return false;
        }
        for (i, dst) in out.chunks_exact_mut(c.max(1)).enumerate() {
            self.decode_row_segment(r0 + i, 0, c, dst);
        }
        true
    }
    /// Decode columns `[c0, c1)` of row `r` into `out` (`c1 − c0` values); false if out of range.
    pub fn decode_row_segment(&self, r: usize, c0: usize, c1: usize, out: &mut [f32]) -> bool {
        if r >= self.rows || c0 > c1 || c1 > self.cols || out.len() != c1 - c0 {
            return false;
        }
        let k = 1usize << self.bits;
        let g = r / self.group_size;
        let lut = &self.lut[g * k..(g + 1) * k];
        if self.order == PaletteOrder::Panels16 {
            for (j, o) in out.iter_mut().enumerate() {
                *o = lut[self.index_unchecked(r, c0 + j) as usize];
            }
            return true;
        }
        let row = &self.indices[r * self.row_bytes()..(r + 1) * self.row_bytes()];
        let b = self.bits as usize;
        let aligned = (c0 * b).is_multiple_of(8) && (self.bits != 6 || c0.is_multiple_of(4));
        if aligned {
            let start = c0 * b / 8;
            let end = (c1 * b).div_ceil(8);
            decode_row(&row[start..end], self.bits, lut, out);
        } else {
            for (j, o) in out.iter_mut().enumerate() {
                *o = lut[read_index(row, c0 + j, self.bits) as usize];
            }
        }
        true
    }
}

/// Field `c` of a packed row.
fn read_index(row: &[u8], c: usize, bits: u8) -> u8 {
    let b = bits as usize;
    let bit = c * b;
    let (byte, shift) = (bit / 8, bit % 8);
    let lo = row[byte] as u16;
    let hi = row.get(byte + 1).copied().unwrap_or(0) as u16;
    (((lo | (hi << 8)) >> shift) & ((1u16 << b) - 1)) as u8
}

/// Pack `idx` (each `< 2^bits`) into one row of `row_bytes_for(idx.len(), bits)` bytes.
pub(crate) fn pack_row(idx: &[u8], bits: u8, out: &mut [u8]) {
    out.fill(0);
    match bits {
        8 => out.copy_from_slice(idx),
        4 => {
            for (o, p) in out.iter_mut().zip(idx.chunks(2)) {
                *o = p[0] | (p.get(1).copied().unwrap_or(0) << 4);
            }
        }
        _ => {
            let b = bits as usize;
            for (c, &v) in idx.iter().enumerate() {
                let bit = c * b;
                let (byte, shift) = (bit / 8, bit % 8);
                let w = (v as u16) << shift;
                out[byte] |= w as u8;
                if shift + b > 8 {
                    out[byte + 1] |= (w >> 8) as u8;
                }
            }
        }
    }
}

/// Decode one packed row through its table.
fn decode_row(src: &[u8], bits: u8, lut: &[f32], dst: &mut [f32]) {
    match bits {
        8 => {
            for (o, &i) in dst.iter_mut().zip(src) {
                *o = lut[i as usize];
            }
        }
        4 => {
            let mut pairs = dst.chunks_exact_mut(2);
            for (o, &b) in (&mut pairs).zip(src) {
                o[0] = lut[(b & 15) as usize];
                o[1] = lut[(b >> 4) as usize];
            }
            if let ([o], Some(&b)) = (pairs.into_remainder(), src.last()) {
                *o = lut[(b & 15) as usize];
            }
        }
        6 => {
            let mut quads = dst.chunks_exact_mut(4);
            let mut n = 0;
            for (o, s) in (&mut quads).zip(src.chunks_exact(3)) {
                let v = s[0] as u32 | (s[1] as u32) << 8 | (s[2] as u32) << 16;
                o[0] = lut[(v & 63) as usize];
                o[1] = lut[((v >> 6) & 63) as usize];
                o[2] = lut[((v >> 12) & 63) as usize];
                o[3] = lut[(v >> 18) as usize];
                n += 4;
            }
            for (j, o) in quads.into_remainder().iter_mut().enumerate() {
                *o = lut[read_index(src, n + j, 6) as usize];
            }
        }
        _ => {
            for (c, o) in dst.iter_mut().enumerate() {
                *o = lut[read_index(src, c, bits) as usize];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_orders_round_trip_and_decode_alike() {
        let (rows, cols) = (19, 7);
        let v: Vec<f32> = (0..rows * cols).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        for kind in [HalfKind::F16, HalfKind::BF16] {
            let h = DenseHalf::from_f32(rows, cols, &v, kind).unwrap();
            let p = h.clone().into_order(HalfOrder::Pairs16);
            assert_eq!(p.data().len(), 32 * 8);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(h.get_bits(r, c), p.get_bits(r, c));
                }
            }
            assert_eq!(p.get_bits(rows, 0), None);
            let (mut a, mut b) = (vec![0.0; 5 * cols], vec![0.0; 5 * cols]);
            assert!(h.decode_rows(kind, 14, 19, &mut a) && p.decode_rows(kind, 14, 19, &mut b));
            assert_eq!(a, b);
            for (x, y) in a.iter().zip(&v[14 * cols..]) {
                let tol = if kind == HalfKind::F16 { 1e-3 } else { 8e-3 };
                assert!((x - y).abs() <= tol * y.abs().max(1.0), "{kind:?} {x} {y}");
            }
            assert!(!h.decode_rows(kind, 18, 20, &mut a[..2 * cols]));
            assert_eq!(p.into_order(HalfOrder::RowMajor), h);
        }
    }

    #[test]
    fn pack_and_decode_every_width() {
        for bits in 1..=8u8 {
            for cols in [1usize, 3, 4, 5, 8, 13] {
                let idx: Vec<u8> = (0..cols).map(|c| ((c * 37 + 11) % (1 << bits)) as u8).collect();
                let mut row = vec![0u8; Palettized::row_bytes_for(cols, bits)];
                pack_row(&idx, bits, &mut row);
                let lut: Vec<f32> = (0..1 << bits).map(|i| i as f32 * 0.5 - 1.0).collect();
                let p = Palettized::from_parts(1, cols, bits, 4, lut.clone(), row).unwrap();
                let mut out = vec![0.0; cols];
                assert!(p.decode_rows(0, 1, &mut out));
                for c in 0..cols {
                    assert_eq!(p.index(0, c), Some(idx[c]), "bits {bits} cols {cols} c {c}");
                    assert_eq!(out[c], lut[idx[c] as usize]);
                }
            }
        }
    }

    #[test]
    fn palette_orders_round_trip() {
        let (rows, cols) = (37, 5);
        let idx: Vec<u8> = (0..rows * cols).map(|i| (i * 97 % 256) as u8).collect();
        let lut: Vec<f32> = (0..2 * 256).map(|i| i as f32).collect();
        let p = Palettized::from_parts(rows, cols, 8, 32, lut, idx).unwrap();
        let q = p.clone().into_order(PaletteOrder::Panels16);
        assert_eq!(q.order(), PaletteOrder::Panels16);
        assert_eq!(q.indices().len(), 48 * cols);
        let (mut a, mut b) = (vec![0.0; rows * cols], vec![0.0; rows * cols]);
        assert!(p.decode_rows(0, rows, &mut a) && q.decode_rows(0, rows, &mut b));
        assert_eq!(a, b);
        assert_eq!(q.index(33, 4), p.index(33, 4));
        assert_eq!(q.into_order(PaletteOrder::RowMajor), p);
        let mut four = Palettized::from_parts(2, 2, 4, 32, vec![0.0; 16], vec![0; 2]).unwrap();
        assert!(!four.set_order(PaletteOrder::Panels16));
        assert_eq!(four.order(), PaletteOrder::RowMajor);
    }

    #[test]
    fn from_parts_checks_sizes() {
        assert_eq!(Palettized::from_parts(2, 2, 9, 1, vec![], vec![]), Err(PaletteShapeError::Bits(9)));
        assert_eq!(Palettized::from_parts(2, 2, 4, 0, vec![], vec![]), Err(PaletteShapeError::GroupSize));
        let e = Palettized::from_parts(3, 4, 4, 2, vec![0.0; 16], vec![0; 6]).unwrap_err();
        assert_eq!(e, PaletteShapeError::Length { what: "lut", expected: 32, found: 16 });
        let e = Palettized::from_parts(3, 4, 4, 2, vec![0.0; 32], vec![0; 5]).unwrap_err();
        assert_eq!(e, PaletteShapeError::Length { what: "indices", expected: 6, found: 5 });
        let mut lut = vec![0.0; 32];
        lut[3] = f32::NAN;
        assert_eq!(Palettized::from_parts(3, 4, 4, 2, lut, vec![0; 6]), Err(PaletteShapeError::NonFinite(3)));
    }
}
