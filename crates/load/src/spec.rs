//! Level specs: `1..128` (doubling), `1,8,64`, `8..64:+8`, `1..1024:x2`, for
//! concurrency levels ([`ConcSpec`]) and for the offered rates of an open loop
//! ([`RateSpec`], e.g. `1000..64000:x2`).

use std::fmt;
use std::str::FromStr;

/// Most clients one level may have.
pub const MAX_CLIENTS: u32 = 65_536;

/// A spec type, `$name`: its numbers (ascending, without duplicates) under the field and
/// accessor `$get`, and the text they were read from, which `Display` shows; `FromStr`
/// reads them with `$grammar`.
macro_rules! spec_type {
    ($(#[$doc:meta])* $name:ident, $(#[$get_doc:meta])* $get:ident, $grammar:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name {
            $get: Vec<u32>,
            text: String,
        }

        impl $name {
            $(#[$get_doc])*
            pub fn $get(&self) -> &[u32] {
                &self.$get
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.text)
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                let text = s.trim();
                Ok(Self {
                    $get: parse_levels(text, &$grammar)?,
                    text: text.to_owned(),
                })
            }
        }
    };
}

spec_type!(
    /// The concurrency levels of a sweep, ascending and without duplicates.
    ConcSpec,
    /// The levels in run order.
    levels,
    CONCURRENCY
);

spec_type!(
    /// The offered rates of an open loop (calls per second over all clients), ascending
    /// and without duplicates: `20000`, `1000..64000:x2`, `5000..50000:+5000`.
    RateSpec,
    /// The rates in run order.
    rates,
    RATE
);

/// What a spec's numbers are: their name in messages, their bound, an example.
struct Grammar {
    noun: &'static str,
    max: u32,
    examples: &'static str,
}

const CONCURRENCY: Grammar = Grammar {
    noun: "concurrency",
    max: MAX_CLIENTS,
    examples: "1..128, 1,8,64 or 8..64:+8",
};

/// Highest offered rate of an open loop, calls per second.
pub const MAX_RATE: u32 = 100_000_000;

const RATE: Grammar = Grammar {
    noun: "rate",
    max: MAX_RATE,
    examples: "20000, 1000..64000:x2 or 5000..50000:+5000",
};

fn number(s: &str, what: &str, g: &Grammar) -> Result<u32, String> {
    let n: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("{what} '{}' is not a whole number", s.trim()))?;
    if n == 0 {
        return Err(format!("{} must be at least 1", g.noun));
    }
    if n > g.max {
        return Err(format!("{} {n} is above the limit of {}", g.noun, g.max));
    }
    Ok(n)
}

fn parse_levels(text: &str, g: &Grammar) -> Result<Vec<u32>, String> {
    if text.is_empty() {
        return Err(format!("empty {} spec; try {}", g.noun, g.examples));
    }
    let mut levels = if let Some((start, rest)) = text.split_once("..") {
        let (end, step) = match rest.split_once(':') {
            Some((e, st)) => (e, Some(st.trim())),
            None => (rest, None),
        };
        let start = number(start, "start", g)?;
        let end = number(end, "end", g)?;
        if end < start {
            return Err(format!("range {start}..{end} ends below its start"));
        }
        let mut v = Vec::new();
        match step {
            None => doubling(start, end, 2, &mut v),
            Some(st) if st.starts_with('x') || st.starts_with('*') => {
                let f = st[1..]
                    .parse::<u32>()
                    .map_err(|_| format!("factor '{}' is not a whole number", &st[1..]))?;
                if f < 2 {
                    return Err("a factor must be at least 2".into());
                }
                doubling(start, end, f, &mut v);
            }
            Some(st) => {
                let inc = st.strip_prefix('+').unwrap_or(st);
                let inc = inc
                    .parse::<u32>()
                    .ok()
                    .filter(|i| *i > 0)
                    .ok_or_else(|| format!("step '{st}' must be +N (N ≥ 1) or xN (N ≥ 2)"))?;
                let mut n = start;
                while n <= end {
                    v.push(n);
                    n = match n.checked_add(inc) {
                        Some(n) => n,
                        None => break,
                    };
                }
                if v.last() != Some(&end) {
                    v.push(end);
                }
            }
        }
        v
    } else {
        text.split(',')
            .map(|p| number(p, "level", g))
            .collect::<Result<Vec<_>, _>>()?
    };
    levels.sort_unstable();
    levels.dedup();
    Ok(levels)
}

/// `start, start·f, start·f², …` up to `end`, with `end` itself always included.
fn doubling(start: u32, end: u32, f: u32, v: &mut Vec<u32>) {
    let mut n = start as u64;
    while n <= end as u64 {
        v.push(n as u32);
        n *= f as u64;
    }
    if v.last() != Some(&end) {
        v.push(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(s: &str) -> Vec<u32> {
        s.parse::<ConcSpec>().unwrap().levels().to_vec()
    }

    #[test]
    fn valid_specs() {
        assert_eq!(levels("1..128"), vec![1, 2, 4, 8, 16, 32, 64, 128]);
        assert_eq!(levels("1..100"), vec![1, 2, 4, 8, 16, 32, 64, 100]);
        assert_eq!(levels("1,8,64"), vec![1, 8, 64]);
        assert_eq!(levels("64, 8,8,1"), vec![1, 8, 64]);
        assert_eq!(levels("8..64:+8"), vec![8, 16, 24, 32, 40, 48, 56, 64]);
        assert_eq!(levels("8..20:+8"), vec![8, 16, 20]);
        assert_eq!(levels("1..1024:x2").len(), 11);
        assert_eq!(levels("1..100:x10"), vec![1, 10, 100]);
        assert_eq!(levels("5"), vec![5]);
        assert_eq!(levels("3..3"), vec![3]);
    }

    #[test]
    fn invalid_specs_say_why() {
        let err = |s: &str| s.parse::<ConcSpec>().unwrap_err();
        assert!(err("0..8").contains("at least 1"));
        assert!(err("128..1").contains("ends below its start"));
        assert!(err("1..x").contains("'x' is not a whole number"));
        assert!(err("1..").contains("is not a whole number"));
        assert!(err("").contains("empty"));
        assert!(err("1..8:+0").contains("step"));
        assert!(err("1..8:x1").contains("factor"));
        assert!(err("1,0").contains("at least 1"));
        assert!(err("1..999999").contains("limit"));
    }

    #[test]
    fn rate_specs() {
        let rates = |s: &str| s.parse::<RateSpec>().unwrap().rates().to_vec();
        assert_eq!(
            rates("1000..64000:x2"),
            vec![1000, 2000, 4000, 8000, 16000, 32000, 64000]
        );
        assert_eq!(rates("20000"), vec![20000]);
        let err = |s: &str| s.parse::<RateSpec>().unwrap_err();
        assert!(err("0").contains("rate must be at least 1"));
        assert!(err("").contains("empty rate spec"));
        assert!(err("1..999999999").contains("rate 999999999 is above the limit"));
    }
}
