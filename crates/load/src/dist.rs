//! Key distributions for reads on a populated volume: which of `n` existing keys (entries
//! numbered `0..n`) a read picks next.
//!
//! [`KeyDist`] names the distribution as YCSB's `requestdistribution` does (`uniform`,
//! `zipfian`, `latest`); [`KeySampler`] draws keys from it in O(1) time and memory, with no
//! allocation per sample, for any `n` up to `u64::MAX`; [`expected_distinct`] predicts how
//! many distinct keys `m` samples reach, so a sweep's spread over the tree can be checked
//! against the distribution.
//!
//! Zipfian ranks come from [`rand_distr::Zipf`] (Hörmann and Derflinger's rejection-inversion
//! method: exact `P(rank k) = k^-θ / ζ(n, θ)`, O(1) set-up, O(1) expected work per sample),
//! not from YCSB's `ZipfianGenerator` (Gray et al.'s method), which needs ζ(n, θ) at set-up
//! and is only approximately zipfian beyond its first two ranks. The distribution is the
//! same; only the way of drawing from it differs.

use std::fmt;
use std::str::FromStr;

use rand::distr::Distribution;
use rand::{Rng, RngExt};
use rand_distr::Zipf;

/// YCSB's default zipfian constant θ (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const YCSB_THETA: f64 = 0.99;

/// Up to this many keys (or ranks) the predictions sum every term exactly; beyond it they
/// sum the first `EXACT_TERMS` exactly and approximate the rest (see [`expected_distinct`]).
pub const EXACT_TERMS: u64 = 1_000_000;

/// Width of the geometric buckets the approximate tail sums use: each bucket spans ranks
/// `[a, a·(1 + TAIL_RATIO))`.
const TAIL_RATIO: f64 = 1e-4;

/// The distribution a read's key follows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform,
    /// YCSB's `zipfian` (its `ScrambledZipfianGenerator`): rank `k` (1-based) has
    /// probability `k^-θ / ζ(n, θ)`, and the ranks are scattered over the key space by a
    /// fixed permutation, so the hot keys lie all over the tree, not in its first directory.
    Zipfian {
        /// The skew θ (> 0); YCSB's default is [`YCSB_THETA`].
        theta: f64,
    },
    /// YCSB's `latest` (its `SkewedLatestGenerator`): zipfian with θ = [`YCSB_THETA`] over
    /// recency, the most recently written key (`n - 1`) hottest, then `n - 2`, and so on.
    Latest,
}

impl KeyDist {
    /// YCSB's default zipfian, θ = 0.99.
    pub const ZIPFIAN: KeyDist = KeyDist::Zipfian { theta: YCSB_THETA };

    /// The zipfian skew θ, or `None` for uniform.
    pub fn theta(self) -> Option<f64> {
        match self {
            KeyDist::Uniform => None,
            KeyDist::Zipfian { theta } => Some(theta),
            KeyDist::Latest => Some(YCSB_THETA),
        }
    }
}

/// A key distribution that cannot be read, or a sampler over no keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyDistError {
    /// The text is none of the accepted forms.
    #[error(
        "bad key distribution `{0}`: expected uniform, zipfian (θ = 0.99), zipfian:<θ> with θ a number > 0 (e.g. zipfian:0.8) or latest"
    )]
    Parse(String),
    /// A sampler needs at least one key.
    #[error("no keys to pick from: the key space is empty")]
    Empty,
}

impl FromStr for KeyDist {
    type Err = KeyDistError;

    fn from_str(s: &str) -> Result<Self, KeyDistError> {
        let text = s.trim();
        let bad = || KeyDistError::Parse(text.to_string());
        match text.to_ascii_lowercase().as_str() {
            "uniform" => Ok(KeyDist::Uniform),
            "zipfian" => Ok(KeyDist::ZIPFIAN),
            "latest" => Ok(KeyDist::Latest),
            other => {
                let theta = other.strip_prefix("zipfian:").ok_or_else(bad)?;
                let theta: f64 = theta.trim().parse().map_err(|_| bad())?;
                if theta.is_finite() && theta > 0.0 {
                    Ok(KeyDist::Zipfian { theta })
                } else {
                    Err(bad())
                }
            }
        }
    }
}

impl fmt::Display for KeyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDist::Uniform => f.write_str("uniform"),
            // `{}` on f64 prints the shortest text that reads back to the same value.
            KeyDist::Zipfian { theta } => write!(f, "zipfian:{theta}"),
            KeyDist::Latest => f.write_str("latest"),
        }
    }
}

/// How a [`KeySampler`] turns a draw into a key.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Uniform,
    /// Zipfian rank, scattered by [`scramble`].
    Scrambled(Zipf<f64>),
    /// Zipfian rank as the key: key 0 hottest.
    Ranked(Zipf<f64>),
    /// `n - 1 - rank`: key `n - 1` hottest.
    Latest(Zipf<f64>),
}

/// Draws keys in `0..n` from a [`KeyDist`]: O(1) memory, O(1) work per sample and no
/// allocation per sample, for any `n` from 1 to `u64::MAX`. Zipfian ranks are drawn as
/// `f64`, so above 2^53 keys they are exact only to `f64`'s granularity.
#[derive(Debug, Clone)]
pub struct KeySampler {
    n: u64,
    theta: f64,
    mode: Mode,
}

impl KeySampler {
    /// A sampler of `dist` over the keys `0..n`; an error if `n` is 0 or θ is not > 0.
    pub fn new(dist: KeyDist, n: u64) -> Result<Self, KeyDistError> {
        match dist {
            KeyDist::Uniform => Self::build(n, 0.0, |_| Mode::Uniform),
            KeyDist::Zipfian { theta } => Self::build(n, theta, Mode::Scrambled),
            KeyDist::Latest => Self::build(n, YCSB_THETA, Mode::Latest),
        }
    }

    /// A zipfian sampler that returns the rank itself, unscrambled: key 0 hottest, then 1,
    /// and so on (YCSB's plain `ZipfianGenerator`). For keys already in random order, and to
    /// show what [`KeyDist::Zipfian`]'s scrambling changes.
    pub fn zipfian_ranks(theta: f64, n: u64) -> Result<Self, KeyDistError> {
        Self::build(n, theta, Mode::Ranked)
    }

    fn build(n: u64, theta: f64, mode: impl Fn(Zipf<f64>) -> Mode) -> Result<Self, KeyDistError> {
        if n == 0 {
            return Err(KeyDistError::Empty);
        }
        let mode = if theta == 0.0 {
            Mode::Uniform
        } else {
            let zipf = Zipf::new(n as f64, theta)
                .map_err(|_| KeyDistError::Parse(format!("zipfian:{theta}")))?;
            mode(zipf)
        };
        Ok(KeySampler { n, theta, mode })
    }

    /// The number of keys, `n`.
    pub fn keys(&self) -> u64 {
        self.n
    }

    /// The next key, in `0..n`.
    pub fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        match self.mode {
            Mode::Uniform => rng.random_range(0..self.n),
            Mode::Scrambled(zipf) => scramble(self.rank(zipf, rng), self.n),
            Mode::Ranked(zipf) => self.rank(zipf, rng),
            Mode::Latest(zipf) => self.n - 1 - self.rank(zipf, rng),
        }
    }

    /// A 0-based zipfian rank in `0..n` (`Zipf` gives 1..=n as `f64`; the `min` guards
    /// against rounding at the top for n near 2^64).
    fn rank<R: Rng + ?Sized>(&self, zipf: Zipf<f64>, rng: &mut R) -> u64 {
        let x: f64 = zipf.sample(rng);
        (x as u64).saturating_sub(1).min(self.n - 1)
    }

    /// The key drawn most often: the key of rank 0 (`0` for uniform, where all tie).
    pub fn hottest_key(&self) -> u64 {
        match self.mode {
            Mode::Uniform | Mode::Ranked(_) => 0,
            Mode::Scrambled(_) => scramble(0, self.n),
            Mode::Latest(_) => self.n - 1,
        }
    }

    /// The probability of [`hottest_key`](Self::hottest_key): `1 / ζ(n, θ)`, or `1 / n`.
    pub fn p_hottest(&self) -> f64 {
        match self.mode {
            Mode::Uniform => 1.0 / self.n as f64,
            _ => 1.0 / zeta(self.n, self.theta),
        }
    }

    /// The expected number of distinct keys among `m` samples; see [`expected_distinct`].
    pub fn expected_distinct(&self, m: u64) -> f64 {
        match self.mode {
            Mode::Uniform => expected_distinct_uniform(self.n, m),
            // The scramble is a permutation, so every zipfian mode has the same multiset of
            // key probabilities.
            _ => expected_distinct_zipfian(self.n, self.theta, m, EXACT_TERMS),
        }
    }
}

/// The expected number of distinct keys after `m` independent samples of `dist` over `n`
/// keys: `E = Σ_k (1 − (1 − p_k)^m)`.
///
/// Uniform: `n·(1 − (1 − 1/n)^m)` in closed form. Zipfian and latest (the same multiset of
/// probabilities, since the scramble is a permutation): up to [`EXACT_TERMS`] keys every
/// term is summed exactly. Beyond, the first `EXACT_TERMS` ranks are summed exactly and the
/// rest in geometric buckets `[a, a·(1 + 10^-4))`, each counted as its width times the term
/// at its geometric middle. The term `f(p) = 1 − (1 − p)^m` is increasing and concave in
/// `p` with `f(0) = 0`, so `f(λp) ≤ λ·f(p)` for `λ ≥ 1`; within a bucket `p_k` varies by at
/// most a factor `(1 + 10^-4)^θ`, so the tail's relative error is below `θ·10^-4` (plus
/// ζ's, see [`zeta`]). The sum costs O(`EXACT_TERMS` + ln(n / `EXACT_TERMS`)·10^4) work,
/// once.
pub fn expected_distinct(dist: KeyDist, n: u64, m: u64) -> f64 {
    match dist.theta() {
        None => expected_distinct_uniform(n, m),
        Some(theta) => expected_distinct_zipfian(n, theta, m, EXACT_TERMS),
    }
}

/// `n·(1 − (1 − 1/n)^m)`, computed without cancellation.
fn expected_distinct_uniform(n: u64, m: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    -n * (m as f64 * (-1.0 / n).ln_1p()).exp_m1()
}

/// `Σ_{k=1..n} (1 − (1 − p_k)^m)` with `p_k = k^-θ / ζ(n, θ)`, exact over the first
/// `exact` ranks and bucketed beyond (see [`expected_distinct`]).
fn expected_distinct_zipfian(n: u64, theta: f64, m: u64, exact: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let zeta_n = zeta_with(n, theta, exact);
    let m = m as f64;
    // 1 − (1 − p)^m without cancellation for small p.
    let hit = |k: f64| -(m * (-(k.powf(-theta) / zeta_n)).ln_1p()).exp_m1();
    let head = n.min(exact);
    let mut sum: f64 = (1..=head).rev().map(|k| hit(k as f64)).sum();
    let mut a = head + 1;
    while a <= n {
        let b = ((a as f64 * (1.0 + TAIL_RATIO)).ceil() as u64)
            .max(a + 1)
            .min(n.saturating_add(1));
        let width = (b - a) as f64;
        let middle = (a as f64 * (b - 1) as f64).sqrt();
        sum += width * hit(middle);
        a = b;
    }
    sum
}

/// The generalized harmonic number `ζ(n, θ) = Σ_{k=1..n} k^-θ`, the normalizer of the
/// zipfian probabilities.
///
/// Up to [`EXACT_TERMS`] terms it is summed exactly (smallest first). Beyond, the first
/// `K − 1` terms (`K = EXACT_TERMS`) are summed and the rest taken from the Euler–Maclaurin
/// formula to its first Bernoulli term:
/// `Σ_{k=K..n} k^-θ ≈ ∫_K^n x^-θ dx + (K^-θ + n^-θ)/2 + θ/12·(K^-θ-1 − n^-θ-1)`.
/// The derivatives of `x^-θ` are monotone, so the error is at most the next term's size,
/// `θ(θ+1)(θ+2)/720 · K^-θ-3`, below 10^-19 for θ ≤ 10 (ζ ≥ 1): f64 rounding dominates.
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_with(n, theta, EXACT_TERMS)
}

fn zeta_with(n: u64, theta: f64, exact: u64) -> f64 {
    let term = |k: u64| (k as f64).powf(-theta);
    if n <= exact {
        return (1..=n).rev().map(term).sum();
    }
    let k = exact.max(2);
    let (kf, nf) = (k as f64, n as f64);
    let head: f64 = (1..k).rev().map(term).sum();
    // ∫_K^n x^-θ dx = K^(1−θ)·(e^((1−θ)·ln(n/K)) − 1)/(1 − θ), → ln(n/K) as θ → 1.
    let log_ratio = (nf / kf).ln();
    let s = 1.0 - theta;
    let integral = if s.abs() < 1e-12 {
        log_ratio
    } else {
        kf.powf(s) * (s * log_ratio).exp_m1() / s
    };
    let ends = (term(k) + term(n)) / 2.0;
    let bernoulli = theta / 12.0 * (kf.powf(-theta - 1.0) - nf.powf(-theta - 1.0));
    head + integral + ends + bernoulli
}

/// YCSB's `Utils.fnvhash64`: FNV-1a 64 over the 8 little-endian bytes of `value`.
pub fn fnv1a64(value: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    value.to_le_bytes().iter().fold(OFFSET_BASIS, |h, &octet| {
        (h ^ u64::from(octet)).wrapping_mul(PRIME)
    })
}

/// Where rank `rank` (0-based, `< n`) lands among the keys `0..n`: a fixed pseudo-random
/// permutation of `0..n`, so the hot ranks are spread over the whole key space.
///
/// YCSB's `ScrambledZipfianGenerator` takes `fnvhash64(rank) % n` over 10^10 ranks. With
/// ranks drawn over `n` keys, `% n` would not be one-to-one: about 1/e of the keys would
/// never be read and hot ranks could collide. Here FNV-1a 64 is the round function of a
/// 4-round Feistel network on the `b` bits of `n - 1` (the high and the low half, the odd
/// bit in the high one, each round XORing one half with the hash of the other), and values
/// `≥ n` walk the cycle on (under 2 steps on average, since `2^b < 2n`): a bijection, so
/// the key probabilities are exactly the zipfian ones, only placed elsewhere.
pub fn scramble(rank: u64, n: u64) -> u64 {
    debug_assert!(rank < n);
    if n <= 1 {
        return 0;
    }
    let bits = 64 - (n - 1).leading_zeros();
    let mut x = rank;
    loop {
        x = feistel(x, bits);
        if x < n {
            return x;
        }
    }
}

/// One pass of the 4-round Feistel permutation over the low `bits` bits of `x`.
fn feistel(x: u64, bits: u32) -> u64 {
    const ROUND_KEYS: [u64; 4] = [
        0x9e37_79b9_7f4a_7c15,
        0xbf58_476d_1ce4_e5b9,
        0x94d0_49bb_1331_11eb,
        0x2545_f491_4f6c_dd1d,
    ];
    // The hash of `from` cut to `width` bits (≤ 32); FNV-1a's high bits mix every input
    // byte, its low bits do not.
    let round = |from: u64, key: u64, width: u32| match width {
        0 => 0,
        _ => fnv1a64(from ^ key) >> (64 - width),
    };
    let low_bits = bits / 2;
    let high_bits = bits - low_bits;
    let (mut high, mut low) = (x >> low_bits, x & ((1u64 << low_bits) - 1));
    for pair in ROUND_KEYS.chunks(2) {
        high ^= round(low, pair[0], high_bits);
        low ^= round(high, pair[1], low_bits);
    }
    (high << low_bits) | low
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    const N: u64 = 100_000;
    const M: u64 = 200_000;

    fn rng(seed: u64) -> SmallRng {
        SmallRng::seed_from_u64(seed)
    }

    /// Per-key sample counts of `m` draws.
    fn counts(sampler: &mut KeySampler, m: u64, seed: u64) -> Vec<u32> {
        let mut rng = rng(seed);
        let mut counts = vec![0u32; sampler.keys() as usize];
        for _ in 0..m {
            counts[sampler.sample(&mut rng) as usize] += 1;
        }
        counts
    }

    fn distinct(counts: &[u32]) -> u64 {
        counts.iter().filter(|&&c| c > 0).count() as u64
    }

    /// The keys with the most samples, most first.
    fn hottest(counts: &[u32], top: usize) -> Vec<u64> {
        let mut keys: Vec<u64> = (0..counts.len() as u64).collect();
        keys.sort_by_key(|&k| std::cmp::Reverse(counts[k as usize]));
        keys.truncate(top);
        keys
    }

    /// Tolerance on the distinct count. The indicators "key k was sampled" are negatively
    /// associated (occupancy of a multinomial), so Var(D) ≤ Σ_k q_k(1 − q_k) ≤ Σ_k q_k =
    /// E[D]. Five standard deviations, 5·√E[D], is then a false failure for fewer than one
    /// seed in a million (normal tail), and at E[D] ≥ 25,000 it is at most 3.2 % of E[D].
    fn tolerance(expected: f64) -> f64 {
        5.0 * expected.sqrt()
    }

    #[test]
    fn distinct_count_matches_the_prediction() {
        let uniform_prediction = expected_distinct(KeyDist::Uniform, N, M);
        for (i, dist) in [
            KeyDist::Uniform,
            KeyDist::ZIPFIAN,
            KeyDist::Zipfian { theta: 0.5 },
            KeyDist::Latest,
        ]
        .into_iter()
        .enumerate()
        {
            let mut sampler = KeySampler::new(dist, N).unwrap();
            let observed = distinct(&counts(&mut sampler, M, 10 + i as u64)) as f64;
            let expected = expected_distinct(dist, N, M);
            assert_eq!(expected, sampler.expected_distinct(M));
            let tol = tolerance(expected);
            assert!(
                (observed - expected).abs() <= tol,
                "{dist}: {observed} distinct keys, predicted {expected:.0} ± {tol:.0}"
            );
            // The check can fail: θ = 0.99 and latest are far from the uniform prediction.
            if dist.theta() == Some(YCSB_THETA) {
                assert!(
                    (observed - uniform_prediction).abs() > 10.0 * tol,
                    "{dist}: {observed} distinct keys, as many as uniform's {uniform_prediction:.0}"
                );
            }
        }
        // The unscrambled ranks have the same prediction (the scramble is a permutation).
        let mut ranks = KeySampler::zipfian_ranks(YCSB_THETA, N).unwrap();
        let observed = distinct(&counts(&mut ranks, M, 20)) as f64;
        let expected = ranks.expected_distinct(M);
        assert!((observed - expected).abs() <= tolerance(expected));
    }

    #[test]
    fn uniform_prediction_is_the_closed_form() {
        let (n, m) = (1000u64, 3000u64);
        let closed = n as f64 * (1.0 - (1.0 - 1.0 / n as f64).powi(m as i32));
        assert!((expected_distinct(KeyDist::Uniform, n, m) - closed).abs() < 1e-9);
        assert_eq!(expected_distinct(KeyDist::Uniform, 1, 5), 1.0);
    }

    #[test]
    fn approximate_prediction_agrees_with_the_exact_sum() {
        // The bucketed tail and Euler–Maclaurin ζ, forced on from rank 1,000, against the
        // exact sums over all 10^5 ranks.
        for theta in [0.5, YCSB_THETA, 1.0, 1.5] {
            let exact_zeta = zeta_with(N, theta, N);
            let approx_zeta = zeta_with(N, theta, 1000);
            assert!(
                ((approx_zeta - exact_zeta) / exact_zeta).abs() < 1e-12,
                "θ = {theta}: ζ {approx_zeta} vs {exact_zeta}"
            );
            for m in [1_000, M, 10_000_000] {
                let exact = expected_distinct_zipfian(N, theta, m, N);
                let approx = expected_distinct_zipfian(N, theta, m, 1000);
                assert!(
                    ((approx - exact) / exact).abs() < theta * 1e-4,
                    "θ = {theta}, m = {m}: {approx} vs {exact}"
                );
            }
        }
        // Large n: finite, increasing in m, and below both n and m.
        let n = 1u64 << 40;
        let (few, many) = (
            expected_distinct(KeyDist::ZIPFIAN, n, 1_000_000),
            expected_distinct(KeyDist::ZIPFIAN, n, 100_000_000),
        );
        assert!(few.is_finite() && few > 0.0 && few < 1e6, "{few}");
        assert!(many > few && many < 1e8, "{many}");
    }

    #[test]
    fn hottest_key_gets_one_over_zeta() {
        for theta in [YCSB_THETA, 0.5] {
            let dist = KeyDist::Zipfian { theta };
            let mut sampler = KeySampler::new(dist, N).unwrap();
            let counts = counts(&mut sampler, M, 30);
            let p1 = 1.0 / zeta(N, theta);
            assert_eq!(sampler.p_hottest(), p1);
            let hot = sampler.hottest_key();
            // Binomial(M, p1): five standard deviations.
            let expected = M as f64 * p1;
            let tol = 5.0 * (M as f64 * p1 * (1.0 - p1)).sqrt();
            let got = f64::from(counts[hot as usize]);
            assert!(
                (got - expected).abs() <= tol,
                "{dist}: hottest key {hot} got {got} samples, expected {expected:.0} ± {tol:.0}"
            );
            if theta == YCSB_THETA {
                assert_eq!(hottest(&counts, 1), vec![hot]);
            }
        }
    }

    #[test]
    fn scrambled_hot_keys_are_spread_over_the_key_space() {
        let bucket_spread = |counts: &[u32]| {
            let mut buckets: Vec<u64> = hottest(counts, 100)
                .into_iter()
                .map(|k| k * 100 / N)
                .collect();
            buckets.sort_unstable();
            buckets.dedup();
            buckets
        };
        let mut scrambled = KeySampler::new(KeyDist::ZIPFIAN, N).unwrap();
        let spread = bucket_spread(&counts(&mut scrambled, M, 40));
        assert!(
            spread.len() >= 50,
            "100 hottest keys in {} of 100 buckets",
            spread.len()
        );
        // Unscrambled, the 100 hottest keys are ranks below 1,000: all in bucket 0.
        let mut ranks = KeySampler::zipfian_ranks(YCSB_THETA, N).unwrap();
        assert_eq!(bucket_spread(&counts(&mut ranks, M, 40)), vec![0]);
    }

    #[test]
    fn scramble_is_a_permutation() {
        for n in [1u64, 2, 3, 4, 5, 7, 1000, 65_537] {
            let mut seen = vec![false; n as usize];
            for rank in 0..n {
                let key = scramble(rank, n);
                assert!(
                    key < n && !seen[key as usize],
                    "n = {n}, rank {rank} → {key}"
                );
                seen[key as usize] = true;
            }
        }
    }

    #[test]
    fn latest_hottest_key_is_the_last() {
        let mut sampler = KeySampler::new(KeyDist::Latest, N).unwrap();
        assert_eq!(sampler.hottest_key(), N - 1);
        let counts = counts(&mut sampler, M, 50);
        assert_eq!(hottest(&counts, 3), vec![N - 1, N - 2, N - 3]);
    }

    #[test]
    fn parse_round_trips_and_refuses_bad_values() {
        for (text, dist) in [
            ("uniform", KeyDist::Uniform),
            ("zipfian", KeyDist::ZIPFIAN),
            ("zipfian:0.8", KeyDist::Zipfian { theta: 0.8 }),
            ("zipfian:1.5", KeyDist::Zipfian { theta: 1.5 }),
            ("latest", KeyDist::Latest),
            (" Latest ", KeyDist::Latest),
        ] {
            let parsed: KeyDist = text.parse().unwrap();
            assert_eq!(parsed, dist, "{text}");
            assert_eq!(parsed.to_string().parse::<KeyDist>().unwrap(), dist);
        }
        assert_eq!(KeyDist::ZIPFIAN.to_string(), "zipfian:0.99");
        assert_eq!(KeyDist::Zipfian { theta: 0.8 }.to_string(), "zipfian:0.8");
        for bad in [
            "",
            "zipf",
            "zipfian:",
            "zipfian:0",
            "zipfian:-1",
            "zipfian:nan",
            "zipfian:inf",
            "zipfian:abc",
            "latest:0.9",
            "hotspot",
        ] {
            let err = bad.parse::<KeyDist>().unwrap_err().to_string();
            assert!(!err.contains('\n'), "{err}");
            assert!(
                err.contains("uniform") && err.contains("zipfian:<θ>") && err.contains("latest"),
                "{err}"
            );
            assert!(err.contains(&format!("`{}`", bad.trim())), "{err}");
        }
        assert_eq!(
            KeySampler::new(KeyDist::Uniform, 0).unwrap_err(),
            KeyDistError::Empty
        );
    }

    #[test]
    fn samples_stay_below_n() {
        let dists = [
            KeyDist::Uniform,
            KeyDist::ZIPFIAN,
            KeyDist::Zipfian { theta: 0.5 },
            KeyDist::Zipfian { theta: 2.0 },
            KeyDist::Latest,
        ];
        let mut rng = rng(60);
        for n in [1u64, 2, 3, 1 << 40, u64::MAX] {
            for dist in dists {
                let mut sampler = KeySampler::new(dist, n).unwrap();
                let mut max = 0;
                for _ in 0..20_000 {
                    let key = sampler.sample(&mut rng);
                    assert!(key < n, "{dist} over {n}: key {key}");
                    max = max.max(key);
                }
                if n <= 3 {
                    assert_eq!(max, n - 1, "{dist} over {n} never reached the last key");
                }
            }
            let mut ranks = KeySampler::zipfian_ranks(YCSB_THETA, n).unwrap();
            assert!((0..20_000).all(|_| ranks.sample(&mut rng) < n));
        }
    }
}
