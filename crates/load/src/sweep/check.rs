//! The generator's self-check: the CPU time metabench used, its scheduling lag, and
//! whether a level (or a host shared by several ranks) was bound by the client.

use super::config::{CLIENT_CPU_LIMIT, CLIENT_LAG_LIMIT};
use super::host::HostTicks;
use super::ranks::RankPart;
use crate::stats::us;
use metabench_report::{ClientCheck, RankLevel};
use std::collections::BTreeMap;
use std::time::Duration;

/// The generator's self-check of one rank's level from what its coordinator measured
/// over `measured`: its own share of the cores its clients' threads can use (of their CPU
/// time; of their busy time when they busy-poll, which uses those cores whole; less an
/// in-process engine's calls either way), then its scheduling lag (which leaves those
/// calls out too, [`crate::exec::LagProbe`]).
pub(super) fn client_check(part: &RankPart, measured: Duration) -> ClientCheck {
    let (cpu, lag, calls, cores) = (part.time.cpu, &part.lag, part.calls, part.place.cores);
    let share = |t: Duration| t.as_secs_f64() / (measured.as_secs_f64() * cores as f64).max(1e-9);
    let engine = share(part.time.engine_calls);
    let own = share(part.own());
    let engine_left_out = if part.time.engine_calls > Duration::ZERO {
        format!(
            "; the in-process engine's calls, another {:.0}%, are left out",
            engine * 100.0
        )
    } else {
        String::new()
    };
    let lag_p99 = Duration::from_nanos(lag.value_at_quantile(0.99));
    let host_steal = part.time.host_ticks.and_then(HostTicks::steal_share);
    let stolen = match host_steal {
        Some(s) if s >= ClientCheck::STEAL_NOTICE => format!(
            "; the hypervisor held back {:.0}% of this host's CPU time in the windows (steal), so part of that wait was the virtual machine's, not metabench's or the engine's",
            s * 100.0
        ),
        _ => String::new(),
    };
    let reason = if own >= CLIENT_CPU_LIMIT {
        Some(if part.place.busy_poll {
            format!(
                "metabench's clients' threads were busy running them {:.0}% of the time on the cores those threads can use ({cores}; they busy-poll, so their CPU share is not the measure{engine_left_out})",
                own * 100.0
            )
        } else {
            format!(
                "metabench used {:.0}% of the cores its clients' threads can use ({cores}{engine_left_out})",
                own * 100.0
            )
        })
    } else if lag_p99 > CLIENT_LAG_LIMIT {
        Some(format!(
            "scheduling lag p99 {:.1} ms: ready clients waited that long for their thread (for metabench's own work on it, or for a core, behind other processes on the same cores, an engine on this machine among them; an in-process engine's calls are left out){stolen}",
            lag_p99.as_secs_f64() * 1000.0
        ))
    } else {
        None
    };
    ClientCheck {
        cpu_s: cpu.as_secs_f64(),
        cpu_us_per_op: if calls > 0 {
            cpu.as_secs_f64() * 1e6 / calls as f64
        } else {
            0.0
        },
        cpu_utilisation: share(cpu),
        engine_utilisation: engine,
        lag_p99_us: us(lag.value_at_quantile(0.99)),
        lag_max_us: us(lag.max()),
        lag_mean_us: if lag.is_empty() {
            0.0
        } else {
            lag.mean() / 1000.0
        },
        host_steal,
        client_bound: reason.is_some(),
        reason,
    }
}

/// Ranks on one host share its cores: each may have stayed under the client-bound limit
/// while together they used the host's cores up. Says so of the first host where they
/// did. A host's capacity is the cores its ranks may use, at most the cores it has; what
/// counts is metabench's own use ([`RankPart::own`]).
pub(super) fn crowded_host(parts: &[RankPart], measured: Duration) -> Option<String> {
    /// The ranks with clients on one host, their CPU and their cores.
    #[derive(Default)]
    struct Host {
        ranks: Vec<usize>,
        cpu: Duration,
        usable_cores: usize,
        online_cores: usize,
    }
    let mut hosts: BTreeMap<&str, Host> = BTreeMap::new();
    for (rank, part) in parts
        .iter()
        .enumerate()
        .filter(|(_, p)| p.place.clients > 0)
    {
        let host = hosts.entry(part.place.host.as_str()).or_default();
        host.ranks.push(rank);
        host.cpu += part.own();
        host.usable_cores += part.place.cores;
        host.online_cores = host.online_cores.max(part.place.host_cores);
    }
    hosts
        .into_iter()
        .filter(|(_, h)| h.ranks.len() > 1)
        .find_map(|(host, Host { ranks, cpu, usable_cores, online_cores })| {
            let capacity = usable_cores.min(online_cores).max(1);
            let used = cpu.as_secs_f64() / (measured.as_secs_f64() * capacity as f64).max(1e-9);
            (used >= CLIENT_CPU_LIMIT).then(|| {
                let ranks: Vec<String> = ranks.iter().map(ToString::to_string).collect();
                format!(
                    "ranks {} on {host} together used {:.0}% of its {capacity} cores: run fewer ranks per host, or more hosts",
                    ranks.join(", "),
                    used * 100.0
                )
            })
        })
}

/// The level's self-check from its ranks' (which made `calls` calls in all): its own
/// when it ran alone; else the CPU and calls summed, the worst utilisation and lag, and
/// client-bound when any rank was.
pub(super) fn level_client_check(ranks: &[RankLevel], calls: u64) -> ClientCheck {
    if let [only] = ranks {
        return only.client.clone();
    }
    let cpu_s: f64 = ranks.iter().map(|r| r.client.cpu_s).sum();
    let calls = calls as f64;
    let worst = |f: fn(&ClientCheck) -> f64| ranks.iter().map(|r| f(&r.client)).fold(0.0, f64::max);
    let bound = ranks.iter().find(|r| r.client.client_bound);
    ClientCheck {
        cpu_s,
        cpu_us_per_op: if calls > 0.0 {
            cpu_s * 1e6 / calls
        } else {
            0.0
        },
        cpu_utilisation: worst(|c| c.cpu_utilisation),
        engine_utilisation: worst(|c| c.engine_utilisation),
        lag_p99_us: worst(|c| c.lag_p99_us),
        lag_max_us: worst(|c| c.lag_max_us),
        lag_mean_us: worst(|c| c.lag_mean_us),
        host_steal: ranks
            .iter()
            .filter_map(|r| r.client.host_steal)
            .reduce(f64::max),
        client_bound: bound.is_some(),
        reason: bound.map(|r| {
            format!(
                "rank {} on {}: {}",
                r.rank,
                r.host,
                r.client.reason.as_deref().unwrap_or("client-bound")
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::ranks::RankPlace;

    fn part(host: &str, cores: usize, host_cores: usize, cpu_s: f64) -> RankPart {
        let mut part = RankPart::new(RankPlace {
            host: host.to_owned(),
            clients: 1,
            cores,
            host_cores,
            busy_poll: false,
        });
        part.time.cpu = Duration::from_secs_f64(cpu_s);
        part
    }

    #[test]
    fn ranks_sharing_a_host_share_its_cores() {
        let second = Duration::from_secs(1);
        // Four unbound ranks on a 2-core host, each at half a core: each alone used 25%
        // of the cores it sees, together all of them.
        let unbound: Vec<_> = (0..4).map(|_| part("a", 2, 2, 0.5)).collect();
        let why = crowded_host(&unbound, second).expect("the host is full");
        assert!(
            why.starts_with("ranks 0, 1, 2, 3 on a together used 100% of its 2 cores"),
            "{why}"
        );
        // Two ranks bound to one core each on a 4-core host: their two cores are full.
        let bound = [part("b", 1, 4, 0.95), part("b", 1, 4, 0.95)];
        assert!(crowded_host(&bound, second).is_some());
        // The same use spread over two hosts, or under the limit, is not.
        let spread = [part("a", 2, 2, 0.9), part("b", 2, 2, 0.9)];
        assert_eq!(crowded_host(&spread, second), None);
        let light: Vec<_> = (0..4).map(|_| part("a", 2, 2, 0.4)).collect();
        assert_eq!(crowded_host(&light, second), None);
        // Busy-polling ranks fill their cores whatever their clients do: what counts is
        // how busy their clients kept them.
        let polling = |busy_s: f64| -> Vec<RankPart> {
            (0..4)
                .map(|_| {
                    let mut p = part("a", 2, 2, 1.0);
                    p.place.busy_poll = true;
                    p.time.busy = Duration::from_secs_f64(busy_s);
                    p
                })
                .collect()
        };
        assert_eq!(crowded_host(&polling(0.3), second), None);
        assert!(crowded_host(&polling(0.5), second).is_some());
    }

    #[test]
    fn an_in_process_engines_calls_are_not_metabenchs_cpu() {
        let second = Duration::from_secs(1);
        // One core full, 80 % of it in SQLite's calls: the engine's, not metabench's.
        let mut sqlite = part("a", 1, 2, 1.0);
        sqlite.time.engine_calls = Duration::from_millis(800);
        let check = client_check(&sqlite, second);
        assert!(!check.client_bound, "{:?}", check.reason);
        assert!((check.cpu_utilisation - 1.0).abs() < 1e-9, "still reported");
        assert!((check.engine_utilisation - 0.8).abs() < 1e-9);
        // Metabench's own 95 % is flagged, with the engine's share said apart.
        sqlite.time.engine_calls = Duration::from_millis(50);
        let reason = client_check(&sqlite, second).reason.expect("bound");
        assert!(
            reason.starts_with("metabench used 95% of the cores"),
            "{reason}"
        );
        assert!(reason.contains("another 5%, are left out"), "{reason}");
        // Nor do ranks that share a host count their engine's calls as theirs.
        let mut crowded: Vec<_> = (0..4).map(|_| part("a", 2, 2, 0.5)).collect();
        assert!(crowded_host(&crowded, second).is_some());
        for p in &mut crowded {
            p.time.engine_calls = Duration::from_millis(300);
        }
        assert_eq!(crowded_host(&crowded, second), None);
    }

    #[test]
    fn busy_polling_is_judged_by_its_busy_time_and_lag_not_its_cpu() {
        let second = Duration::from_secs(1);
        let mut full = part("a", 1, 2, 1.0);
        full.time.busy = Duration::from_millis(400);
        assert!(client_check(&full, second).client_bound);
        full.place.busy_poll = true;
        let check = client_check(&full, second);
        assert!(!check.client_bound, "{:?}", check.reason);
        assert!(
            check.cpu_utilisation > 0.9,
            "the CPU share is still reported"
        );
        // Clients that keep the polling thread busy are what bounds it.
        let mut busy = part("a", 1, 2, 1.0);
        busy.place.busy_poll = true;
        busy.time.busy = Duration::from_millis(950);
        let reason = client_check(&busy, second)
            .reason
            .expect("bound by its clients");
        assert!(
            reason.starts_with("metabench's clients' threads were busy running them 95%"),
            "{reason}"
        );
        // A starved busy-polling thread still shows, in its lag.
        full.lag.record(50_000_000).unwrap();
        let check = client_check(&full, second);
        assert!(check.client_bound);
        assert!(check.reason.unwrap().starts_with("scheduling lag"));
    }

    #[test]
    fn host_steal_comes_from_proc_stat_and_is_said_with_the_lag() {
        // A 2-CPU guest's first line; the per-CPU lines after it are not summed again.
        let start = "cpu  100 5 50 800 10 1 4 30 7 0\ncpu0 50 2 25 400 5 0 2 15 3 0\n";
        let end = "cpu  150 5 70 900 10 1 4 60 9 0\ncpu0 1 1 1 1 1 1 1 1 1 1\n";
        let start = HostTicks::parse(start).expect("parsed");
        assert_eq!(
            start,
            HostTicks {
                total: 1000,
                steal: 30
            }
        );
        let window = HostTicks::parse(end).unwrap().since(start);
        assert_eq!(
            window,
            HostTicks {
                total: 200,
                steal: 30
            }
        );
        assert_eq!(window.steal_share(), Some(0.15));
        assert_eq!(window.plus(window).steal_share(), Some(0.15));
        // Kernels without a steal column, and a span too short to tick, give none.
        assert_eq!(HostTicks::parse("cpu  1 2 3 4 5 6 7\n"), None);
        assert_eq!(HostTicks::default().steal_share(), None);
        assert!(HostTicks::read().is_some(), "this test runs on Linux");

        let second = Duration::from_secs(1);
        let mut lagging = part("a", 1, 2, 0.1);
        lagging.lag.record(5_000_000).unwrap();
        lagging.time.host_ticks = Some(window);
        let check = client_check(&lagging, second);
        assert_eq!(check.host_steal, Some(0.15));
        let reason = check.reason.expect("lag over the limit");
        assert!(
            reason.contains("the hypervisor held back 15% of this host's CPU time"),
            "{reason}"
        );
        // Steal below the notice is recorded, not said.
        lagging.time.host_ticks = Some(HostTicks {
            total: 1000,
            steal: 10,
        });
        let check = client_check(&lagging, second);
        assert_eq!(check.host_steal, Some(0.01));
        assert!(!check.reason.unwrap().contains("hypervisor"));
        // Several ranks: the worst host's.
        let rank = |host_steal| RankLevel {
            client: ClientCheck {
                host_steal,
                ..Default::default()
            },
            ..Default::default()
        };
        let level = level_client_check(&[rank(Some(0.02)), rank(None), rank(Some(0.3))], 10);
        assert_eq!(level.host_steal, Some(0.3));
    }
}
