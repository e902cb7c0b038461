//! `metabench info`: what a meta URL holds, read-only.

use crate::args::MetaArg;
use crate::error::CliError;
use metabench_engine::{open, MetaUrl, VolumeState};

/// Arguments of `metabench info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    #[command(flatten)]
    meta: MetaArg,

    /// Print one JSON object instead of lines, for scripts: `url` (its password masked),
    /// `engine`, `version`, `location`, `settings`, `content` and `footprint` (`bytes`,
    /// `rss_bytes`, `what`; `bytes` and `rss_bytes` null where the engine keeps no such
    /// figure, `what` then saying why).
    #[arg(long)]
    json: bool,
}

/// Runs `metabench info`.
pub async fn run(args: InfoArgs) -> Result<i32, CliError> {
    let url = MetaUrl::parse(&args.meta.meta)?;
    let engine = open(&url).await?;
    let info = engine.server_info().await?;
    if !args.json {
        // What is known so far is printed before the volume is read, which may fail.
        out!("url:      {url}");
        out!("engine:   {} ({})", engine.kind().name(), info.version);
        out!("where:    {}", url.location());
        for (k, v) in &info.settings {
            out!("  {k} = {v}");
        }
    }
    let content = match engine.probe().await? {
        VolumeState::Empty => "empty (metabench can format it)".to_owned(),
        VolumeState::Volume(f) => format!(
            "JuiceFS volume '{}' (UUID {}, trash days {}, dir stats {})",
            f.name, f.uuid, f.trash_days, f.dir_stats
        ),
        VolumeState::Foreign(what) => format!("not JuiceFS: {what}"),
    };
    let held = crate::volume::footprint(engine.as_ref()).await;
    if args.json {
        let object = serde_json::json!({
            "url": url.to_string(),
            "engine": engine.kind().name(),
            "version": info.version,
            "location": url.location(),
            "settings": info.settings,
            "content": content,
            "footprint": {
                "bytes": held.bytes,
                "rss_bytes": held.rss_bytes,
                "what": held.what,
            },
        });
        out!("{object:#}");
    } else {
        out!("content:  {content}");
        out!("holds:    {}", held.line());
    }
    Ok(0)
}
