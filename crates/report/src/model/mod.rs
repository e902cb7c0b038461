//! The results file: versioned JSON, written by every run and read by reports.

mod any_results;
mod breakdown;
mod header;
mod latency;
mod ops;
mod read;
mod sweep;

pub use any_results::AnyResults;
pub use breakdown::{Breakdown, BREAKDOWN_PARTS};
pub use header::{
    cpu_list, mib, EngineInfo, Footprint, HostInfo, ReachRecord, ReadsFrom, RunHeader,
    SCHEMA_VERSION,
};
pub use latency::Latency;
pub use ops::{ClientLag, OpResult, OpsPlan, OpsResults};
pub use read::{kind_of, read_results_of};
pub use sweep::{
    peak_rss_bytes, BackgroundWork, ClientCheck, Disruption, EngineCheck, Floor, IntervalSample,
    Level, LevelOp, MpiRun, RankLevel, RunFailure, ServiceTime, SweepPlan, SweepResults,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn ops_json() -> serde_json::Value {
        let run = OpsResults {
            header: RunHeader::new(
                "ops",
                "2026-11-24T00:00:00Z".into(),
                EngineInfo::default(),
                None,
            ),
            ..Default::default()
        };
        serde_json::to_value(&run).unwrap()
    }

    #[test]
    fn a_host_says_where_its_client_threads_ran_beside_the_engines_server() {
        let mut host = HostInfo {
            hostname: "vm".into(),
            cores: 4,
            client_threads: 3,
            memory_bytes: 1 << 30,
            os: "Linux".into(),
            ..Default::default()
        };
        assert_eq!(
            host.summary(),
            "vm (4 cores, 3 client threads, 1.0 GiB, Linux)"
        );
        // Placed by the kernel: nothing is written, and files from before read back.
        let json = serde_json::to_value(&host).unwrap();
        assert!(json.get("client_cpus").is_none() && json.get("engine_cpus").is_none());
        host.client_cpus = vec![1, 2, 3];
        host.engine_cpus = vec![0];
        assert_eq!(
            host.summary(),
            "vm (4 cores, 3 client threads on CPU 1-3 (the engine's server on CPU 0), 1.0 GiB, \
             Linux)"
        );
        let back: HostInfo = serde_json::from_value(serde_json::to_value(&host).unwrap()).unwrap();
        assert_eq!(back, host);
        assert_eq!(cpu_list(&[0, 2, 3, 4, 7]), "0,2-4,7");
    }

    #[test]
    fn the_engines_settings_read_back_also_under_their_old_name_and_differences_are_said() {
        let mut v = ops_json();
        v["engine"]["settings"] = serde_json::json!({"appendfsync": "always"});
        v["engine"]["location"] = "loopback".into();
        let now = OpsResults::from_json(&v.to_string()).unwrap();
        assert_eq!(now.header.engine.settings["appendfsync"], "always");
        let engine = v["engine"].as_object_mut().unwrap();
        let settings = engine.remove("settings").unwrap();
        engine.insert("durability".into(), settings);
        engine.remove("location");
        let before = OpsResults::from_json(&v.to_string()).unwrap();
        assert_eq!(before.header.engine.settings, now.header.engine.settings);
        // A value of the wrong shape under the old name is still refused.
        v["engine"]["durability"]["appendfsync"] = serde_json::json!({"surprise": 1});
        assert!(OpsResults::from_json(&v.to_string()).is_err());

        let (a, mut b) = (now.header.engine.clone(), now.header.engine.clone());
        assert!(a.setup_differences(&b).is_empty());
        b.settings.insert("appendfsync".into(), "everysec".into());
        b.settings.insert("io-threads".into(), "4".into());
        b.cpu_sharing = "no (redis-server on CPU 0, the client threads on CPU 1)".into();
        assert_eq!(
            a.setup_differences(&b),
            [
                "the engine's appendfsync differs: baseline always, current everysec",
                "recorded by one run only, not compared: io-threads (current only), CPU sharing",
            ]
        );
        assert_eq!(
            before.header.engine.setup_differences(&a),
            ["recorded by one run only, not compared: location"]
        );
    }

    #[test]
    fn the_header_sits_at_the_top_level_and_reads_back() {
        let v = ops_json();
        assert_eq!(
            (&v["kind"], &v["schema_version"]),
            (&"ops".into(), &SCHEMA_VERSION.into())
        );
        assert!(v["host"]["cores"].as_u64().unwrap() >= 1);
        let back = OpsResults::from_json(&v.to_string()).unwrap();
        assert_eq!(back.header.started_at, "2026-11-24T00:00:00Z");
        assert_eq!(AnyResults::from_json(&v.to_string()).unwrap().kind(), "ops");
    }

    #[test]
    fn an_ops_runs_client_lag_reads_back_and_results_from_before_it_still_read() {
        let before = ops_json();
        assert!(before.get("client_lag").is_none(), "{before}");
        assert_eq!(
            OpsResults::from_json(&before.to_string())
                .unwrap()
                .client_lag,
            None
        );
        let mut run = OpsResults::from_json(&before.to_string()).unwrap();
        run.client_lag = Some(ClientLag {
            samples: 300,
            p99_us: 2500.0,
            max_us: 4100.0,
            reason: Some("scheduling lag p99 2.5 ms".into()),
        });
        let text = serde_json::to_string(&run).unwrap();
        assert_eq!(OpsResults::from_json(&text).unwrap(), run);
        let mut stranger = serde_json::to_value(&run).unwrap();
        stranger["client_lag"]["p50_us"] = 1.into();
        assert!(OpsResults::from_json(&stranger.to_string())
            .unwrap_err()
            .contains("unknown field `p50_us`"));
    }

    #[test]
    fn one_check_refuses_another_kind_a_newer_layout_and_unknown_fields() {
        let v = ops_json();
        let e = SweepResults::from_json(&v.to_string()).unwrap_err();
        assert_eq!(e, "results file holds a 'ops' run, not a 'sweep' run");
        let mut newer = v.clone();
        newer["schema_version"] = (SCHEMA_VERSION + 1).into();
        assert!(OpsResults::from_json(&newer.to_string())
            .unwrap_err()
            .contains("newer than this metabench understands"));
        let mut extra = v.clone();
        extra["surprise"] = 1.into();
        assert_eq!(
            OpsResults::from_json(&extra.to_string()).unwrap_err(),
            "not a metabench results file: unknown field `surprise`"
        );
        // Fields left out when empty may be written empty, by hand or by older files.
        let mut empty = v.clone();
        empty["engine"]["client_profile"] = "".into();
        empty["engine"]["fidelity_notes"] = serde_json::json!([]);
        OpsResults::from_json(&empty.to_string()).unwrap();
        let mut nested = v.clone();
        nested["host"]["surprise"] = 1.into();
        assert!(OpsResults::from_json(&nested.to_string())
            .unwrap_err()
            .contains("unknown field `surprise`"));
        // A record whose latency fields are flattened in refuses a stranger too, at any
        // depth, and a sweep's levels do.
        let mut op = v;
        let mkdir = OpResult {
            op: "mkdir".into(),
            latency: Latency {
                count: 3,
                p99_us: 9.0,
                ..Default::default()
            },
            ..Default::default()
        };
        op["results"] = serde_json::json!([mkdir]);
        assert_eq!(
            (&op["results"][0]["count"], &op["results"][0]["p99_us"]),
            (&3.into(), &9.0.into())
        );
        let back = OpsResults::from_json(&op.to_string()).unwrap();
        assert_eq!(
            (
                back.results[0].latency.count,
                back.results[0].latency.p99_us
            ),
            (3, 9.0)
        );
        op["results"][0]["p98_us"] = 1.into();
        assert_eq!(
            OpsResults::from_json(&op.to_string()).unwrap_err(),
            "not a metabench results file: unknown field `results[0].p98_us`"
        );
        let mut sweep = serde_json::to_value(SweepResults {
            header: RunHeader::new("sweep", String::new(), EngineInfo::default(), None),
            levels: vec![Level {
                ops: vec![LevelOp::default()],
                ..Default::default()
            }],
            ..Default::default()
        })
        .unwrap();
        SweepResults::from_json(&sweep.to_string()).unwrap();
        sweep["levels"][0]["ops"][0]["mean"] = 1.into();
        assert_eq!(
            SweepResults::from_json(&sweep.to_string()).unwrap_err(),
            "not a metabench results file: unknown field `levels[0].ops[0].mean`"
        );
    }
}
