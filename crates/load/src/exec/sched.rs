//! A client thread's scheduler statistics, as the kernel keeps them: what the lag probe
//! ([`super::LagProbe`]) and the busy-time accounting of [`super::Exec`] read.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

/// One thread's scheduler statistics and state, as the kernel keeps them
/// (`/proc/thread-self/schedstat` and `stat`), readable from any thread.
pub(super) struct SchedStat {
    pub(super) schedstat: File,
    pub(super) stat: File,
}

impl SchedStat {
    /// The calling thread's, or `None` where the kernel keeps none (not Linux, or a
    /// kernel built without scheduler statistics).
    pub(super) fn of_this_thread() -> Option<Self> {
        let sched = Self {
            schedstat: File::open("/proc/thread-self/schedstat").ok()?,
            stat: File::open("/proc/thread-self/stat").ok()?,
        };
        sched.turns()?;
        sched.runnable()?;
        Some(sched)
    }

    /// The three fields of `schedstat`: time on a CPU and time waiting for one (ns), and
    /// turns on a CPU, so far.
    pub(super) fn fields(&self) -> Option<[u64; 3]> {
        let mut buf = [0u8; 128];
        let n = self.schedstat.read_at(&mut buf, 0).ok()?;
        metabench_engine::procfs::schedstat_fields(std::str::from_utf8(&buf[..n]).ok()?)
    }

    /// The thread's turns on a CPU so far (the second and third fields of `schedstat`).
    pub(super) fn turns(&self) -> Option<CpuTurns> {
        let [_, waited_ns, turns] = self.fields()?;
        Some(CpuTurns { waited_ns, turns })
    }

    /// The thread's time on a CPU so far (the first field of `schedstat`).
    pub(super) fn ran(&self) -> Option<Duration> {
        let [ran_ns, ..] = self.fields()?;
        Some(Duration::from_nanos(ran_ns))
    }

    /// Whether the thread is running or ready to (state `R` in `stat`, the field after
    /// the parenthesised name), rather than asleep.
    pub(super) fn runnable(&self) -> Option<bool> {
        let mut buf = [0u8; 512];
        let n = self.stat.read_at(&mut buf, 0).ok()?;
        Some(metabench_engine::procfs::stat_after_name(&buf[..n])?.next()? == "R")
    }
}

/// How often a thread has got a CPU, and how long it waited for one (ready to run, not
/// running) before those turns, in all. Both grow when the thread gets a CPU.
#[derive(Debug, Clone, Copy)]
pub(super) struct CpuTurns {
    pub(super) waited_ns: u64,
    pub(super) turns: u64,
}

impl CpuTurns {
    /// The mean wait for a CPU of the turns taken since `before` (0 if none were).
    pub(super) fn mean_wait_since(self, before: CpuTurns) -> u64 {
        match self.turns.saturating_sub(before.turns) {
            0 => 0,
            turns => self.waited_ns.saturating_sub(before.waited_ns) / turns,
        }
    }
}
