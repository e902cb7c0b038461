//! What a host's kernel says of its CPUs: this process's CPU time, the host's CPU ticks
//! and the share a hypervisor stole, the cores online.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// CPU time this process has used (user + system).
pub(super) fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The CPU time of a host (over all its CPUs, in the kernel's clock ticks), and what of
/// it a hypervisor gave to other guests while this one's threads were ready to run: the
/// `steal` column of `/proc/stat`. A window whose host lost CPU time that way delays
/// every thread on it, metabench's clients and a local engine alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct HostTicks {
    pub(super) total: u64,
    pub(super) steal: u64,
}

impl HostTicks {
    /// This host's counters so far; none where the kernel keeps no steal column.
    pub(super) fn read() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The first line of `/proc/stat`: `cpu user nice system idle iowait irq softirq
    /// steal [guest guest_nice]`. Guest time is already in user and nice, so the total
    /// is the first eight columns.
    pub(super) fn parse(stat: &str) -> Option<Self> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let columns: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        (columns.len() == 8).then(|| Self {
            total: columns.iter().sum(),
            steal: columns[7],
        })
    }

    /// What the counters grew by since `start`.
    pub(super) fn since(self, start: Self) -> Self {
        Self {
            total: self.total.saturating_sub(start.total),
            steal: self.steal.saturating_sub(start.steal),
        }
    }

    /// Both spans together.
    pub(super) fn plus(self, other: Self) -> Self {
        Self {
            total: self.total + other.total,
            steal: self.steal + other.steal,
        }
    }

    /// The share of the host's CPU time stolen; none over a span too short to tick.
    pub(super) fn steal_share(self) -> Option<f64> {
        (self.total > 0).then(|| self.steal as f64 / self.total as f64)
    }
}

/// The cores online on this host, whatever this process may use.
pub(super) fn online_cores() -> usize {
    // SAFETY: sysconf reads a system constant.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}
