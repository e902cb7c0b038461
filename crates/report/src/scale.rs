//! The scale curve (`metabench scale`): one volume measured at growing sizes. Each size
//! has its own sweep results file (which `report` and `compare` read like any other);
//! this is the curve across them, as `scale.json` keeps it, its tables and its plots.

use crate::model::{mib, Footprint, SweepResults};
use crate::plot::{CategorySeries, Plot};
use crate::table::{fmt_us, thousands};
use serde::{Deserialize, Serialize};

/// The plots' x axis: the sizes, in entries of the scale tree (not what the volume held
/// before).
const SIZES_AXIS: &str = "entries in the scale tree";

/// The curve: the engine, and one point per size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleCurve {
    /// The engine, as the first size's results name it (`redis redis 7.0.15`).
    pub engine: String,
    /// Where the tree grew: `/scale-<run>`, or `/.metabench/scale-<run>` of an existing
    /// volume.
    pub tree: String,
    /// The sizes, ascending.
    pub sizes: Vec<ScaleSize>,
}

/// One size of the volume and what was measured there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleSize {
    /// Entries the tree held (files, symlinks and hard links; directories apart).
    pub files: u64,
    /// Seconds the fill that grew the tree to this size took (0 for none).
    pub fill_s: f64,
    /// What the engine held right after the fill that made this size, before the sweep
    /// (whose own traces a table's size keeps: PostgreSQL's and InnoDB's files do not
    /// shrink back), by its own count.
    pub footprint: Option<Footprint>,
    /// Bytes the engine holds per entry of the tree, beyond what it held at the first
    /// size: (held − held at the first size) / (files − files at the first size). None at
    /// the first size and where the engine keeps no figure.
    pub bytes_per_file: Option<f64>,
    /// The sweep's results file, beside `scale.json`.
    pub results: String,
    /// Each operation at each level of that sweep.
    pub points: Vec<ScalePoint>,
}

/// One operation at one level of a size's sweep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalePoint {
    /// The operation.
    pub op: String,
    /// Clients of the level.
    pub clients: u32,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Throughput, calls per second.
    pub ops_per_s: f64,
}

impl ScaleSize {
    /// A size's point: `files` in the tree after a fill of `fill_s` seconds, the engine
    /// holding `held`, and the sweep `run` there (written to `results`).
    pub fn of(
        files: u64,
        fill_s: f64,
        held: Footprint,
        results: String,
        run: &SweepResults,
    ) -> Self {
        Self {
            files,
            fill_s,
            footprint: Some(held),
            bytes_per_file: None,
            results,
            points: run
                .levels
                .iter()
                .flat_map(|l| {
                    l.ops.iter().map(move |o| ScalePoint {
                        op: o.op.clone(),
                        clients: l.clients,
                        p50_us: o.latency.p50_us,
                        p99_us: o.latency.p99_us,
                        ops_per_s: o.ops_per_s,
                    })
                })
                .collect(),
        }
    }

    /// `op`'s highest throughput over the levels at this size; none where it was not
    /// measured.
    fn peak(&self, op: &str) -> Option<f64> {
        self.points
            .iter()
            .filter(|p| p.op == op)
            .map(|p| p.ops_per_s)
            .reduce(f64::max)
    }
}

impl ScaleCurve {
    /// Adds the next size, its bytes per file counted against the first size's figure.
    pub fn push(&mut self, mut size: ScaleSize) {
        let bytes = |s: &ScaleSize| s.footprint.as_ref().and_then(|f| f.bytes);
        size.bytes_per_file = match (self.sizes.first(), bytes(&size)) {
            (Some(first), Some(b)) if size.files > first.files => {
                bytes(first).map(|b0| (b as f64 - b0 as f64) / (size.files - first.files) as f64)
            }
            _ => None,
        };
        self.sizes.push(size);
    }

    /// The operations measured, in their first appearance's order, and the levels.
    fn ops_and_levels(&self) -> (Vec<String>, Vec<u32>) {
        let (mut ops, mut levels) = (Vec::new(), Vec::new());
        for p in self.sizes.iter().flat_map(|s| &s.points) {
            if !ops.contains(&p.op) {
                ops.push(p.op.clone());
            }
            if !levels.contains(&p.clients) {
                levels.push(p.clients);
            }
        }
        levels.sort_unstable();
        (ops, levels)
    }

    /// The curve as two Markdown tables: what the engine held at each size, then each
    /// operation's p50 / p99 at each level and its peak throughput.
    pub fn text(&self) -> String {
        let mut out =
            String::from("| files | fill | engine held | bytes per file |\n|---:|---:|---|---:|\n");
        for s in &self.sizes {
            let held = s.footprint.as_ref().map_or_else(
                || "not recorded".to_owned(),
                |f| match f.bytes {
                    Some(b) => mib(b),
                    None => f.what.clone(),
                },
            );
            let per_file = s
                .bytes_per_file
                .map_or_else(|| "—".to_owned(), |b| format!("{b:.0}"));
            let fill = if s.fill_s > 0.0 {
                format!("{:.1} s", s.fill_s)
            } else {
                "—".to_owned()
            };
            out += &format!(
                "| {} | {fill} | {held} | {per_file} |\n",
                thousands(s.files)
            );
        }
        if let Some(what) = self
            .sizes
            .iter()
            .find_map(|s| s.footprint.as_ref().filter(|f| f.bytes.is_some()))
        {
            out += &format!("engine held: {}\n", what.what);
        }
        let (ops, levels) = self.ops_and_levels();
        out += "\n| op | files |";
        for c in &levels {
            out += &format!(" p50 µs @{c} | p99 µs @{c} |");
        }
        out += " peak ops/s |\n|---|---:|";
        out += &"---:|".repeat(levels.len() * 2 + 1);
        out += "\n";
        for op in &ops {
            for s in &self.sizes {
                let mut row = format!("| {op} | {} |", thousands(s.files));
                for c in &levels {
                    match s.points.iter().find(|p| &p.op == op && p.clients == *c) {
                        Some(p) => {
                            row += &format!(" {} | {} |", fmt_us(p.p50_us), fmt_us(p.p99_us))
                        }
                        None => row += " — | — |",
                    }
                }
                let peak = s
                    .peak(op)
                    .map_or_else(|| "—".to_owned(), |p| thousands(p.round() as u64));
                row += &format!(" {peak} |\n");
                out += &row;
            }
        }
        out
    }

    /// The plots: per operation its p50 and p99 at each level against the size
    /// (`scale-OP.svg`), its peak throughput (`scale-throughput.svg`), and the engine's
    /// bytes per file (`scale-bytes.svg`) where known.
    pub fn plots(&self) -> Result<Vec<Plot>, String> {
        let sizes: Vec<String> = self.sizes.iter().map(|s| thousands(s.files)).collect();
        let (ops, levels) = self.ops_and_levels();
        let mut plots = Vec::new();
        for op in &ops {
            let mut series = Vec::new();
            for (k, c) in levels.iter().enumerate() {
                for (q, name) in [(0usize, "p50"), (1, "p99")] {
                    let points: Vec<(f64, f64)> = self
                        .sizes
                        .iter()
                        .enumerate()
                        .filter_map(|(x, s)| {
                            let p = s.points.iter().find(|p| &p.op == op && p.clients == *c)?;
                            Some((x as f64, if q == 0 { p.p50_us } else { p.p99_us }))
                        })
                        .collect();
                    series.push((format!("{name}, {c} clients"), k * 2 + q, points));
                }
            }
            let title = format!("{}: {op}, latency as the volume grows", self.engine);
            plots.push(Plot {
                file: format!("scale-{op}.svg"),
                svg: crate::plot::by_category(&title, SIZES_AXIS, &sizes, "µs", &series, true)?,
                title,
            });
        }
        let peaks: Vec<CategorySeries> = ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                let points = self
                    .sizes
                    .iter()
                    .enumerate()
                    .filter_map(|(x, s)| Some((x as f64, s.peak(op)?)))
                    .collect();
                (op.clone(), i, points)
            })
            .collect();
        let title = format!("{}: peak throughput as the volume grows", self.engine);
        plots.push(Plot {
            file: "scale-throughput.svg".into(),
            svg: crate::plot::by_category(&title, SIZES_AXIS, &sizes, "ops/s", &peaks, false)?,
            title,
        });
        let bytes: Vec<(f64, f64)> = self
            .sizes
            .iter()
            .enumerate()
            .filter_map(|(x, s)| Some((x as f64, s.bytes_per_file?)))
            .collect();
        if !bytes.is_empty() {
            let title = format!("{}: bytes the engine holds per file", self.engine);
            plots.push(Plot {
                file: "scale-bytes.svg".into(),
                svg: crate::plot::by_category(
                    &title,
                    SIZES_AXIS,
                    &sizes,
                    "bytes per file",
                    &[("bytes per file".to_owned(), 0, bytes)],
                    false,
                )?,
                title,
            });
        }
        Ok(plots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(files: u64, bytes: Option<u64>, p50: f64) -> ScaleSize {
        ScaleSize {
            files,
            footprint: Some(Footprint {
                bytes,
                rss_bytes: None,
                what: "test".into(),
            }),
            points: vec![ScalePoint {
                op: "getattr".into(),
                clients: 1,
                p50_us: p50,
                p99_us: p50 * 3.0,
                ops_per_s: 1e6 / p50,
            }],
            ..Default::default()
        }
    }

    /// Bytes per file count only what the tree added beyond the first size; a size
    /// whose engine keeps no figure has none, and the tables and plots say so.
    #[test]
    fn bytes_per_file_are_the_growth_over_the_first_size() {
        let mut curve = ScaleCurve {
            engine: "redis".into(),
            tree: "/scale-x".into(),
            ..Default::default()
        };
        curve.push(size(0, Some(1_000_000), 50.0));
        curve.push(size(1000, Some(1_200_000), 60.0));
        curve.push(size(2000, None, 70.0));
        assert_eq!(curve.sizes[0].bytes_per_file, None);
        assert_eq!(curve.sizes[1].bytes_per_file, Some(200.0));
        assert_eq!(curve.sizes[2].bytes_per_file, None);
        let text = curve.text();
        assert!(text.contains("| 1,000 | — | 1.1 MiB | 200 |"), "{text}");
        assert!(
            text.contains("| getattr | 2,000 | 70.0 | 210 | 14,286 |"),
            "{text}"
        );
        let plots = curve.plots().unwrap();
        let files: Vec<&str> = plots.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "scale-getattr.svg",
                "scale-throughput.svg",
                "scale-bytes.svg"
            ]
        );
        assert!(plots[0].svg.contains("p99, 1 clients"), "{}", plots[0].svg);
    }
}
