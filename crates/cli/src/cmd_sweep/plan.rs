//! What a sweep is asked to do, read and checked from its arguments before anything is
//! written: the client threads, the workload, the levels and the plan that results
//! files record.

use super::args::SweepArgs;
use crate::args::{check_output_path, ClientSettings};
use crate::error::{input, CliError};
use crate::open_files::{check_open_files, files_per_client, raise_open_files};
use crate::threads::client_threads;
use metabench_engine::ClientProfile;
use metabench_load::team::launched_by_mpi;
use metabench_load::{Exec, Op, Workload};
use metabench_report::Floor;
use metabench_report::SweepPlan;
use std::path::PathBuf;

/// What a sweep is asked to do, read from its arguments before anything is written.
pub(super) struct Prepared {
    /// The client threads ([`client_threads`]), started before anything is written, and
    /// why there are that many and where they run.
    pub(super) exec: Exec,
    pub(super) threads_why: String,
    pub(super) workload: Workload,
    pub(super) levels: Vec<u32>,
    pub(super) settings: ClientSettings,
    pub(super) plan: SweepPlan,
}

/// Reads and checks the arguments; only the `writer` (rank 0) checks the outputs, which it
/// alone writes.
pub(super) fn prepare(args: &SweepArgs, writer: bool) -> Result<Prepared, CliError> {
    if writer {
        for p in [&args.json, &args.csv].into_iter().flatten() {
            check_output_path(p)?;
        }
        if let Some(dir) = &args.hdr_dir {
            if !dir.is_dir() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    input(format!("cannot create --hdr-dir {}: {e}", dir.display()))
                })?;
            }
        }
    }
    let workload = match (&args.workload, args.ops.is_empty()) {
        (Some(name), _) => {
            Workload::resolve(name, &[PathBuf::from("configs/workloads")]).map_err(input)?
        }
        (None, false) => Workload::from_ops(&args.ops),
        (None, true) => Workload::from_ops(&[Op::Create, Op::Getattr]),
    };
    let conc = args.conc();
    // An open loop without --conc has its pool picked once the floor is known.
    let levels = conc.as_ref().map_or(Vec::new(), |c| c.levels().to_vec());
    if let (Some(_), Some(conc)) = (&args.rate, &conc) {
        if levels.len() != 1 {
            return Err(input(format!(
                "with --rate, --conc is the fixed client pool: give one number (e.g. --conc 64), not {conc}"
            )));
        }
    }
    if args.rate.is_some() && conc.is_none() && launched_by_mpi() {
        return Err(input(
            "under MPI, --rate needs --conc (the fixed client pool of all ranks, e.g. --conc 64)",
        ));
    }
    // Every worker holds its connection from its level on (sessions stay open for the
    // next level): the highest level, or the largest pool an open loop may pick. Under
    // MPI each rank holds only its share, which the ranks learn later.
    if !launched_by_mpi() {
        let clients = levels.iter().copied().max().unwrap_or(MAX_POOL);
        check_open_files(
            raise_open_files(),
            u64::from(clients),
            files_per_client(args.volume.meta.as_deref()),
        )?;
    }
    let settings = ClientSettings {
        threads_per_client: args.threads_per_client,
        ..args.client.profile.settings(ClientProfile::Mount)
    };
    let plan = SweepPlan {
        conc: conc.map_or_else(|| "picked from the floor".to_owned(), |c| c.to_string()),
        levels: levels.clone(),
        workload: workload.name.clone(),
        phases: workload
            .phases
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    p.ops
                        .iter()
                        .map(|(o, w)| (o.name().to_owned(), *w))
                        .collect(),
                )
            })
            .collect(),
        warmup_s: args.warmup.as_secs_f64(),
        duration_s: args.duration.as_secs_f64(),
        shared_dir: args.shared_dir,
        engine_counters_off: args.no_engine_counters,
        threads_per_client: args.threads_per_client,
        p99_limit_us: args.p99_limit.map(|d| d.as_secs_f64() * 1e6),
        until_plateau: args.until_plateau,
        client_cache: settings.session.client_cache,
        op_timeout_s: args.client.op_timeout.as_secs_f64(),
        rate: args.rate.as_ref().map(ToString::to_string),
        arrivals: args.rate.as_ref().map(|_| args.arrivals.name().to_owned()),
    };
    let (exec, threads_why) = client_threads(&args.client, &args.volume)?;
    Ok(Prepared {
        exec,
        threads_why,
        workload,
        levels,
        settings,
        plan,
    })
}

/// Round trips a metadata call may take, for sizing an open loop's pool: JuiceFS's
/// heaviest common operations (rename, unlink of a file with data) take about this many.
const ROUND_TRIPS_PER_CALL: f64 = 8.0;

/// Headroom over the pool that would just keep up: calls slower than the floor's
/// multiple (queueing, the engine's work) still find a free client.
const POOL_HEADROOM: f64 = 2.0;

/// The smallest pool picked: an engine whose floor is a few µs (in-process) still gets
/// clients to overlap calls.
const MIN_POOL: u32 = 4;

/// The largest pool picked; more takes `--conc`.
const MAX_POOL: u32 = 1024;

/// The fixed client pool of an open loop given no `--conc`: enough clients for the
/// highest of `rates` if each call took [`ROUND_TRIPS_PER_CALL`] of the floor's mean, with
/// [`POOL_HEADROOM`] (Little's law: clients = rate × time per call), within
/// [`MIN_POOL`]..=[`MAX_POOL`]; [`MAX_POOL`] without a floor. Returns the pool and the
/// line that says how it was picked.
pub(super) fn open_loop_pool(rates: &[u32], floor: Option<&Floor>) -> (u32, String) {
    let rate = f64::from(rates.iter().copied().max().unwrap_or(1));
    match floor {
        Some(f) => {
            let call_s = ROUND_TRIPS_PER_CALL * f.mean_us / 1e6;
            let pool = (rate * call_s * POOL_HEADROOM).ceil();
            let pool = (pool as u32).clamp(MIN_POOL, MAX_POOL);
            (
                pool,
                format!(
                    "open loop pool: {pool} clients, picked for {rate:.0} calls/s at the floor's \
                     {:.1} µs ({ROUND_TRIPS_PER_CALL} round trips a call, {POOL_HEADROOM}× \
                     headroom, {MIN_POOL}..{MAX_POOL}); --conc sets it",
                    f.mean_us
                ),
            )
        }
        None => (
            MAX_POOL,
            format!("open loop pool: {MAX_POOL} clients (no floor to size it by); --conc sets it"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(mean_us: f64) -> Floor {
        Floor {
            mean_us,
            ..Default::default()
        }
    }

    #[test]
    fn an_open_loop_pool_keeps_up_with_the_highest_rate_at_the_floors_latency() {
        // 20,000 calls/s of 8 round trips of 100 µs: 16 clients busy, 32 with headroom.
        let (pool, why) = open_loop_pool(&[5_000, 20_000], Some(&floor(100.0)));
        assert_eq!(pool, 32);
        assert!(
            why.contains("32 clients") && why.contains("20000 calls/s"),
            "{why}"
        );
        // An in-process engine's µs floor gets the smallest pool, a slow one the largest.
        assert_eq!(open_loop_pool(&[20_000], Some(&floor(1.0))).0, MIN_POOL);
        assert_eq!(
            open_loop_pool(&[1_000_000], Some(&floor(500.0))).0,
            MAX_POOL
        );
        assert_eq!(open_loop_pool(&[100], None).0, MAX_POOL);
    }
}
