//! Parsers of Linux's `/proc` files that more than one crate reads: a thread's or a
//! process's `schedstat` and `stat`. Text in, numbers out: the callers open and read the
//! files (the load crate's client threads keep theirs open and read them without
//! allocating; telemetry reads a server's processes at a window's edges).

/// The three fields of a `schedstat` file: time on a CPU and time waiting for one (ns),
/// and turns on a CPU, so far.
pub fn schedstat_fields(schedstat: &str) -> Option<[u64; 3]> {
    let mut fields = schedstat.split_ascii_whitespace().map(str::parse);
    let mut next = || fields.next()?.ok();
    Some([next()?, next()?, next()?])
}

/// The fields of a `stat` file after the parenthesised name (which may hold spaces,
/// parentheses and, cut at 15 bytes, half a UTF-8 character: it is skipped as bytes): the
/// state first (`R`, `S`, …), the start time (in clock ticks since boot) 20th.
pub fn stat_after_name(stat: &[u8]) -> Option<std::str::SplitAsciiWhitespace<'_>> {
    let after_name = stat.iter().rposition(|&b| b == b')')? + 1;
    Some(
        std::str::from_utf8(&stat[after_name..])
            .ok()?
            .split_ascii_whitespace(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_schedstat_and_stat() {
        assert_eq!(
            schedstat_fields("5000000 1000 7\n"),
            Some([5_000_000, 1000, 7])
        );
        assert_eq!(schedstat_fields("5000000 1000\n"), None);
        let stat = b"42 (a) b) R 1 42 42 0 -1 4194560 100 0 0 0 3 1 0 0 20 0 1 0 987654 1000 1";
        let mut after = stat_after_name(stat).unwrap();
        assert_eq!(after.next(), Some("R"));
        assert_eq!(stat_after_name(stat).unwrap().nth(19), Some("987654"));
        assert!(stat_after_name(b"no name here").is_none());
        // a name cut inside a UTF-8 character is no obstacle
        let cut = b"7 (client-\xc3) S 1";
        assert_eq!(stat_after_name(cut).unwrap().next(), Some("S"));
    }
}
