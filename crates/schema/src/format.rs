//! The volume setting record (`Format` in `pkg/meta/config.go`), stored under `setting`.

use serde::{Deserialize, Serialize};

/// Highest `MetaVersion` this model (and JuiceFS 1.4) understands.
pub const MAX_META_VERSION: i64 = 1;

/// Whether a field holds its zero value (`false`, 0, empty, none), which Go's `omitempty`
/// leaves out of the JSON.
fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// The volume format, field for field and in JuiceFS's order, so the JSON written here is
/// the JSON `juicefs format` writes. Fields this model does not know are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Format {
    /// Volume name.
    #[serde(rename = "Name")]
    pub name: String,
    /// Volume UUID (v4).
    #[serde(rename = "UUID", default)]
    pub uuid: String,
    /// Object storage kind, e.g. `file`.
    #[serde(rename = "Storage", default)]
    pub storage: String,
    /// Object storage class.
    #[serde(rename = "StorageClass", default, skip_serializing_if = "is_zero")]
    pub storage_class: String,
    /// Storage tiers, kept as JuiceFS wrote them.
    #[serde(rename = "Tiers", default, skip_serializing_if = "is_zero")]
    pub tiers: Option<serde_json::Value>,
    /// Bucket URL or directory.
    #[serde(rename = "Bucket", default)]
    pub bucket: String,
    /// Object storage access key.
    #[serde(rename = "AccessKey", default, skip_serializing_if = "is_zero")]
    pub access_key: String,
    /// Object storage secret key (encrypted when `KeyEncrypted`).
    #[serde(rename = "SecretKey", default, skip_serializing_if = "is_zero")]
    pub secret_key: String,
    /// Object storage session token.
    #[serde(rename = "SessionToken", default, skip_serializing_if = "is_zero")]
    pub session_token: String,
    /// Block size in KiB; must be > 0 for the real client.
    #[serde(rename = "BlockSize", default)]
    pub block_size: i64,
    /// Block compression.
    #[serde(rename = "Compression", default, skip_serializing_if = "is_zero")]
    pub compression: String,
    /// Object storage shards.
    #[serde(rename = "Shards", default, skip_serializing_if = "is_zero")]
    pub shards: i64,
    /// Hash prefix for object names.
    #[serde(rename = "HashPrefix", default, skip_serializing_if = "is_zero")]
    pub hash_prefix: bool,
    /// Capacity quota in bytes.
    #[serde(rename = "Capacity", default, skip_serializing_if = "is_zero")]
    pub capacity: u64,
    /// Inode quota.
    #[serde(rename = "Inodes", default, skip_serializing_if = "is_zero")]
    pub inodes: u64,
    /// Encryption key.
    #[serde(rename = "EncryptKey", default, skip_serializing_if = "is_zero")]
    pub encrypt_key: String,
    /// Encryption algorithm.
    #[serde(rename = "EncryptAlgo", default, skip_serializing_if = "is_zero")]
    pub encrypt_algo: String,
    /// Whether secrets are encrypted.
    #[serde(rename = "KeyEncrypted", default, skip_serializing_if = "is_zero")]
    pub key_encrypted: bool,
    /// Upload limit, Mbps.
    #[serde(rename = "UploadLimit", default, skip_serializing_if = "is_zero")]
    pub upload_limit: i64,
    /// Download limit, Mbps.
    #[serde(rename = "DownloadLimit", default, skip_serializing_if = "is_zero")]
    pub download_limit: i64,
    /// Days deleted files stay in the trash; 0 disables the trash.
    #[serde(rename = "TrashDays", default)]
    pub trash_days: i64,
    /// Metadata layout version.
    #[serde(rename = "MetaVersion", default, skip_serializing_if = "is_zero")]
    pub meta_version: i64,
    /// Oldest client allowed.
    #[serde(rename = "MinClientVersion", default, skip_serializing_if = "is_zero")]
    pub min_client_version: String,
    /// Newest client allowed.
    #[serde(rename = "MaxClientVersion", default, skip_serializing_if = "is_zero")]
    pub max_client_version: String,
    /// Whether per-directory usage is kept.
    #[serde(rename = "DirStats", default, skip_serializing_if = "is_zero")]
    pub dir_stats: bool,
    /// Whether user/group quotas are on.
    #[serde(rename = "UserGroupQuota", default, skip_serializing_if = "is_zero")]
    pub user_group_quota: bool,
    /// Whether POSIX ACLs are on.
    #[serde(rename = "EnableACL", default)]
    pub enable_acl: bool,
    /// Everything else JuiceFS may have written (Ranger, change log, Kerberos…).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Format {
    /// The record `juicefs format NAME --storage file --bucket BUCKET` writes with 1.4
    /// defaults, except that `trash_days` is the caller's (the Go benchmark uses 0).
    pub fn new(name: &str, uuid: &str, bucket: &str, trash_days: i64) -> Self {
        Self {
            name: name.to_owned(),
            uuid: uuid.to_owned(),
            storage: "file".to_owned(),
            storage_class: String::new(),
            tiers: Some(serde_json::json!({"0": {"ID": 0, "StorageClass": "", "Tag": ""}})),
            bucket: bucket.to_owned(),
            access_key: String::new(),
            secret_key: String::new(),
            session_token: String::new(),
            block_size: 4096,
            compression: "none".to_owned(),
            shards: 0,
            hash_prefix: false,
            capacity: 0,
            inodes: 0,
            encrypt_key: String::new(),
            encrypt_algo: "aes256gcm-rsa".to_owned(),
            key_encrypted: false,
            upload_limit: 0,
            download_limit: 0,
            trash_days,
            meta_version: 1,
            min_client_version: "1.1.0-A".to_owned(),
            max_client_version: String::new(),
            dir_stats: true,
            user_group_quota: false,
            enable_acl: false,
            extra: serde_json::Map::new(),
        }
    }

    /// The JSON as Go's `json.MarshalIndent(f, "", "")` prints it: one field per line.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"");
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        self.serialize(&mut ser).expect("Format always serializes");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// Parses a stored setting; fails when it is not a JuiceFS format record.
    pub fn from_json(s: &[u8]) -> Result<Self, String> {
        let f: Self =
            serde_json::from_slice(s).map_err(|e| format!("not a JuiceFS setting: {e}"))?;
        if f.name.is_empty() {
            return Err("not a JuiceFS setting: no volume Name".into());
        }
        Ok(f)
    }

    /// Checks that this model can work on the volume (`Format.CheckVersion`).
    pub fn check_version(&self) -> Result<(), String> {
        if self.meta_version > MAX_META_VERSION {
            return Err(format!(
                "incompatible metadata version {} (metabench understands up to {MAX_META_VERSION})",
                self.meta_version
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN: &str = include_str!("../testdata/redis_setting_1.4.2.json");

    #[test]
    fn reproduces_juicefs_format_json_byte_for_byte() {
        let f = Format::from_json(GOLDEN.as_bytes()).unwrap();
        assert_eq!(f.name, "golden");
        assert_eq!(f.block_size, 4096);
        assert_eq!(f.trash_days, 1);
        assert!(f.dir_stats);
        assert_eq!(f.to_json(), GOLDEN.trim_end());
        let fresh = Format::new("golden", &f.uuid, &f.bucket, 1);
        assert_eq!(fresh, f);
    }

    #[test]
    fn keeps_unknown_fields_and_rejects_foreign_json() {
        let f = Format::from_json(br#"{"Name":"v","BlockSize":4096,"ChangeLog":true}"#).unwrap();
        assert_eq!(f.extra["ChangeLog"], serde_json::Value::Bool(true));
        assert!(f.to_json().contains("\"ChangeLog\": true"));
        assert!(Format::from_json(b"{\"foo\":1}").is_err());
        assert!(Format::from_json(b"hello").is_err());
        let mut f = f;
        f.meta_version = 2;
        assert!(f.check_version().is_err());
    }
}
