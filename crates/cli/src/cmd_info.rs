//! `metabench info`: what a meta URL holds, read-only.

use crate::args::MetaArg;
use crate::error::CliError;
use metabench_engine::{open, MetaUrl, VolumeState};

/// Arguments of `metabench info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    #[command(flatten)]
    meta: MetaArg,
}

/// Runs `metabench info`.
pub async fn run(args: InfoArgs) -> Result<i32, CliError> {
    let url = MetaUrl::parse(&args.meta.meta)?;
    let engine = open(&url).await?;
    let info = engine.server_info().await?;
    out!("url:      {url}");
    out!("engine:   {} ({})", engine.kind().name(), info.version);
    out!("where:    {}", url.location());
    for (k, v) in &info.settings {
        out!("  {k} = {v}");
    }
    match engine.probe().await? {
        VolumeState::Empty => out!("content:  empty (metabench can format it)"),
        VolumeState::Volume(f) => out!(
            "content:  JuiceFS volume '{}' (UUID {}, trash days {}, dir stats {})",
            f.name,
            f.uuid,
            f.trash_days,
            f.dir_stats
        ),
        VolumeState::Foreign(what) => out!("content:  not JuiceFS: {what}"),
    }
    let held = crate::volume::footprint(engine.as_ref()).await;
    out!("holds:    {}", held.line());
    Ok(0)
}
