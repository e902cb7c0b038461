//! The JuiceFS docs' published mdtest rates, to set beside a parity run: the "mdtest"
//! table of "Metadata Engines Benchmark" (`docs/en/benchmark/metadata_engines_benchmark.md`
//! in juicedata/juicefs, branch release-1.4), in ops/s. The docs ran the two trees parity
//! runs at `--scale docs`: `-b 3 -z 1 -I 100 -u` ("EMPTY FILES") and
//! `-F -w 102400 -I 1000 -z 0 -u` ("SMALL FILES"), with 12 ranks on 3 client hosts through
//! FUSE, on other hardware (see [`SOURCE`]).

/// Where the figures come from and what they ran on.
pub const SOURCE: &str = "JuiceFS docs, \"Metadata Engines Benchmark\" (juicefs 1.1.0-beta1, \
mdtest 3.3.0, 12 ranks on 3 × Amazon c5.xlarge clients through FUSE, metadata on a c5d.xlarge \
with local SSD, data on S3; TiKV and etcd with 3 replicas)";

/// The docs' engine columns, in their order.
pub const ENGINES: [&str; 7] = [
    "Redis-Always",
    "Redis-Everysec",
    "MySQL",
    "PostgreSQL",
    "TiKV",
    "etcd",
    "FoundationDB",
];

/// Per tree and phase, the rates of [`ENGINES`]: `metadata` is the docs' "EMPTY FILES"
/// (`-b 3 -z 1 -I 100 -u`), `small-files` their "SMALL FILES" (`-F -w 102400 -I 1000 -z 0
/// -u`), rows in the docs' order.
const FIGURES: [(&str, &str, [f64; 7]); 15] = [
    (
        "metadata",
        "Directory creation",
        [
            4901.342, 9990.029, 1252.421, 4091.934, 4041.304, 1910.768, 3065.578,
        ],
    ),
    (
        "metadata",
        "Directory stat",
        [
            289992.466, 379692.576, 9359.278, 69384.097, 49465.223, 6500.178, 17746.670,
        ],
    ),
    (
        "metadata",
        "Directory removal",
        [
            5131.614, 10356.293, 902.077, 1254.890, 3210.518, 1450.842, 2460.604,
        ],
    ),
    (
        "metadata",
        "File creation",
        [
            5472.628, 9984.824, 1326.613, 4726.582, 4053.610, 1801.956, 2908.526,
        ],
    ),
    (
        "metadata",
        "File stat",
        [
            288951.216, 253218.558, 9135.571, 233148.252, 50432.658, 6276.787, 14939.411,
        ],
    ),
    (
        "metadata",
        "File read",
        [
            64560.148, 60861.397, 8445.953, 20013.027, 18411.280, 9094.627, 11087.931,
        ],
    ),
    (
        "metadata",
        "File removal",
        [
            6084.791, 12221.083, 1073.063, 3961.855, 3742.269, 1648.734, 2214.311,
        ],
    ),
    (
        "metadata",
        "Tree creation",
        [80.121, 83.546, 34.420, 61.937, 77.875, 56.299, 74.982],
    ),
    (
        "metadata",
        "Tree removal",
        [218.535, 95.599, 42.330, 44.696, 114.414, 76.002, 64.036],
    ),
    (
        "small-files",
        "File creation",
        [
            295.067, 312.182, 275.588, 289.627, 307.121, 275.578, 263.487,
        ],
    ),
    (
        "small-files",
        "File stat",
        [
            54069.827, 52800.108, 8760.709, 19841.728, 14076.214, 8214.318, 10009.670,
        ],
    ),
    (
        "small-files",
        "File read",
        [
            62341.568, 57998.398, 4639.571, 19244.678, 23376.733, 5477.754, 6533.787,
        ],
    ),
    (
        "small-files",
        "File removal",
        [
            5615.018, 11573.415, 1061.600, 3907.740, 3411.663, 1024.421, 1750.613,
        ],
    ),
    (
        "small-files",
        "Tree creation",
        [57.860, 57.080, 23.723, 52.621, 44.590, 19.998, 11.243],
    ),
    (
        "small-files",
        "Tree removal",
        [96.756, 65.279, 23.227, 19.511, 27.616, 17.868, 10.571],
    ),
];

/// The docs' column for the engine a run recorded: its kind, and for Redis its durability
/// settings ([`column`]).
pub fn column_of(engine: &metabench_report::EngineInfo) -> Option<usize> {
    let setting = |name: &str| engine.settings.get(name).map(String::as_str);
    column(&engine.kind, setting("appendonly"), setting("appendfsync"))
}

/// The docs' column for an engine of this kind (`redis`, `mysql`, `postgres`, `tikv`,
/// `etcd`, `fdb`), Redis by its `appendonly` and `appendfsync` (the docs ran it with the
/// AOF on); `None` for setups the docs did not run (Redis without the AOF, SQLite, memkv)
/// and for the TiKV stand-in, which is not TiKV's storage.
pub fn column(kind: &str, appendonly: Option<&str>, appendfsync: Option<&str>) -> Option<usize> {
    let name = match kind {
        "redis" => match (appendonly, appendfsync) {
            (Some("yes"), Some("always")) => "Redis-Always",
            (Some("yes"), Some("everysec")) => "Redis-Everysec",
            _ => return None,
        },
        "mysql" => "MySQL",
        "postgres" => "PostgreSQL",
        "tikv" => "TiKV",
        "etcd" => "etcd",
        "fdb" => "FoundationDB",
        _ => return None,
    };
    ENGINES.iter().position(|e| *e == name)
}

/// The docs' rate of `phase` in tree `tree` (`metadata` or `small-files`) for engine
/// column `col`, and its ratio to Redis-Always's (the docs' reference column).
pub fn figure(tree: &str, phase: &str, col: usize) -> Option<(f64, f64)> {
    let (_, _, v) = FIGURES.iter().find(|(t, p, _)| *t == tree && *p == phase)?;
    let rate = *v.get(col)?;
    Some((rate, rate / v[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_ratios_follow_the_docs() {
        let aof = Some("yes");
        assert_eq!(column("redis", aof, Some("always")), Some(0));
        assert_eq!(column("redis", aof, Some("everysec")), Some(1));
        assert_eq!(column("redis", Some("no"), Some("everysec")), None);
        assert_eq!(column("postgres", None, None), Some(3));
        assert_eq!(column("sqlite", None, None), None);
        assert_eq!(column("tikv-standin", None, None), None);
        let (rate, ratio) = figure("metadata", "File creation", 3).unwrap();
        assert_eq!(rate, 4726.582);
        assert!((ratio - 4726.582 / 5472.628).abs() < 1e-12);
        assert_eq!(figure("small-files", "File creation", 0).unwrap().1, 1.0);
        // The docs have no directory phases for small files, and no shared trees.
        assert_eq!(figure("small-files", "Directory creation", 0), None);
        assert_eq!(figure("metadata-shared", "File creation", 0), None);
    }
}
