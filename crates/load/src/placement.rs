//! Where the client threads run beside an engine's server on this machine: off the CPUs
//! the server is bound to, when it is bound to some of this process's CPUs and leaves
//! others.
//!
//! A client thread that shares a CPU with the engine's server takes the CPU time the
//! server would have answered with, and the engine looks slower for it: metabench's own
//! cost charged to the engine. The kernel puts them together more often than not. A
//! server that answers a client wakes it from the server's own CPU, and the kernel
//! places a thread woken so on the waker's CPU when it can. Kept off the server's CPUs,
//! a sweep makes more calls a second, with one client and with many (measurements:
//! docs/src/history.md, "Client threads off the server's CPUs").
//!
//! Only a server bound to CPUs (`taskset`, `numactl`, a container's cpuset) can be kept
//! apart from: one the kernel may put anywhere is followed onto the client's CPU by the
//! same wake-ups, whatever CPUs the client keeps to. Then the run says so, and how to
//! bind it.
//!
//! The server is the process that listens on the meta URL's port (or Unix socket) on
//! this machine, found through `/proc` as `ss -lp` finds it. A process this one may not
//! look into (another user's, without privileges) is not found, and nothing is bound.

pub use metabench_report::cpu_list;
use std::collections::BTreeSet;
use std::path::Path;

/// Where a local engine's server takes connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP port, on any local address.
    Tcp(u16),
    /// A Unix socket's path, or the directory its socket is in (PostgreSQL's `host=/dir`,
    /// where the socket is `/dir/.s.PGSQL.<port>`).
    Unix(String),
}

/// A local engine's server: the processes listening at its endpoints (several for a
/// cluster whose members all run here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineServer {
    /// Their process ids, in order.
    pub pids: Vec<u32>,
    /// The first one's command name (`/proc/<pid>/comm`), e.g. `redis-server`.
    pub name: String,
    /// The CPUs any of their threads may run on, in order.
    pub cpus: Vec<usize>,
}

impl EngineServer {
    /// `redis-server (pid 1234)`, `etcd (pids 1234, 1240)`.
    pub fn describe(&self) -> String {
        let pids: Vec<String> = self.pids.iter().map(u32::to_string).collect();
        let s = if pids.len() == 1 { "" } else { "s" };
        format!("{} (pid{s} {})", self.name, pids.join(", "))
    }
}

/// Where the client threads go beside a local engine's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The server is bound to CPUs that leave this process others: the client threads
    /// run on `client_cpus` (in order), one per CPU.
    Apart {
        /// The server.
        server: EngineServer,
        /// This process's CPUs that the server may not use.
        client_cpus: Vec<usize>,
    },
    /// The server may run on every CPU this process may: the kernel places both.
    Shared {
        /// The server.
        server: EngineServer,
        /// Whether the server is bound to some of the machine's CPUs (this process being
        /// confined to them as well), rather than free to use all of them.
        bound: bool,
    },
    /// No process listening on the engine's address was found.
    NotFound,
}

/// Where client threads go beside `server`, this process being allowed `ours` of the
/// machine's `online` CPUs.
pub fn place(ours: &[usize], online: &[usize], server: Option<EngineServer>) -> Placement {
    let Some(server) = server else {
        return Placement::NotFound;
    };
    let theirs: BTreeSet<usize> = server.cpus.iter().copied().collect();
    let client_cpus: Vec<usize> = ours
        .iter()
        .copied()
        .filter(|cpu| !theirs.contains(cpu))
        .collect();
    if client_cpus.is_empty() {
        let bound = online.iter().any(|cpu| !theirs.contains(cpu));
        Placement::Shared { server, bound }
    } else {
        Placement::Apart {
            server,
            client_cpus,
        }
    }
}

/// The process listening at any of `endpoints` on this machine, with the CPUs its
/// threads may use; `None` if none is found (or this process may not see it).
pub fn find_server(endpoints: &[Endpoint]) -> Option<EngineServer> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut inodes = BTreeSet::new();
    for endpoint in endpoints {
        match endpoint {
            Endpoint::Tcp(port) => {
                for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                    inodes.extend(listening_tcp_inodes(&read(table), *port));
                }
            }
            Endpoint::Unix(path) => {
                let dir = Path::new(path).is_dir();
                inodes.extend(listening_unix_inodes(&read("/proc/net/unix"), path, dir));
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    let pids = owners_of_sockets(&inodes);
    let name = read(&format!("/proc/{}/comm", pids.first()?))
        .trim()
        .to_owned();
    // A process that ended meanwhile (a Redis save child) has no CPUs left to read.
    let cpus: BTreeSet<usize> = pids
        .iter()
        .filter_map(|&pid| process_threads_cpus(pid))
        .flatten()
        .collect();
    if cpus.is_empty() {
        return None;
    }
    Some(EngineServer {
        pids,
        name,
        cpus: cpus.into_iter().collect(),
    })
}

/// The inodes of the sockets listening on TCP `port` in a `/proc/net/tcp` or
/// `/proc/net/tcp6` table (`local_address` `ADDR:PORT` in hex, state `0A`).
pub fn listening_tcp_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit_once(':')?.1;
            let listening = *fields.get(3)? == "0A";
            let inode: u64 = fields.get(9)?.parse().ok()?;
            (listening && u16::from_str_radix(local_port, 16).ok()? == port && inode != 0)
                .then_some(inode)
        })
        .collect()
}

/// The inodes of the Unix sockets listening at `path` in a `/proc/net/unix` table (flag
/// `__SO_ACCEPTCON`, 0x10000); with `in_dir`, at any socket directly in directory
/// `path`.
pub fn listening_unix_inodes(table: &str, path: &str, in_dir: bool) -> Vec<u64> {
    const ACCEPTING: u32 = 0x10000;
    let dir = path.trim_end_matches('/');
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = u32::from_str_radix(fields.get(3)?, 16).ok()?;
            let inode: u64 = fields.get(6)?.parse().ok()?;
            let socket = fields.get(7..)?.join(" ");
            let here = if in_dir {
                Path::new(&socket).parent() == Some(Path::new(dir))
            } else {
                socket == path
            };
            (flags & ACCEPTING != 0 && here).then_some(inode)
        })
        .collect()
}

/// The processes (other than this one) holding any of the socket `inodes`, in order.
fn owners_of_sockets(inodes: &BTreeSet<u64>) -> Vec<u32> {
    let me = std::process::id();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = procs
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            if pid == me {
                return None;
            }
            let fds = std::fs::read_dir(entry.path().join("fd")).ok()?;
            fds.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|target| {
                    let target = target.to_string_lossy();
                    target
                        .strip_prefix("socket:[")
                        .and_then(|rest| rest.strip_suffix(']'))
                        .and_then(|inode| inode.parse::<u64>().ok())
                        .is_some_and(|inode| inodes.contains(&inode))
                })
                .then_some(pid)
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The CPUs any thread of process `pid` may run on, in order.
fn process_threads_cpus(pid: u32) -> Option<Vec<usize>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut cpus = BTreeSet::new();
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        // A thread that ended meanwhile has no affinity left to read.
        if let Some(allowed) = affinity_of(tid) {
            cpus.extend(allowed);
        }
    }
    (!cpus.is_empty()).then(|| cpus.into_iter().collect())
}

/// The CPUs this thread may run on (its affinity), in order. Called before any client
/// thread is bound, from the thread that starts them, it is the process's.
pub fn this_thread_cpus() -> Vec<usize> {
    affinity_of(0).unwrap_or_else(|| (0..usable_cores()).collect())
}

/// The machine's online CPUs (`/sys/devices/system/cpu/online`), in order; this
/// thread's if that cannot be read.
pub fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|list| parse_cpu_ranges(&list))
        .unwrap_or_else(this_thread_cpus)
}

/// A kernel CPU list (`0-3,6`) as CPU numbers in order; `None` if it is not one.
fn parse_cpu_ranges(list: &str) -> Option<Vec<usize>> {
    let mut cpus = BTreeSet::new();
    for range in list.trim().split(',') {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        let (first, last): (usize, usize) = (first.parse().ok()?, last.parse().ok()?);
        if first > last {
            return None;
        }
        cpus.extend(first..=last);
    }
    Some(cpus.into_iter().collect())
}

/// The affinity of thread `tid` (0: the calling thread).
fn affinity_of(tid: libc::pid_t) -> Option<Vec<usize>> {
    // SAFETY: a zeroed `cpu_set_t` is an empty set; the kernel writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
    (rc == 0).then(|| {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `cpu` is below CPU_SETSIZE, inside the set.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    })
}

/// Binds the calling thread to `cpu`.
pub fn bind_this_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::other(format!("CPU {cpu} is out of range")));
    }
    // SAFETY: a zeroed `cpu_set_t` is an empty set, and `cpu` is inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The cores this process may use (its CPU affinity; an MPI rank bound to one core has
/// one): at most one client thread per core runs at a time.
pub fn usable_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The tests' engine server (here and in the CLI's): `redis-server`, pid 42, on `cpus`.
#[cfg(any(test, feature = "test-fixtures"))]
pub fn test_server(cpus: &[usize]) -> EngineServer {
    EngineServer {
        pids: vec![42],
        name: "redis-server".into(),
        cpus: cpus.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::test_server as server;
    use super::*;

    #[test]
    fn client_threads_keep_off_a_bound_server_and_share_with_an_unbound_one() {
        let online = [0, 1, 2, 3];
        assert_eq!(
            place(&[0, 1], &online, Some(server(&[0]))),
            Placement::Apart {
                server: server(&[0]),
                client_cpus: vec![1]
            }
        );
        assert_eq!(
            place(&[0, 1, 2, 3], &online, Some(server(&[1, 2]))),
            Placement::Apart {
                server: server(&[1, 2]),
                client_cpus: vec![0, 3]
            }
        );
        // Bound to every CPU this process has, or unbound: nothing is left apart, and
        // whether the server was bound tells the two apart.
        assert_eq!(
            place(&[0, 1], &online, Some(server(&[0, 1]))),
            Placement::Shared {
                server: server(&[0, 1]),
                bound: true
            }
        );
        assert_eq!(
            place(&[2], &online, Some(server(&[0, 1, 2, 3]))),
            Placement::Shared {
                server: server(&[0, 1, 2, 3]),
                bound: false
            }
        );
        assert_eq!(
            place(&[0, 1], &[0, 1], Some(server(&[0, 1]))),
            Placement::Shared {
                server: server(&[0, 1]),
                bound: false
            }
        );
        assert_eq!(place(&[0, 1], &online, None), Placement::NotFound);
    }

    #[test]
    fn kernel_cpu_lists_are_read_as_cpu_numbers() {
        assert_eq!(parse_cpu_ranges("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_ranges("0,2-4,7"), Some(vec![0, 2, 3, 4, 7]));
        assert_eq!(parse_cpu_ranges("3"), Some(vec![3]));
        assert_eq!(parse_cpu_ranges("4-2"), None);
        assert_eq!(parse_cpu_ranges(""), None);
        assert_eq!(parse_cpu_ranges("0-x"), None);
    }

    #[test]
    fn tcp_listeners_are_found_by_port_in_both_tables() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:3E80 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5551 1 0000000000000000 100 0 0 10 0
   1: 0100007F:3E80 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 5552 1 0000000000000000 20 4 30 10 -1
   2: 00000000:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   107        0 7001 1 0000000000000000 100 0 0 10 0
";
        // Port 16000 (0x3E80): the listener, not the established connection to it.
        assert_eq!(listening_tcp_inodes(tcp, 16000), [5551]);
        assert_eq!(listening_tcp_inodes(tcp, 5432), [7001]);
        assert!(listening_tcp_inodes(tcp, 6379).is_empty());
        let tcp6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:18EB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9001 1 0000000000000000 100 0 0 10 0
";
        assert_eq!(listening_tcp_inodes(tcp6, 6379), [9001]);
    }

    #[test]
    fn unix_listeners_are_found_by_path_or_directory() {
        let unix = "Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 3301 /tmp/r/redis.sock
0000000000000000: 00000003 00000000 00000000 0001 03 3302 /tmp/r/redis.sock
0000000000000000: 00000002 00000000 00010000 0001 01 3303 /run/postgresql/.s.PGSQL.5432
0000000000000000: 00000002 00000000 00010000 0001 01 3304 /tmp/with space.sock
0000000000000000: 00000002 00000000 00000000 0002 01 3305
";
        assert_eq!(
            listening_unix_inodes(unix, "/tmp/r/redis.sock", false),
            [3301]
        );
        assert_eq!(listening_unix_inodes(unix, "/run/postgresql", true), [3303]);
        assert_eq!(
            listening_unix_inodes(unix, "/run/postgresql/", true),
            [3303]
        );
        assert_eq!(
            listening_unix_inodes(unix, "/tmp/with space.sock", false),
            [3304]
        );
        assert!(listening_unix_inodes(unix, "/tmp/r", false).is_empty());
    }

    #[test]
    fn a_listening_process_is_found_with_its_cpus() {
        // This test's own listener belongs to this process, which is never taken for the
        // server; a child that listens is.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(find_server(&[Endpoint::Tcp(port)]), None);
        drop(listener);
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s.sock");
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ns.listen()\nprint('up',flush=True)\ntime.sleep(60)",
            ])
            .arg(&socket)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let found = find_server(&[Endpoint::Unix(socket.to_string_lossy().into_owned())]);
        let found_in_dir =
            find_server(&[Endpoint::Unix(dir.path().to_string_lossy().into_owned())]);
        let _ = child.kill();
        let _ = child.wait();
        let found = found.expect("the child listening on the socket is found");
        assert_eq!(found.pids, [child.id()]);
        assert_eq!(
            found.describe(),
            format!("{} (pid {})", found.name, child.id())
        );
        assert!(found.name.starts_with("python"), "{found:?}");
        // Unbound, the child may use what this process may.
        assert_eq!(found.cpus, this_thread_cpus());
        assert_eq!(found_in_dir, Some(found));
    }
}
