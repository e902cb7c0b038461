//! Reading a results file: its kind and layout version are checked first, and a field
//! this metabench does not know, at any depth, is refused.

use super::header::SCHEMA_VERSION;
use serde::{Deserialize, Serialize};

/// The kind a results file says it holds (`ops`, `sweep`, `parity`), read before
/// anything else.
pub fn kind_of(s: &str) -> Result<Option<String>, String> {
    #[derive(Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    serde_json::from_str::<Kind>(s)
        .map(|k| k.kind)
        .map_err(|e| format!("not a metabench results file: {e}"))
}

/// Reads a results file of `kind` and layout [`SCHEMA_VERSION`] ([`read_results_of`]).
pub(super) fn read_results<T: Serialize + serde::de::DeserializeOwned>(
    s: &str,
    kind: &str,
) -> Result<T, String> {
    read_results_of(s, kind, 1..=SCHEMA_VERSION)
}

/// Reads a results file of `kind` whose layout version is in `versions`: the kind and
/// the version are checked before anything else, and a field this metabench does not
/// know, at any depth, is refused.
pub fn read_results_of<T: Serialize + serde::de::DeserializeOwned>(
    s: &str,
    kind: &str,
    versions: std::ops::RangeInclusive<u32>,
) -> Result<T, String> {
    let top: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(s).map_err(|e| format!("not a metabench results file: {e}"))?;
    let found = top.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    if found != kind {
        let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        return Err(format!(
            "results file holds a '{found}' run, not {article} '{kind}' run"
        ));
    }
    let version = top.get("schema_version").and_then(|v| v.as_u64());
    let (oldest, newest) = (u64::from(*versions.start()), u64::from(*versions.end()));
    if let Some(v) = version.filter(|&v| v > newest) {
        return Err(format!(
            "results schema version {v} is newer than this metabench understands ({newest})"
        ));
    }
    if let Some(v) = version.filter(|&v| v < oldest) {
        return Err(format!(
            "results schema version {v} is older than this metabench reads ({oldest}); run it again"
        ));
    }
    let parsed: T =
        serde_json::from_str(s).map_err(|e| format!("not a metabench results file: {e}"))?;
    let known = serde_json::to_value(&parsed).map_err(|e| e.to_string())?;
    if let Some(extra) = first_unknown(&serde_json::Value::Object(top), &known) {
        return Err(format!(
            "not a metabench results file: unknown field `{extra}`"
        ));
    }
    Ok(parsed)
}

/// Fields renamed since files were first written with them, as (old name, new name): a
/// file with the old name is read (a serde `alias`) and checked against the new one.
const RENAMED: &[(&str, &str)] = &[
    // The engine's settings, once only its durability (`EngineInfo::settings`).
    ("durability", "settings"),
];

/// Whether a JSON value carries nothing: null, `""`, `[]` or `{}`.
fn is_empty(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The first field of `input` that `known` lacks, as a path (`levels[0].ops[1].surprise`):
/// `known` is the same record as this metabench writes it back, so a field it does not
/// write is one it does not know. An empty field is no field (see [`is_empty`]).
fn first_unknown(input: &serde_json::Value, known: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match (input, known) {
        (Value::Object(input), Value::Object(known)) => {
            let known_as = |key: &str| {
                known.get(key).or_else(|| {
                    RENAMED
                        .iter()
                        .find(|(old, _)| *old == key)
                        .and_then(|(_, new)| known.get(*new))
                })
            };
            input.iter().find_map(|(key, v)| match known_as(key) {
                // A field written empty, or null, may be one this metabench leaves out
                // when empty (`skip_serializing_if`).
                None if is_empty(v) => None,
                None => Some(key.clone()),
                Some(k) => first_unknown(v, k).map(|p| {
                    if p.starts_with('[') {
                        format!("{key}{p}")
                    } else {
                        format!("{key}.{p}")
                    }
                }),
            })
        }
        (Value::Array(input), Value::Array(known)) => input
            .iter()
            .zip(known)
            .enumerate()
            .find_map(|(i, (v, k))| first_unknown(v, k).map(|p| format!("[{i}].{p}"))),
        _ => None,
    }
}
