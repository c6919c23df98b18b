//! CPython's `random.Random`, reproduced bit for bit (docs/snake.md §1.5).
//!
//! MT19937 with CPython's integer seeding (`init_by_array` over the 32-bit words of `|seed|`,
//! least-significant first) and the derived draws the standard library builds on `getrandbits`:
//! `_randbelow` by rejection on the top `k` bits, `randrange`, `randint`, `choice`, `shuffle`
//! and the 53-bit `random()`. The snake game uses only `choice` (food placement); the rest is
//! here so tests and stubs can share one documented generator.

/// A draw that CPython would refuse (it raises `ValueError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PyRandomError {
    /// `getrandbits(k)` with `k` beyond what this port returns in one integer.
    #[error("getrandbits({bits}) is not supported; at most 128 bits fit in one draw")]
    TooManyBits {
        /// The requested bit count.
        bits: u32,
    },
    /// `_randbelow(0)`: CPython would loop forever; callers must pass `n >= 1`.
    #[error("randbelow needs n >= 1")]
    EmptyBound,
    /// `randrange` with `step == 0`.
    #[error("randrange() step argument must not be zero")]
    ZeroStep,
    /// `randrange` over an empty range (e.g. `randrange(5, 5)`).
    #[error("empty range in randrange({start}, {stop}, {step})")]
    EmptyRange {
        /// Range start.
        start: i64,
        /// Range stop (exclusive).
        stop: i64,
        /// Range step.
        step: i64,
    },
}

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// CPython's `random.Random`: one Mersenne Twister state and the draws built on it.
#[derive(Clone)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl std::fmt::Debug for PyRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyRandom").field("index", &self.index).finish_non_exhaustive()
    }
}

impl PyRandom {
    /// `random.Random(seed)` for any integer that fits in `i128` (the sign is dropped, as in CPython).
    pub fn new(seed: i128) -> Self {
        let mut magnitude = seed.unsigned_abs();
        let mut words = Vec::with_capacity(4);
        while magnitude != 0 {
            words.push(magnitude as u32);
            magnitude >>= 32;
        }
        Self::from_magnitude_words(&words)
    }

    /// `random.Random(n)` for an arbitrary-size non-negative integer given as 32-bit words,
    /// least-significant first (high zero words are ignored; no words means 0).
    pub fn from_magnitude_words(words: &[u32]) -> Self {
        let used = words.iter().rposition(|&w| w != 0).map_or(1, |last| last + 1);
        let key: Vec<u32> = if words.is_empty() { vec![0] } else { words[..used].to_vec() };
        let mut rng = Self { mt: [0; N], index: N + 1 };
        rng.init_by_array(&key);
        rng
    }

    fn init_genrand(&mut self, seed: u32) {
        self.mt[0] = seed;
        for i in 1..N {
            let prev = self.mt[i - 1];
            self.mt[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let mut i = 1usize;
        let mut j = 0usize;
        let len = key.len().max(1);
        for _ in 0..N.max(len) {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key.get(j).copied().unwrap_or(0))
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            if j >= len {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = self.mt[i - 1];
            self.mt[i] =
                (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
        }
        self.mt[0] = 0x8000_0000;
    }

    fn twist(&mut self) {
        for k in 0..N {
            let y = (self.mt[k] & UPPER_MASK) | (self.mt[(k + 1) % N] & LOWER_MASK);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// One tempered 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// `getrandbits(k)` for `k <= 128`: 32-bit words least-significant first, the last one
    /// keeping only its top bits.
    pub fn getrandbits(&mut self, bits: u32) -> Result<u128, PyRandomError> {
        if bits > 128 {
            return Err(PyRandomError::TooManyBits { bits });
        }
        if bits <= 32 {
            if bits == 0 {
                return Ok(0);
            }
            return Ok(u128::from(self.next_u32() >> (32 - bits)));
        }
        let mut value = 0u128;
        let mut remaining = bits;
        let mut shift = 0u32;
        while remaining > 0 {
            let mut word = self.next_u32();
            if remaining < 32 {
                word >>= 32 - remaining;
            }
            value |= u128::from(word) << shift;
            shift += 32;
            remaining = remaining.saturating_sub(32);
        }
        Ok(value)
    }

    /// `_randbelow(n)`: a uniform integer in `[0, n)` by rejection on `bit_length(n)` bits.
    pub fn randbelow(&mut self, n: u64) -> Result<u64, PyRandomError> {
        if n == 0 {
            return Err(PyRandomError::EmptyBound);
        }
        let bits = 64 - n.leading_zeros();
        loop {
            // `bits <= 64`, so the draw fits in u64.
            let r = self.getrandbits(bits)? as u64;
            if r < n {
                return Ok(r);
            }
        }
    }

    /// `randrange(start, stop, step)` (use `step = 1` for the two-argument form).
    pub fn randrange(&mut self, start: i64, stop: i64, step: i64) -> Result<i64, PyRandomError> {
        let empty = PyRandomError::EmptyRange { start, stop, step };
        if step == 0 {
            return Err(PyRandomError::ZeroStep);
        }
        let width = i128::from(stop) - i128::from(start);
        let step_wide = i128::from(step);
        let n = if step > 0 {
            floor_div(width + step_wide - 1, step_wide)
        } else {
            floor_div(width + step_wide + 1, step_wide)
        };
        if n <= 0 {
            return Err(empty);
        }
        let n = u64::try_from(n).map_err(|_| empty.clone())?;
        let k = i128::from(self.randbelow(n)?);
        i64::try_from(i128::from(start) + step_wide * k).map_err(|_| empty)
    }

    /// `randint(a, b)`: a uniform integer in `[a, b]` (both ends included).
    pub fn randint(&mut self, a: i64, b: i64) -> Result<i64, PyRandomError> {
        if b == i64::MAX {
            // randrange(a, b + 1) would overflow i64; draw the offset directly.
            let span = u64::try_from(i128::from(b) - i128::from(a) + 1)
                .map_err(|_| PyRandomError::EmptyRange { start: a, stop: b, step: 1 })?;
            let k = self.randbelow(span)?;
            return Ok((i128::from(a) + i128::from(k)) as i64);
        }
        self.randrange(a, b + 1, 1)
    }

    /// `choice(seq)`: one element, or `None` for an empty slice (CPython raises `IndexError`).
    pub fn choice<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        let index = self.randbelow(items.len() as u64).ok()?;
        items.get(index as usize)
    }

    /// `shuffle(x)`: CPython's in-place Fisher–Yates, walking from the end.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            // `i + 1 >= 2`, so randbelow cannot fail.
            if let Ok(j) = self.randbelow(i as u64 + 1) {
                items.swap(i, j as usize);
            }
        }
    }

    /// `random()`: a float in `[0, 1)` with 53 random bits from two outputs.
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }
}

fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    //! Expected values were produced with CPython 3.11.7 `random.Random` in this worktree's
    //! environment, e.g. `r = random.Random(7); [r.getrandbits(32) for _ in range(3)]`.
    use super::*;

    fn first_three(rng: &mut PyRandom) -> [u32; 3] {
        [rng.next_u32(), rng.next_u32(), rng.next_u32()]
    }

    #[test]
    fn integer_seeds_match_cpython_first_outputs() {
        let cases: [(i128, [u32; 3]); 5] = [
            (0, [3626764237, 1654615998, 3255389356]),
            (7, [1390851128, 4071050724, 647892279]),
            (101, [2496029389, 3638342495, 836464178]),
            (1 << 32, [485306839, 1508871100, 1794561286]),
            ((1 << 64) + 5, [2192917427, 3085273184, 3778534651]),
        ];
        for (seed, expected) in cases {
            assert_eq!(first_three(&mut PyRandom::new(seed)), expected, "seed {seed}");
        }
    }

    #[test]
    fn negative_seed_uses_its_absolute_value() {
        assert_eq!(first_three(&mut PyRandom::new(-7)), [1390851128, 4071050724, 647892279]);
    }

    #[test]
    fn big_integer_seed_from_words_matches_cpython() {
        // 12345678901234567890123 = 0x29D_42B64E76_714AD0CB (little-endian 32-bit words).
        let seed: u128 = 12345678901234567890123;
        let words = [seed as u32, (seed >> 32) as u32, (seed >> 64) as u32];
        let expected = [678764485, 4198308164, 4236283067];
        assert_eq!(first_three(&mut PyRandom::from_magnitude_words(&words)), expected);
        assert_eq!(first_three(&mut PyRandom::new(seed as i128)), expected);
        // High zero words and the empty key are ignored like CPython does.
        assert_eq!(
            first_three(&mut PyRandom::from_magnitude_words(&[7, 0, 0])),
            first_three(&mut PyRandom::new(7))
        );
        assert_eq!(first_three(&mut PyRandom::from_magnitude_words(&[])), first_three(&mut PyRandom::new(0)));
    }

    #[test]
    fn random_float_matches_cpython() {
        let mut rng = PyRandom::new(42);
        assert_eq!(rng.random(), 0.6394267984578837);
        assert_eq!(rng.random(), 0.025010755222666936);
        assert_eq!(rng.random(), 0.27502931836911926);
    }

    #[test]
    fn getrandbits_matches_cpython_for_small_and_wide_counts() {
        let mut rng = PyRandom::new(42);
        let got: Vec<u128> =
            [0, 1, 5, 31, 32, 33, 64, 65, 100].iter().map(|&k| rng.getrandbits(k).unwrap()).collect();
        assert_eq!(
            got,
            vec![
                0,
                1,
                3,
                53710184,
                3184935163,
                1181241943,
                2574020394472462046,
                20337446297558147241,
                122436551213992682217031886515,
            ]
        );
        assert_eq!(rng.getrandbits(129), Err(PyRandomError::TooManyBits { bits: 129 }));
    }

    #[test]
    fn randbelow_rejects_on_top_bits_like_cpython() {
        let mut rng = PyRandom::new(9);
        let got: Vec<u64> = [1, 2, 3, 7, 100, 378, 1000, (1 << 31) + 1, (1 << 40) + 3]
            .iter()
            .map(|&n| rng.randbelow(n).unwrap())
            .collect();
        assert_eq!(got, vec![0, 1, 1, 1, 23, 346, 6, 1453097014, 1020066681734]);
        assert_eq!(rng.randbelow(0), Err(PyRandomError::EmptyBound));
    }

    #[test]
    fn randrange_and_randint_match_cpython() {
        let mut rng = PyRandom::new(3);
        assert_eq!(rng.randrange(0, 10, 1), Ok(3));
        assert_eq!(rng.randrange(-5, 5, 1), Ok(4));
        assert_eq!(rng.randrange(0, 100, 7), Ok(56));
        assert_eq!(rng.randrange(10, -10, -3), Ok(7));
        assert_eq!(rng.randint(1, 6), Ok(3));
        assert_eq!(rng.randint(-3, 3), Ok(1));
    }

    #[test]
    fn randrange_rejects_empty_ranges_and_zero_step() {
        let mut rng = PyRandom::new(3);
        assert_eq!(rng.randrange(0, 10, 0), Err(PyRandomError::ZeroStep));
        assert!(matches!(rng.randrange(5, 5, 1), Err(PyRandomError::EmptyRange { .. })));
        assert!(matches!(rng.randrange(0, 10, -1), Err(PyRandomError::EmptyRange { .. })));
        assert!(rng.randint(i64::MAX - 1, i64::MAX).is_ok());
    }

    #[test]
    fn shuffle_then_choice_match_cpython() {
        let mut rng = PyRandom::new(5);
        let mut items: Vec<u32> = (0..10).collect();
        rng.shuffle(&mut items);
        assert_eq!(items, vec![2, 3, 1, 0, 8, 7, 6, 5, 4, 9]);
        let letters: Vec<char> = "abcdefg".chars().collect();
        assert_eq!(rng.choice(&letters), Some(&'f'));
        let empty: [u8; 0] = [];
        assert_eq!(rng.choice(&empty), None);
    }
}
