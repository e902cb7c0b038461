//! Terminal tables in the layout of the JuiceFS docs' metadata-engine comparison, as
//! Markdown so they paste straight into a document.

use crate::model::{
    BackgroundWork, Breakdown, ClientLag, Floor, OpResult, OpsResults, BREAKDOWN_PARTS,
};
use comfy_table::{presets::ASCII_MARKDOWN, CellAlignment, Table};

/// A count with thousands separators: `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Formats a latency in µs with precision that suits its size.
pub fn fmt_us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn errors_cell(r: &OpResult) -> String {
    if r.errors.is_empty() {
        return String::new();
    }
    r.errors
        .iter()
        .map(|(k, n)| format!("{k}×{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Renders the `ops` table: one row per operation with µs/op, p50, p99 and round trips
/// per call; with a baseline, a "×base" column gives µs/op relative to it, as the JuiceFS
/// docs print "(×N)".
pub fn ops_table(run: &OpsResults, baseline: Option<&OpsResults>) -> String {
    let mut t = Table::new();
    t.load_style(ASCII_MARKDOWN);
    let mut header = vec!["op", "µs/op"];
    if baseline.is_some() {
        header.push("×base");
    }
    header.extend([
        "p50 µs",
        "p99 µs",
        "calls",
        "round trips/op",
        "retries",
        "errors",
    ]);
    t.set_header(header);
    for r in &run.results {
        let mut row: Vec<String> = vec![r.op.clone()];
        if r.skipped.is_some() {
            row.push("skipped".to_owned());
            if baseline.is_some() {
                row.push(String::new());
            }
            row.extend(std::iter::repeat_n(String::new(), 6));
            t.add_row(row);
            continue;
        }
        row.push(fmt_us(r.latency.mean_us));
        if let Some(base) = baseline {
            row.push(match base.get(&r.op) {
                Some(b) if b.skipped.is_none() && b.latency.mean_us > 0.0 => {
                    format!("×{:.2}", r.latency.mean_us / b.latency.mean_us)
                }
                _ => "n/a".to_owned(),
            });
        }
        row.extend([
            fmt_us(r.latency.p50_us),
            fmt_us(r.latency.p99_us),
            r.latency.count.to_string(),
            format!("{:.2}", r.round_trips_per_op),
            r.retries.to_string(),
            errors_cell(r),
        ]);
        t.add_row(row);
    }
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t.to_string()
}

/// The notes printed under the table: how operations were run where metabench differs
/// from a plain engine call.
pub fn ops_notes(run: &OpsResults) -> Vec<String> {
    let floor = run.floor.as_ref().map(floor_line);
    let lag = run.client_lag.as_ref().map(client_lag_line);
    floor
        .into_iter()
        .chain(lag)
        .chain(run.results.iter().flat_map(|r| {
            let skipped = r
                .skipped
                .as_ref()
                .map(|why| format!("{}: skipped: {why}", r.op));
            let note = r.note.as_ref().map(|n| format!("{}: {n}", r.op));
            skipped.into_iter().chain(note)
        }))
        .collect()
}

/// The notes printed under the `ops` table at `detail`: in full, [`ops_notes`]; tersely,
/// the floor and the client self-check, then how many operations carry a note of their
/// own (a skip, or how it was run) in one line, in place of those notes.
pub fn ops_notes_at(run: &OpsResults, detail: Detail) -> Vec<String> {
    let listed = run.results.iter().filter_map(|r| {
        Some(format!(
            "{}: {:.0} entries a call, {:.0} entries/s at the mean latency",
            r.op,
            r.entries_per_call?,
            r.entries_per_s()?
        ))
    });
    let listed: Vec<String> = listed.collect();
    if detail == Detail::Full {
        return listed.into_iter().chain(ops_notes(run)).collect();
    }
    let per_op = run
        .results
        .iter()
        .filter(|r| r.skipped.is_some() || r.note.is_some())
        .count();
    let floor = run.floor.as_ref().map(floor_line);
    let lag = run.client_lag.as_ref().map(client_lag_line);
    let noted = (per_op > 0).then(|| {
        format!(
            "{per_op} operation{} carr{} a note (skipped, or how it was run): see --verbose or \
             the JSON",
            if per_op == 1 { "" } else { "s" },
            if per_op == 1 { "ies" } else { "y" }
        )
    });
    listed
        .into_iter()
        .chain(floor)
        .chain(lag)
        .chain(noted)
        .collect()
}

/// One line on the `ops` client thread's scheduling lag, and why it is flagged if it is.
fn client_lag_line(lag: &ClientLag) -> String {
    let flag = lag
        .reason
        .as_ref()
        .map_or(String::new(), |why| format!("; CLIENT-BOUND: {why}"));
    format!(
        "client self-check: the client thread's scheduling lag p99 {} µs, max {} µs ({} samples while the operations ran, taken as a sweep takes them in its windows){flag}",
        fmt_us(lag.p99_us),
        fmt_us(lag.max_us),
        lag.samples
    )
}

/// One line on the floor: the engine's null round trip through the client path, and its
/// median with the client polling, if measured.
pub fn floor_line(f: &Floor) -> String {
    format!(
        "floor (the engine's null round trip, {} on a client's own session, {} calls): {}",
        f.request,
        f.count,
        floor_figures(f)
    )
}

/// The floor's figures: p50 and p99, then the median with the client thread polling
/// instead of sleeping (what the wake-up of the client's CPU adds is the difference).
pub fn floor_figures(f: &Floor) -> String {
    let polling = match f.polling_p50_us {
        Some(p) => format!(
            "; p50 {} µs with the client polling instead of sleeping",
            fmt_us(p)
        ),
        None => String::new(),
    };
    format!(
        "p50 {} µs, p99 {} µs{polling}",
        fmt_us(f.p50_us),
        fmt_us(f.p99_us)
    )
}

/// Per level of `op`, its disruptions ([`crate::Level::find_disruptions`], the record the
/// level's JSON keeps): the seconds of its window in which calls failed or none of its
/// phase completed, a failover or a stall, shown where it happened.
fn gaps(run: &crate::SweepResults, op: &str) -> String {
    let mut out = String::new();
    for level in &run.levels {
        let Some(r) = level.ops.iter().find(|o| o.op == op) else {
            continue;
        };
        let runs: Vec<String> = level
            .find_disruptions()
            .into_iter()
            .filter(|d| d.op == op)
            .map(|d| {
                let when = if d.from_s == d.to_s {
                    format!("second {}", d.from_s)
                } else {
                    format!("seconds {}–{}", d.from_s, d.to_s)
                };
                format!(
                    "{when} ({} failed, {} completed)",
                    d.failed_calls, d.completed_calls
                )
            })
            .collect();
        if runs.is_empty() {
            continue;
        }
        out += &format!(
            "  {} clients: calls failed or none completed in {} of the {:.0} s window\n",
            level.clients,
            runs.join(", "),
            r.window_s
        );
    }
    out
}

/// How much of a run's text the terminal shows. The results files keep every field
/// either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// The tables, each operation's peak and knee, and one line of flags: what a plain
    /// run prints.
    Terse,
    /// Everything: the USL fits, each flagged level's reason, the windows with failed
    /// or missing calls, host steal and the background work (`--verbose`).
    Full,
}

/// Renders a sweep in full ([`Detail::Full`]): per operation, one row per level with
/// throughput and latency, and a mark on levels where the generator (not the engine) was
/// the bottleneck; then why each flagged level was flagged.
pub fn sweep_table(run: &crate::SweepResults) -> String {
    sweep_text(run, Detail::Full)
}

/// One line naming the levels a run flagged: client-bound (metabench was the
/// bottleneck), engine-bound (the engine's own counters say it was), disrupted (calls
/// failed or none completed for a second or more) and host steal; `--verbose` says why.
pub fn flags_line(run: &crate::SweepResults) -> String {
    let levels = |pick: &dyn Fn(&crate::Level) -> bool| -> Vec<String> {
        run.levels
            .iter()
            .filter(|l| pick(l))
            .map(|l| l.clients.to_string())
            .collect()
    };
    let kinds = [
        ("client-bound", levels(&|l| l.client.client_bound)),
        (
            "engine-bound",
            levels(&|l| l.engine.as_ref().is_some_and(|e| e.engine_bound)),
        ),
        ("disrupted", levels(&|l| !l.find_disruptions().is_empty())),
        (
            "host steal",
            levels(&|l| l.client.notable_steal().is_some()),
        ),
    ];
    let said: Vec<String> = kinds
        .iter()
        .filter(|(_, at)| !at.is_empty())
        .map(|(kind, at)| format!("{kind} at {} clients", at.join(", ")))
        .collect();
    if said.is_empty() {
        "flags: none (no level client-bound, engine-bound, disrupted or slowed by host steal)"
            .to_owned()
    } else {
        format!("flags: {} (why: --verbose)", said.join("; "))
    }
}

/// One line on the client a run modelled and how many documented differences from it the
/// results carry, in place of the list ([`crate::EngineInfo::fidelity_lines`], which
/// `--verbose`, the JSON and the report give).
pub fn fidelity_summary(engine: &crate::EngineInfo) -> String {
    let client = match engine.profile_name() {
        Some("mount") => "a juicefs mount",
        Some("gobench") => "JuiceFS's Go benchmark client",
        _ => "the modelled client",
    };
    let profile = engine.profile_name().unwrap_or("not recorded");
    match engine.fidelity_notes.len() {
        0 => format!("client profile: {profile}; no documented difference from {client}"),
        n => format!(
            "client profile: {profile}; {n} documented difference{} from {client}: see \
             --verbose, the JSON or the report",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// The lines on the engine a run measured and the client it modelled, at `detail`: in
/// full, the engine's setup ([`crate::EngineInfo::setup_lines`]), the client's profile,
/// settings and every documented difference ([`crate::EngineInfo::fidelity_lines`]);
/// tersely, a line on each ([`crate::EngineInfo::setup_summary`], [`fidelity_summary`]).
pub fn fidelity_text(engine: &crate::EngineInfo, detail: Detail) -> Vec<String> {
    match detail {
        Detail::Full => engine
            .setup_lines()
            .into_iter()
            .chain(engine.fidelity_lines())
            .collect(),
        Detail::Terse => vec![engine.setup_summary(), fidelity_summary(engine)],
    }
}

/// Renders a sweep at `detail`: the floor, then per operation its table and its peak and
/// knee; [`Detail::Terse`] then gives one line of flags ([`flags_line`]), [`Detail::Full`]
/// the USL fits, the disrupted windows and each flagged level's reason.
pub fn sweep_text(run: &crate::SweepResults, detail: Detail) -> String {
    let full = detail == Detail::Full;
    let mut out = String::new();
    if let Some(f) = &run.floor {
        out += &floor_line(f);
        out += "\n";
    }
    for op in run.op_names() {
        let mut t = Table::new();
        t.load_style(ASCII_MARKDOWN);
        let open = run.is_open_loop();
        let mut header = vec!["clients"];
        if open {
            header.extend(["offered/s", "achieved/s"]);
        }
        header.extend([
            "ops/s",
            "mean µs",
            "p50 µs",
            "p90 µs",
            "p99 µs",
            "p99.9 µs",
            "max µs",
        ]);
        if open {
            header.extend(["service p50 µs", "service p99 µs", "pool busy"]);
        }
        header.extend([
            "round trips/op",
            "retries",
            "errors",
            "client CPU µs/op",
            "client",
            "engine",
        ]);
        t.set_header(header);
        for level in &run.levels {
            let Some(r) = level.ops.iter().find(|o| o.op == op) else {
                continue;
            };
            let mut errors = r
                .errors
                .iter()
                .map(|(k, n)| format!("{k}×{n}"))
                .collect::<Vec<_>>()
                .join(" ");
            if r.failed_max_us > 0.0 {
                errors += &format!(" (slowest {} µs)", fmt_us(r.failed_max_us));
            }
            let mut row = vec![if level.partial {
                format!("{} (partial)", level.clients)
            } else {
                level.clients.to_string()
            }];
            if open {
                let rate = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.0}"));
                row.extend([
                    rate(level.offered_ops_per_s),
                    rate(level.achieved_ops_per_s),
                ]);
            }
            row.extend([
                format!("{:.0}", r.ops_per_s),
                fmt_us(r.latency.mean_us),
                fmt_us(r.latency.p50_us),
                fmt_us(r.latency.p90_us),
                fmt_us(r.latency.p99_us),
                fmt_us(r.latency.p999_us),
                fmt_us(r.latency.max_us),
            ]);
            if open {
                let service = r.service.as_ref();
                row.extend([
                    service.map_or("-".to_owned(), |s| fmt_us(s.p50_us)),
                    service.map_or("-".to_owned(), |s| fmt_us(s.p99_us)),
                    level
                        .pool_busy
                        .map_or("-".to_owned(), |b| format!("{:.0}%", b * 100.0)),
                ]);
            }
            row.extend([
                format!("{:.2}", r.round_trips_per_op),
                r.retries.to_string(),
                errors,
                fmt_us(level.client.cpu_us_per_op),
                if level.client.client_bound {
                    "BOUND".to_owned()
                } else {
                    "ok".to_owned()
                },
                match &level.engine {
                    Some(e) if e.engine_bound => "BOUND".to_owned(),
                    Some(e) if e.counters.is_empty() => "-".to_owned(),
                    Some(_) => "ok".to_owned(),
                    None => "-".to_owned(),
                },
            ]);
            t.add_row(row);
        }
        for i in 0..t.column_count() {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        out += &format!("\n{op}\n{t}\n");
        if full {
            out += &gaps(run, &op);
        }
        if open {
            out += &open_loop_summary(run, &op);
        }
        if let Some(s) = run.saturation.get(&op) {
            out += &format!(
                "peak {:.0} ops/s at {} clients; knee (≥95% of peak) at {} clients",
                s.peak_ops_per_s, s.peak_clients, s.knee_clients
            );
            if let Some(limit) = run.plan.p99_limit_us {
                match s.p99_limit_clients {
                    Some(c) => out += &format!("; p99 above {} µs from {c} clients", fmt_us(limit)),
                    None => out += &format!("; p99 stayed below {} µs", fmt_us(limit)),
                }
            }
            out += "\n";
            if let Some(u) = s.usl.as_ref().filter(|_| full) {
                let peak = match (u.peak_clients, u.peak_ops_per_s) {
                    (Some(n), Some(x)) => format!("predicted peak {x:.0} ops/s at {n:.0} clients"),
                    (None, Some(x)) => format!(
                        "no retrograde region (κ = 0); throughput levels off towards {x:.0} ops/s"
                    ),
                    _ => "no limit predicted within the measured range".to_owned(),
                };
                out += &format!(
                    "USL fit: λ = {:.0} ops/s per client, σ = {:.4}, κ = {:.6} (R² = {:.3}); {peak}\n",
                    u.lambda, u.sigma, u.kappa, u.r2
                );
            }
        }
    }
    if !full {
        out += &flags_line(run);
        out += "\n";
        return out;
    }
    let bound: Vec<String> = run
        .levels
        .iter()
        .filter_map(|l| {
            l.client
                .reason
                .as_ref()
                .map(|r| format!("{} clients: {r}", l.clients))
        })
        .collect();
    if !bound.is_empty() {
        out += "\nBOUND marks levels where metabench itself was the bottleneck, not the engine:\n";
        for b in bound {
            out += &format!("  {b}\n");
        }
    }
    out += &host_steal(run);
    out += &breakdown_text(run);
    if run.levels.iter().any(|l| l.background.is_some()) {
        let mut t = Table::new();
        t.load_style(ASCII_MARKDOWN);
        t.set_header(["clients"].into_iter().chain(BackgroundWork::COLUMNS));
        for l in &run.levels {
            if let Some(b) = &l.background {
                let mut row = vec![l.clients.to_string()];
                row.extend(b.cells());
                t.add_row(row);
            }
        }
        out += &format!(
            "\nbackground work in the windows (session heartbeats, dir-stat and counter flushes, \
             freeing deleted files; not in the calls' latency)\n{t}\n"
        );
    }
    let engine_bound: Vec<String> = run
        .levels
        .iter()
        .filter_map(|l| {
            let e = l.engine.as_ref()?;
            let why = e.reason.as_ref().or(e.error.as_ref())?;
            Some(format!("{} clients: {why}", l.clients))
        })
        .collect();
    if !engine_bound.is_empty() {
        out +=
            "\nThe engine's own counters (engine column; BOUND: the engine was the bottleneck):\n";
        for b in engine_bound {
            out += &format!("  {b}\n");
        }
    }
    out
}

/// The levels whose host lost CPU time to its hypervisor (steal), said under the tables:
/// their latencies hold waits for a CPU that neither metabench nor the engine caused.
fn host_steal(run: &crate::SweepResults) -> String {
    let stolen: Vec<String> = run
        .levels
        .iter()
        .filter_map(|l| {
            l.client
                .notable_steal()
                .map(|s| format!("{} clients {:.0}%", l.clients, s * 100.0))
        })
        .collect();
    if stolen.is_empty() {
        return String::new();
    }
    format!(
        "\nThe hypervisor held back this host's CPU time during these levels' windows (steal, from /proc/stat): {}. Their figures include waits for a CPU that neither metabench nor the engine caused; run them again on a quieter host to compare.\n",
        stolen.join(", ")
    )
}

/// One CSV row per level and operation, with a header. `engine_call_share` is the share of
/// the clients' cores (one per client thread that runs any) that an in-process engine's
/// calls took (SQLite; 0 otherwise), as `client_cpu_utilisation` is of the same cores.
/// `host_steal` is the share of the host's CPU time its hypervisor took in the windows
/// (empty where not counted).
pub fn sweep_csv(run: &crate::SweepResults) -> String {
    let mut s = String::from(
        "engine,workload,clients,op,phase,count,ops_per_s,mean_us,p50_us,p90_us,p99_us,p999_us,max_us,round_trips_per_op,retries,errors,client_cpu_utilisation,client_bound,engine_bound,partial,timeouts,in_flight_at_end,offered_ops_per_s,achieved_ops_per_s,service_p50_us,service_p99_us,breakdown_client_us,breakdown_lock_wait_us,breakdown_wire_us,breakdown_engine_us,breakdown_client_wait_us,breakdown_retry_waste_us,breakdown_unexplained_us,engine_call_share,host_steal\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.2}"));
    for level in &run.levels {
        for r in &level.ops {
            let errors: u64 = r.errors.values().sum();
            s += &format!(
                "{},{},{},{},{},{},{:.1},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.3},{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{:.3},{}\n",
                run.header.engine.kind,
                run.plan.workload.replace(',', ";"),
                level.clients,
                r.op,
                r.phase,
                r.latency.count,
                r.ops_per_s,
                r.latency.mean_us,
                r.latency.p50_us,
                r.latency.p90_us,
                r.latency.p99_us,
                r.latency.p999_us,
                r.latency.max_us,
                r.round_trips_per_op,
                r.retries,
                errors,
                level.client.cpu_utilisation,
                level.client.client_bound,
                level.engine.as_ref().is_some_and(|e| e.engine_bound),
                level.partial,
                r.errors.get("timeout").copied().unwrap_or(0),
                r.in_flight_at_end,
                opt(level.offered_ops_per_s),
                opt(level.achieved_ops_per_s),
                opt(r.service.as_ref().map(|v| v.p50_us)),
                opt(r.service.as_ref().map(|v| v.p99_us)),
                breakdown_cells(r.breakdown.as_ref()),
                level.client.engine_utilisation,
                level
                    .client
                    .host_steal
                    .map_or(String::new(), |v| format!("{v:.3}")),
            );
        }
    }
    s
}

/// A breakdown's parts as CSV cells, µs (empty: unknown, or no breakdown).
fn breakdown_cells(b: Option<&Breakdown>) -> String {
    match b {
        Some(b) => b
            .parts()
            .iter()
            .map(|p| p.map_or(String::new(), |v| format!("{v:.2}")))
            .collect::<Vec<_>>()
            .join(","),
        None => ",".repeat(BREAKDOWN_PARTS.len() - 1),
    }
}

/// Where each operation's mean latency went at each level ([`Breakdown`]): one row per
/// operation and level, µs per call, "unknown" where a part cannot be measured on the
/// engine; then where the engine part came from. Empty when no level has a breakdown.
pub fn breakdown_text(run: &crate::SweepResults) -> String {
    let mut t = Table::new();
    t.load_style(ASCII_MARKDOWN);
    let mut header = vec!["op", "clients", "mean µs"];
    header.extend(BREAKDOWN_PARTS);
    t.set_header(header);
    let mut sources: Vec<&str> = Vec::new();
    for op in run.op_names() {
        for level in &run.levels {
            let Some(b) = level
                .ops
                .iter()
                .find(|o| o.op == op)
                .and_then(|o| o.breakdown.as_ref())
            else {
                continue;
            };
            let mut row = vec![op.clone(), level.clients.to_string(), fmt_us(b.mean_us)];
            row.extend(b.parts().iter().map(|p| Breakdown::cell(*p)));
            t.add_row(row);
            if !sources.contains(&b.engine_source.as_str()) {
                sources.push(&b.engine_source);
            }
        }
    }
    if t.row_count() == 0 {
        return String::new();
    }
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = format!(
        "\nwhere the time goes (µs per call; unexplained = mean less the known parts, may be \
         negative; at high concurrency mostly queueing in the engine)\n{t}\n"
    );
    for s in sources {
        out += &format!("  engine part: {s}\n");
    }
    // An in-process engine (SQLite) has no wire; a file that does not say where its
    // engine ran gets no wire line either.
    let location = run.header.engine.location.as_str();
    let wired = !location.is_empty() && location != "in-process";
    if let Some(f) = run
        .floor
        .as_ref()
        .filter(|f| wired && f.client_cpu_us.is_some())
    {
        let cpu = f.client_cpu_us.unwrap_or(0.0);
        let engine = match f.engine_us {
            Some(e) => format!(", less the engine's own {} µs on it", fmt_us(e)),
            None => String::new(),
        };
        out += &format!(
            "  wire part: round trips × {} µs, the floor's mean {} µs ({}) less its client CPU {} µs{engine}\n",
            fmt_us(f.wire_per_round_trip_us()),
            fmt_us(f.mean_us),
            f.request,
            fmt_us(cpu),
        );
    }
    out
}

/// Where an open loop's engine stopped keeping up with the offered rate, for one operation.
fn open_loop_summary(run: &crate::SweepResults, op: &str) -> String {
    let mut kept_up = run.levels.iter().filter(|l| {
        matches!(
            (l.offered_ops_per_s, l.achieved_ops_per_s),
            (Some(o), Some(a)) if a >= 0.95 * o
        )
    });
    match kept_up.next_back() {
        Some(l) => {
            let p99 = l
                .ops
                .iter()
                .find(|o| o.op == op)
                .map_or(0.0, |o| o.latency.p99_us);
            format!(
                "open loop ({} arrivals): kept up (≥95% of offered) to {:.0} calls/s, p99 from the intended start {} µs there\n",
                run.plan.arrivals.as_deref().unwrap_or("constant"),
                l.offered_ops_per_s.unwrap_or_default(),
                fmt_us(p99)
            )
        }
        None => "open loop: the engine kept up with none of the offered rates\n".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    fn run(mean: f64) -> OpsResults {
        OpsResults::of(vec![
            OpResult {
                op: "mkdir".into(),
                latency: crate::Latency {
                    count: 10,
                    mean_us: mean,
                    p50_us: mean,
                    p99_us: mean * 2.0,
                    ..Default::default()
                },
                round_trips_per_op: 5.0,
                ..Default::default()
            },
            OpResult::skipped("resolve", "ENOTSUP"),
        ])
    }

    #[test]
    fn table_has_ratio_against_baseline() {
        let t = ops_table(&run(300.0), Some(&run(100.0)));
        assert!(t.contains("×3.00"), "{t}");
        assert!(t.contains("| mkdir"), "{t}");
        assert!(t.contains("| skipped"), "{t}");
        assert_eq!(
            ops_notes(&run(1.0)),
            vec!["resolve: skipped: ENOTSUP".to_owned()]
        );
        assert!(t.contains("5.00"));
        let plain = ops_table(&run(1.5), None);
        assert!(!plain.contains("×base"));
        assert!(plain.contains("1.50"));
    }

    #[test]
    fn an_ops_run_says_its_client_threads_lag_and_flags_it_past_the_limit() {
        let mut ops = run(1.0);
        ops.client_lag = Some(ClientLag {
            samples: 2500,
            p99_us: 41.5,
            max_us: 230.0,
            reason: None,
        });
        let notes = ops_notes(&ops);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("client self-check: the client thread's scheduling lag p99 41.5 µs, max 230 µs (2500 samples"),
            "{notes:?}"
        );
        assert!(!notes[0].contains("CLIENT-BOUND"), "{notes:?}");
        ops.client_lag.as_mut().unwrap().reason = Some("lag p99 9.1 ms > 2 ms".into());
        assert!(
            ops_notes(&ops)[0].ends_with("; CLIENT-BOUND: lag p99 9.1 ms > 2 ms"),
            "{:?}",
            ops_notes(&ops)
        );
    }

    #[test]
    fn levels_whose_host_lost_cpu_to_steal_say_so() {
        let level = |clients: u32, host_steal: Option<f64>| crate::Level {
            clients,
            ops: vec![crate::LevelOp {
                op: "getattr".into(),
                ..Default::default()
            }],
            client: crate::ClientCheck {
                host_steal,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut sweep = crate::SweepResults {
            levels: vec![level(1, Some(0.01)), level(4, Some(0.2)), level(8, None)],
            ..Default::default()
        };
        let text = sweep_table(&sweep);
        assert!(
            text.contains("(steal, from /proc/stat): 4 clients 20%."),
            "{text}"
        );
        assert!(!text.contains("1 clients 1%"), "below the notice: {text}");
        let csv = sweep_csv(&sweep);
        let rows: Vec<&str> = csv.lines().collect();
        assert!(rows[0].ends_with(",host_steal"));
        assert!(rows[1].ends_with(",0.010"), "{}", rows[1]);
        assert!(rows[2].ends_with(",0.200"), "{}", rows[2]);
        assert!(rows[3].ends_with(','), "not counted: {}", rows[3]);
        sweep.levels.truncate(1);
        assert!(!sweep_table(&sweep).contains("steal"));
    }

    /// The breakdown table says each part, "unknown" for one not measured (never 0), a
    /// negative unexplained part as it is, and where the engine part came from; the CSV
    /// has the parts as columns, empty where unknown.
    #[test]
    fn breakdowns_show_unknown_parts_and_negative_remainders() {
        let mut b = Breakdown {
            mean_us: 50.0,
            client_us: Some(10.0),
            lock_wait_us: Some(0.0),
            wire_us: Some(45.0),
            engine_us: None,
            client_wait_us: Some(0.0),
            retry_waste_us: Some(0.0),
            engine_source: "engine time unknown: test".into(),
            ..Default::default()
        };
        b.explain();
        let run = crate::SweepResults {
            levels: vec![crate::Level {
                clients: 4,
                ops: vec![crate::LevelOp {
                    op: "getattr".into(),
                    breakdown: Some(b),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let text = breakdown_text(&run);
        let row = text.lines().find(|l| l.contains("getattr")).unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(
            cells[1..11],
            ["getattr", "4", "50.0", "10.0", "0.0", "45.0", "unknown", "0.0", "0.0", "-5.0"],
            "{text}"
        );
        assert!(
            text.contains("engine part: engine time unknown: test"),
            "{text}"
        );
        assert!(sweep_text(&run, Detail::Full).contains("where the time goes"));
        assert!(!sweep_text(&run, Detail::Terse).contains("where the time goes"));
        let csv = sweep_csv(&run);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(header.len(), row.len());
        let at = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(at("breakdown_engine_us"), "");
        assert_eq!(at("breakdown_wire_us"), "45.00");
        assert_eq!(at("breakdown_unexplained_us"), "-5.00");
        assert!(breakdown_text(&crate::SweepResults::default()).is_empty());
    }
}
