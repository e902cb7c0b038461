//! `metabench format`: a new volume the real `juicefs` client accepts.

use crate::args::MetaArg;
use crate::error::{input, CliError};
use metabench_engine::{open, MetaUrl, VolumeState};
use metabench_schema::Format;

/// Arguments of `metabench format`.
#[derive(Debug, clap::Args)]
pub struct FormatArgs {
    #[command(flatten)]
    meta: MetaArg,

    /// Volume name (3 to 63 letters, digits and '-', as JuiceFS requires).
    #[arg(long, default_value = "metabench")]
    name: String,

    /// Object storage directory recorded in the volume (storage type `file`).
    #[arg(long, value_name = "DIR")]
    bucket: Option<String>,

    /// Days deleted files stay in the trash (JuiceFS's default is 1; its benchmark uses 0).
    #[arg(long, default_value_t = 0)]
    trash_days: i64,
}

fn valid_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// A new volume's format record: `name` checked, the bucket (`--bucket`, else
/// `~/.juicefs/local/`, as `juicefs format` defaults) ending in '/', a fresh UUID.
pub fn new_format(name: &str, bucket: Option<String>, trash_days: i64) -> Result<Format, CliError> {
    if !valid_name(name) {
        return Err(input(format!(
            "invalid volume name '{name}': use 3 to 63 letters, digits and '-'"
        )));
    }
    let bucket = bucket.unwrap_or_else(|| {
        let home = std::env::var("HOME").unwrap_or_else(|_| "/tmp".into());
        format!("{home}/.juicefs/local/")
    });
    let bucket = if bucket.ends_with('/') {
        bucket
    } else {
        format!("{bucket}/")
    };
    let uuid = uuid::Uuid::new_v4().to_string();
    Ok(Format::new(name, &uuid, &bucket, trash_days))
}

/// Runs `metabench format`.
pub async fn run(args: FormatArgs) -> Result<i32, CliError> {
    new_format(&args.name, None, 0)?;
    if args.trash_days < 0 {
        return Err(input("--trash-days cannot be negative"));
    }
    let url = MetaUrl::parse(&args.meta.meta)?;
    let engine = open(&url).await?;
    match engine.probe().await? {
        VolumeState::Empty => {}
        VolumeState::Volume(f) => {
            return Err(input(format!(
                "{url} already holds the JuiceFS volume '{}'; refusing to format over it",
                f.name
            )))
        }
        VolumeState::Foreign(what) => {
            return Err(input(format!(
                "{url} is not empty ({what}); refusing to format it"
            )))
        }
    }
    let format = new_format(&args.name, args.bucket, args.trash_days)?;
    let uuid = format.uuid.clone();
    engine.format(&format).await?;
    out!("formatted volume '{}' (UUID {uuid}) at {url}", args.name);
    Ok(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert!(super::valid_name("vol-1"));
        assert!(!super::valid_name("ab"));
        assert!(!super::valid_name("a_b_c"));
        assert!(!super::valid_name("-abc"));
    }
}
