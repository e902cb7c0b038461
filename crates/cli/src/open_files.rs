//! The process's limit on open files (`RLIMIT_NOFILE`): each of a sweep's clients holds
//! a connection (a file descriptor) of its own, so 10,000 clients need more than the
//! 1,024 a shell gives by default. The soft limit is raised to the hard one at start,
//! as far as the OS allows; a sweep whose clients need more still is refused in one line
//! that says which limit to raise and by how much, before anything is written.

use crate::error::{input, CliError};
use metabench_engine::{MetaUrl, Scheme};

/// Files the process holds besides its clients': the runtime's and client threads'
/// descriptors (epoll, eventfd, timers), the administration connection, the results
/// files, `/proc` reads, the log.
const BASE_FILES: u64 = 64;

/// The process's open-file limit: soft (what it may open) and hard (what the soft limit
/// may be raised to without privileges); `None` for no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpenFiles {
    pub(crate) soft: Option<u64>,
    pub(crate) hard: Option<u64>,
}

// `rlim_t` is `u64` on Linux but not on every target.
#[allow(clippy::unnecessary_cast)]
fn limit_of(v: libc::rlim_t) -> Option<u64> {
    (v != libc::RLIM_INFINITY).then_some(v as u64)
}

/// Raises the soft open-file limit to the hard one (where the OS allows it: on macOS
/// no further than `OPEN_MAX`) and returns the limit then in force.
pub(crate) fn raise_open_files() -> OpenFiles {
    // SAFETY: getrlimit and setrlimit read and write only the struct passed.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return OpenFiles {
            soft: None,
            hard: None,
        };
    }
    if r.rlim_cur < r.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: r.rlim_max,
            rlim_max: r.rlim_max,
        };
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            r.rlim_cur = r.rlim_max;
        }
    }
    OpenFiles {
        soft: limit_of(r.rlim_cur),
        hard: limit_of(r.rlim_max),
    }
}

/// File descriptors one client of the engine at `meta` holds: a connection each for
/// Redis, MySQL and PostgreSQL; SQLite's database, WAL and shared-memory files (the
/// default when no `--meta` is given); none of its own on TKV engines, whose sessions
/// share the process's one client.
pub(crate) fn files_per_client(meta: Option<&str>) -> u64 {
    let Some(url) = meta else { return 3 };
    match MetaUrl::parse(url).map(|u| u.scheme()) {
        Ok(Scheme::Sqlite) => 3,
        Ok(Scheme::Etcd | Scheme::Tikv | Scheme::Memkv | Scheme::Fdb) => 0,
        // Redis, MySQL, PostgreSQL, and a system beside JuiceFS (HDFS, S3): a connection.
        _ => 1,
    }
}

/// Refuses `clients` clients of `per_client` files each when `limit` does not take them,
/// in one line: the limit to raise (the hard one when the soft one is already there) and
/// by how much.
pub(crate) fn check_open_files(
    limit: OpenFiles,
    clients: u64,
    per_client: u64,
) -> Result<(), CliError> {
    let needed = BASE_FILES + clients * per_client;
    let Some(soft) = limit.soft else {
        return Ok(());
    };
    if needed <= soft {
        return Ok(());
    }
    let short = needed - soft;
    Err(input(match limit.hard {
        Some(hard) if hard < needed => format!(
            "{clients} clients need about {needed} open files, but this process may open {soft} \
             (RLIMIT_NOFILE, hard limit {hard}): raise the hard limit by {} to {needed} or more \
             (as root: `ulimit -Hn {needed}`; for a service LimitNOFILE=, for a login `nofile` \
             in /etc/security/limits.conf)",
            needed - hard
        ),
        _ => format!(
            "{clients} clients need about {needed} open files, but this process may open {soft} \
             (RLIMIT_NOFILE): raise the soft limit by {short} to {needed} or more (`ulimit -n {needed}`)"
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let now = raise_open_files();
        assert_eq!(now.soft, now.hard, "{now:?}");
        assert_eq!(raise_open_files(), now, "raising twice changes nothing");
    }

    #[test]
    fn a_sweep_beyond_the_limit_says_which_limit_and_by_how_much() {
        let limit = OpenFiles {
            soft: Some(1024),
            hard: Some(4096),
        };
        assert!(check_open_files(limit, 900, 1).is_ok());
        assert!(
            check_open_files(limit, 10_000, 0).is_ok(),
            "etcd's clients share one"
        );
        let e = check_open_files(limit, 10_000, 1).unwrap_err().to_string();
        assert!(
            e.contains("need about 10064 open files")
                && e.contains("may open 1024")
                && e.contains("raise the hard limit by 5968 to 10064"),
            "{e}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
        // The hard limit would do: the soft one is named.
        let soft_only = OpenFiles {
            soft: Some(1024),
            hard: None,
        };
        let e = check_open_files(soft_only, 2000, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("raise the soft limit by 1040 to 2064"), "{e}");
        let unlimited = OpenFiles {
            soft: None,
            hard: None,
        };
        assert!(check_open_files(unlimited, 1_000_000, 3).is_ok());
    }

    #[test]
    fn each_engine_holds_its_own_files_per_client() {
        assert_eq!(files_per_client(Some("redis://127.0.0.1:6379/1")), 1);
        assert_eq!(files_per_client(Some("postgres://u:p@h:5432/db")), 1);
        assert_eq!(files_per_client(Some("etcd://127.0.0.1:2379/jfs")), 0);
        assert_eq!(files_per_client(Some("sqlite3:///tmp/x.db")), 3);
        assert_eq!(files_per_client(None), 3);
    }
}
