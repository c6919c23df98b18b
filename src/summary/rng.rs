//! A small seeded random number generator for the bootstrap: xoshiro256** seeded through
//! splitmix64 (both public-domain algorithms by Blackman and Vigna). Same seed, same stream,
//! on every platform.

use crate::model::synthetic::SplitMix64;

/// xoshiro256**: a fast 64-bit generator with a 2^256 − 1 period.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn seeded(seed: u64) -> Self {
        let mut sm = SplitMix64(seed);
        Rng { s: [sm.next(), sm.next(), sm.next(), sm.next()] }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A uniform integer in `0..n` without modulo bias (Lemire's multiply-and-reject); `n > 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_and_xoshiro_match_the_reference_vectors() {
        // splitmix64 from state 0: the first output of the reference C code.
        assert_eq!(SplitMix64(0).next(), 0xE220_A839_7B1D_CDAF);
        // xoshiro256** with state [1, 2, 3, 4]: 11520, 0, 1509978240, 1215971899390074240.
        let mut r = Rng { s: [1, 2, 3, 4] };
        let got: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert_eq!(got, vec![11520, 0, 1_509_978_240, 1_215_971_899_390_074_240]);
    }

    #[test]
    fn the_same_seed_gives_the_same_stream_and_another_seed_another() {
        let a: Vec<u64> = {
            let mut r = Rng::seeded(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let mut r = Rng::seeded(7);
        assert_eq!(a, (0..8).map(|_| r.next_u64()).collect::<Vec<_>>());
        let mut r = Rng::seeded(8);
        assert_ne!(a, (0..8).map(|_| r.next_u64()).collect::<Vec<_>>());
    }

    #[test]
    fn below_stays_in_range_and_is_roughly_uniform() {
        let mut r = Rng::seeded(1);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[r.below(3) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        assert_eq!(r.below(1), 0);
    }
}
