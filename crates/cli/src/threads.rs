//! The client threads of `ops` and `sweep`: how many, where (kept off a local engine's
//! server's CPUs), and how results record them, with the differences from the modelled
//! client that their placement and idling make.

use crate::args::ClientArgs;
use crate::error::CliError;
use crate::volume::VolumeArgs;
use metabench_engine::url::Address;
use metabench_engine::MetaUrl;
use metabench_load::placement::{self, cpu_list, Endpoint, Placement};
use metabench_load::{Exec, Idle};
use metabench_report::RunHeader;

/// The client threads of `ops` and `sweep`, started before anything is written, the same
/// for both, so both time a call the same way: `--client-threads`, else one per core
/// (the cores this process may use), less one when the engine's server runs on this
/// machine: a client thread more would take the engine's core, and each thread would wake
/// for fewer replies (measurements: docs/src/history.md, "One client thread fewer beside a
/// local server").
///
/// A local server bound to some of this process's CPUs keeps them: the client threads
/// are bound to the others, one per CPU (`--client-threads` spreads its count over
/// them), so no client thread takes the server's CPU ([`metabench_load::placement`]).
/// Returns the threads and why they are so many and where.
pub fn client_threads(args: &ClientArgs, target: &VolumeArgs) -> Result<(Exec, String), CliError> {
    let cores = metabench_load::placement::usable_cores();
    let local_server = target
        .meta
        .as_deref()
        .and_then(|m| MetaUrl::parse(m).ok())
        .filter(MetaUrl::server_on_this_host);
    let placement = local_server.as_ref().map(|url| {
        let server = placement::find_server(&server_endpoints(url));
        placement::place(
            &placement::this_thread_cpus(),
            &placement::online_cpus(),
            server,
        )
    });
    let (threads, cpus, why) = match (&placement, args.client_threads) {
        (
            Some(Placement::Apart {
                server,
                client_cpus,
            }),
            n,
        ) => {
            let apart = format!(
                "{} is bound to CPU {}",
                server.describe(),
                cpu_list(&server.cpus)
            );
            let (threads, why) = match n {
                Some(n) => (usize::from(n), format!("--client-threads; {apart}")),
                None => (
                    client_cpus.len(),
                    format!("one per CPU the engine's server may not use: {apart}"),
                ),
            };
            (threads, client_cpus.clone(), why)
        }
        (_, Some(n)) => (usize::from(n), Vec::new(), "--client-threads".to_owned()),
        (Some(found), None) => {
            let whose = match found {
                Placement::Shared {
                    server,
                    bound: false,
                } => format!(
                    "; {} is not bound to CPUs of its own: bind it to some (taskset) to keep \
                     the client threads off them",
                    server.describe()
                ),
                Placement::Shared {
                    server,
                    bound: true,
                } => format!(
                    "; {} is bound to CPU {}, and metabench may use no other: the client \
                     threads share its CPUs (let metabench use others to keep them apart)",
                    server.describe(),
                    cpu_list(&server.cpus)
                ),
                _ => String::new(),
            };
            if cores > 1 {
                (
                    cores - 1,
                    Vec::new(),
                    format!(
                        "one per core but one: the engine's server runs on this machine and \
                         keeps a core{whose}"
                    ),
                )
            } else {
                (cores, Vec::new(), format!("one per core{whose}"))
            }
        }
        _ => (cores, Vec::new(), "one per core".to_owned()),
    };
    let idle = if args.busy_poll {
        Idle::BusyPoll
    } else {
        Idle::Sleep
    };
    let mut exec = Exec::on_cpus(threads, idle, &cpus)
        .map_err(|e| CliError::Io(format!("cannot start client threads: {e}")))?;
    if let Some(placement) = placement {
        exec.placed(placement);
    }
    Ok((exec, why))
}

/// Where a server on this machine takes the connections `url` names.
fn server_endpoints(url: &MetaUrl) -> Vec<Endpoint> {
    match url.address() {
        Address::Unix(path) => vec![Endpoint::Unix(path.clone())],
        Address::File(_) => Vec::new(),
        Address::Tcp { .. } => url
            .hosts()
            .into_iter()
            .map(|(_, port)| Endpoint::Tcp(port))
            .collect(),
    }
}

/// Says how many client threads run the clients, where, and why ([`client_threads`]).
pub fn say_client_threads(exec: &Exec, why: &str) {
    let polling = match exec.idle() {
        Idle::Sleep => "",
        Idle::BusyPoll => ", busy-polling (--busy-poll: each uses a whole core)",
    };
    let on = match exec.cpus() {
        cpus if cpus.is_empty() => String::new(),
        cpus => format!(" on CPU {}", cpu_list(&cpus)),
    };
    say!("client threads: {}{on} ({why}){polling}", exec.threads());
}

/// Records in a results header how the client threads ran ([`client_threads`]); under
/// `--busy-poll`, with the difference from the client it models among the fidelity notes.
pub fn record_client_threads(header: &mut RunHeader, exec: &Exec) {
    header.host.client_threads = exec.threads();
    header.host.client_cpus = exec.cpus();
    let note = match exec.placement() {
        Some(Placement::Apart { server, .. }) => Some(apart_note(&server.describe(), &server.cpus)),
        Some(Placement::Shared {
            server,
            bound: false,
        }) => Some(shared_cpus_note(&server.describe())),
        Some(Placement::Shared {
            server,
            bound: true,
        }) => Some(confined_note(&server.describe(), &server.cpus)),
        _ => None,
    };
    header.engine.fidelity_notes.extend(note);
    // A server bound to CPUs has them recorded, whether metabench kept apart from them or
    // was confined to them.
    if let Some(
        Placement::Apart { server, .. }
        | Placement::Shared {
            server,
            bound: true,
        },
    ) = exec.placement()
    {
        header.host.engine_cpus = server.cpus.clone();
    }
    header.engine.cpu_sharing = cpu_sharing(
        &header.engine.location,
        exec.placement(),
        &exec.cpus(),
        &placement::this_thread_cpus(),
    );
    header.host.busy_poll = exec.idle() == Idle::BusyPoll;
    if header.host.busy_poll {
        header.engine.fidelity_notes.push(BUSY_POLL_NOTE.to_owned());
    }
}

/// Whether the engine's server shared the client threads' CPUs, as results record it
/// ([`metabench_report::EngineInfo::cpu_sharing`]): from where it ran (`location`), the
/// local server found through `/proc` and the CPUs its threads may use (`placement`),
/// and the client threads' CPUs (`client_cpus`, bound; else this process's, `ours`).
/// Where the server could not be looked at, `unknown (<why>)`: never a guess.
fn cpu_sharing(
    location: &str,
    placement: Option<&Placement>,
    client_cpus: &[usize],
    ours: &[usize],
) -> String {
    let clients = if client_cpus.is_empty() {
        ours
    } else {
        client_cpus
    };
    let server = match placement {
        Some(Placement::Apart { server, .. } | Placement::Shared { server, .. }) => server,
        Some(Placement::NotFound) => {
            return "unknown (no process listening at the engine's address was found through \
                    /proc: another user's process cannot be looked into)"
                .to_owned()
        }
        None if location == "in-process" => {
            return "yes (in-process: the engine runs on the client threads)".to_owned()
        }
        None if location == "remote" => return "no (the engine runs on another host)".to_owned(),
        None => {
            return format!(
                "unknown (the engine's server is looked for only at a loopback address or \
                 a socket; it is at {})",
                if location.is_empty() {
                    "an unknown place"
                } else {
                    location
                }
            )
        }
    };
    let both: Vec<usize> = clients
        .iter()
        .copied()
        .filter(|cpu| server.cpus.contains(cpu))
        .collect();
    // Its name, not its pid: a restarted server is the same setup.
    let said = format!(
        "{} on CPU {}, the client threads on CPU {}",
        server.name,
        cpu_list(&server.cpus),
        cpu_list(clients)
    );
    if both.is_empty() {
        format!("no ({said})")
    } else if both.len() == clients.len() {
        format!("yes ({said})")
    } else {
        format!("partly (CPU {} both; {said})", cpu_list(&both))
    }
}

/// How `--busy-poll` makes metabench differ from the client it models.
const BUSY_POLL_NOTE: &str = "Client threads busy-poll (--busy-poll): a reply never waits \
     for the client's CPU to wake. A real client (JuiceFS's too) sleeps while it waits and \
     pays that wake-up on every round trip: tens of µs where an idle CPU is slow to wake \
     (a VM that halts idle vCPUs).";

/// How client threads kept off a local engine's server's CPUs differ from a client the
/// kernel places beside it.
fn apart_note(server: &str, server_cpus: &[usize]) -> String {
    format!(
        "The engine's server, {server}, is bound to CPU {}, and the client threads run \
         on other CPUs, as a client on another host would: every round trip wakes a CPU the \
         server does not use. A client left to the kernel (JuiceFS's, say) is often put on \
         the server's own CPU, where a round trip needs no other CPU woken and the client's \
         work is taken from the engine's: on a 2-vCPU VM, JuiceFS's Go benchmark's Redis \
         getattr took 48 µs placed so and 67 µs on the other CPU. Compare such a client \
         with both on the same CPUs (e.g. `taskset`).",
        cpu_list(server_cpus)
    )
}

/// How client threads confined to a bound server's own CPUs (metabench started on them,
/// e.g. under the same `taskset`) differ from a client on another host.
fn confined_note(server: &str, server_cpus: &[usize]) -> String {
    format!(
        "The engine's server, {server}, is bound to CPU {}, and metabench may use no other \
         CPU: the client threads run on the server's CPUs, where a round trip needs no other \
         CPU woken and the client's work is taken from the engine's. A client on another \
         host never shares its engine's CPU, and pays that wake-up on every round trip: on a \
         2-vCPU VM, a Redis getattr took 8.8 µs sharing Redis's CPU and 85 µs on the other \
         CPU. Start metabench on other CPUs as well and it keeps its client threads off the \
         server's.",
        cpu_list(server_cpus)
    )
}

/// How a local engine's server that is not bound to CPUs of its own may be charged for
/// the client's work.
fn shared_cpus_note(server: &str) -> String {
    format!(
        "The engine's server, {server}, runs on this machine and may use every CPU the \
         client threads may: the kernel puts a client thread where the server's replies \
         wake it, often on the server's own CPU, and the client's work there is taken \
         from the engine's (at saturation, a plateau that is partly metabench's). Bind the \
         server to CPUs of its own (e.g. `taskset -c 0 redis-server …`) and metabench keeps \
         its client threads off them."
    )
}

/// How sleeping client threads (the default) make metabench differ from JuiceFS's Go
/// client on an engine it reaches through a socket.
pub(crate) const SLEEP_NOTE: &str = "Client threads sleep while a call waits on the engine, as \
     JuiceFS's do, and each round trip pays the client CPU's wake-up: tens of µs where an \
     idle CPU is slow to wake (a VM that halts idle vCPUs); the floor's median with the \
     client polling instead of sleeping leaves it out. How often a reply finds a CPU awake \
     depends on where the scheduler puts the client's and the engine's threads, so there \
     the same client's calls can take several times as long from one run to the next: on a \
     2-vCPU VM, JuiceFS's Go benchmark's Redis getattr took 24 µs and then 93 µs, a minute \
     apart. Compare such runs over several rounds, or with both clients pinned to the same \
     CPUs. --busy-poll shows every call without the wake-up.";

#[cfg(test)]
mod tests {
    use super::*;
    use metabench_load::placement::test_server as server;

    #[test]
    fn cpu_sharing_compares_the_servers_cpus_with_the_clients() {
        let apart = Placement::Apart {
            server: server(&[0]),
            client_cpus: vec![1],
        };
        assert_eq!(
            cpu_sharing("loopback", Some(&apart), &[1], &[0, 1]),
            "no (redis-server on CPU 0, the client threads on CPU 1)"
        );
        let shared = Placement::Shared {
            server: server(&[0, 1]),
            bound: false,
        };
        assert_eq!(
            cpu_sharing("loopback", Some(&shared), &[], &[0, 1]),
            "yes (redis-server on CPU 0-1, the client threads on CPU 0-1)"
        );
        assert_eq!(
            cpu_sharing("local socket", Some(&shared), &[], &[1, 2]),
            "partly (CPU 1 both; redis-server on CPU 0-1, the client threads on CPU 1-2)"
        );
        assert!(
            cpu_sharing("loopback", Some(&Placement::NotFound), &[], &[0])
                .starts_with("unknown (no process listening")
        );
        assert!(cpu_sharing("in-process", None, &[], &[0]).starts_with("yes (in-process"));
        assert!(cpu_sharing("remote", None, &[], &[0])
            .starts_with("no (the engine runs on another host"));
        assert!(cpu_sharing("this host (10.0.0.5)", None, &[], &[0])
            .ends_with("it is at this host (10.0.0.5))"));
    }
}
