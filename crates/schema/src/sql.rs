//! The SQL tables of `pkg/meta/sql.go` and the way xorm renders them per dialect.
//!
//! [`create_statements`] produces, byte for byte, the `CREATE TABLE` / `CREATE INDEX`
//! statements that `juicefs format` 1.4.2 sends (xorm `Sync2` of the Go structs, captured
//! from the MariaDB general log and the PostgreSQL statement log; see `testdata/`).
//! [`NodeRow`] maps a `node` row to an [`Attr`] and back: times in microseconds plus the
//! nanosecond rest, the 12 permission bits in `mode` and the type in its own column.
//! [`Dialect::render`] turns a statement written once (MySQL quoting, `?` placeholders,
//! `{p}` for the table prefix) into the text each dialect's driver sends.

use crate::{Attr, DecodeError, FileType, Ino, Timestamp};

/// The default table prefix (`jfs_`).
pub const DEFAULT_PREFIX: &str = "jfs_";

/// The table prefix for a `?table_prefix=` URL parameter: `jfs_` when absent or empty,
/// `jfs_<x>_` otherwise (`newSQLMeta`).
pub fn table_prefix(param: Option<&str>) -> String {
    match param {
        None | Some("") => DEFAULT_PREFIX.to_owned(),
        Some(x) => format!("jfs_{x}_"),
    }
}

/// The SQL dialects JuiceFS supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// MySQL and MariaDB (go-sql-driver).
    Mysql,
    /// PostgreSQL (pgx).
    Postgres,
    /// SQLite (go-sqlite3).
    Sqlite,
}

impl Dialect {
    /// Quotes an identifier as xorm does: backticks on MySQL and SQLite, double quotes on
    /// PostgreSQL.
    pub fn quote(self, ident: &str) -> String {
        match self {
            Dialect::Postgres => format!("\"{ident}\""),
            _ => format!("`{ident}`"),
        }
    }

    /// Renders a statement template for this dialect: `{p}` becomes `prefix`, backticks
    /// become double quotes and `?` becomes `$1`, `$2`, … on PostgreSQL, and ` FOR UPDATE`
    /// is dropped on SQLite (xorm's SQLite dialect has no row locks).
    pub fn render(self, template: &str, prefix: &str) -> String {
        let s = template.replace("{p}", prefix);
        match self {
            Dialect::Mysql => s,
            Dialect::Sqlite => s.replace(" FOR UPDATE", ""),
            Dialect::Postgres => {
                let mut out = String::with_capacity(s.len() + 8);
                let mut n = 0;
                for c in s.chars() {
                    match c {
                        '`' => out.push('"'),
                        '?' => {
                            n += 1;
                            out.push('$');
                            out.push_str(&n.to_string());
                        }
                        c => out.push(c),
                    }
                }
                out
            }
        }
    }
}

/// Column types of the Go structs, as xorm maps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    /// `int64` / `uint64` / `Ino`.
    BigInt,
    /// `uint8` / `uint16` / `uint32` / `int`.
    Int,
    /// A `string` key: VARCHAR(255).
    Varchar,
    /// `text` tag.
    Text,
    /// `varbinary(n)` tag.
    Varbinary(u32),
    /// `[]byte` / `blob` tag.
    Blob,
    /// `pk bigserial` (an auto-increment `int64`).
    BigSerial,
    /// `pk autoincr` on a `uint32`.
    Serial,
}

/// One column of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Column name.
    pub name: &'static str,
    /// Type.
    pub ty: ColType,
    /// Whether it is the (single-column) primary key.
    pub pk: bool,
    /// `NOT NULL` (otherwise `NULL`).
    pub not_null: bool,
    /// Default value, if the struct tag has one.
    pub default: Option<&'static str>,
}

/// One index of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Index {
    /// `UNIQUE` (name prefix `UQE_`) or plain (`IDX_`).
    pub unique: bool,
    /// The xorm index name (the `unique(x)` / `index` tag); the SQL name is
    /// `UQE_<table>_<name>` or `IDX_<table>_<name>`.
    pub name: &'static str,
    /// Indexed columns.
    pub columns: &'static [&'static str],
}

/// One table of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    /// Name without the prefix.
    pub name: &'static str,
    /// Columns in struct order.
    pub columns: &'static [Column],
    /// Composite primary key, if any (rendered as a table constraint).
    pub composite_pk: &'static [&'static str],
    /// Indexes in the order xorm creates them.
    pub indexes: &'static [Index],
}

const fn col(name: &'static str, ty: ColType) -> Column {
    Column {
        name,
        ty,
        pk: false,
        not_null: true,
        default: None,
    }
}
const fn pk(name: &'static str, ty: ColType) -> Column {
    Column {
        name,
        ty,
        pk: true,
        not_null: true,
        default: None,
    }
}
const fn null(name: &'static str, ty: ColType) -> Column {
    Column {
        name,
        ty,
        pk: false,
        not_null: false,
        default: None,
    }
}
const fn zero(name: &'static str) -> Column {
    Column {
        name,
        ty: ColType::Int,
        pk: false,
        not_null: true,
        default: Some("0"),
    }
}
/// A table keyed by its one `pk` column, with these indexes.
const fn table(name: &'static str, columns: &'static [Column], indexes: &'static [Index]) -> Table {
    Table {
        name,
        columns,
        composite_pk: &[],
        indexes,
    }
}
const fn uqe(name: &'static str, columns: &'static [&'static str]) -> Index {
    Index {
        unique: true,
        name,
        columns,
    }
}
const fn idx(name: &'static str, columns: &'static [&'static str]) -> Index {
    Index {
        unique: false,
        name,
        columns,
    }
}

use ColType::*;

/// Every table `juicefs format` creates, in `syncAllTables` order.
pub const TABLES: &[Table] = &[
    table("setting", &[pk("name", Varchar), col("value", Text)], &[]),
    table("counter", &[pk("name", Varchar), col("value", BigInt)], &[]),
    table(
        "edge",
        &[
            pk("id", BigSerial),
            col("parent", BigInt),
            col("name", Varbinary(255)),
            col("inode", BigInt),
            col("type", Int),
        ],
        &[uqe("edge", &["parent", "name"]), idx("inode", &["inode"])],
    ),
    table(
        "node",
        &[
            pk("inode", BigInt),
            col("type", Int),
            col("flags", Int),
            col("mode", Int),
            col("uid", Int),
            col("gid", Int),
            col("atime", BigInt),
            col("mtime", BigInt),
            col("ctime", BigInt),
            zero("atimensec"),
            zero("mtimensec"),
            zero("ctimensec"),
            col("nlink", Int),
            col("length", BigInt),
            null("rdev", Int),
            null("parent", BigInt),
            null("access_acl_id", Int),
            null("default_acl_id", Int),
            null("tier_id", Int),
        ],
        &[],
    ),
    table(
        "symlink",
        &[pk("inode", BigInt), col("target", Varbinary(4096))],
        &[],
    ),
    table(
        "xattr",
        &[
            pk("id", BigSerial),
            col("inode", BigInt),
            col("name", Varchar),
            col("value", Blob),
        ],
        &[uqe("name", &["inode", "name"])],
    ),
    table(
        "chunk",
        &[
            pk("id", BigSerial),
            col("inode", BigInt),
            col("indx", Int),
            col("slices", Blob),
        ],
        &[uqe("chunk", &["inode", "indx"])],
    ),
    table(
        "chunk_ref",
        &[pk("chunkid", BigInt), col("size", Int), col("refs", Int)],
        &[idx("refs", &["refs"])],
    ),
    table(
        "delslices",
        &[
            pk("chunkid", BigInt),
            col("deleted", BigInt),
            col("slices", Blob),
        ],
        &[],
    ),
    table(
        "session2",
        &[pk("sid", BigInt), col("expire", BigInt), null("info", Blob)],
        &[],
    ),
    table(
        "sustained",
        &[
            pk("id", BigSerial),
            col("sid", BigInt),
            col("inode", BigInt),
        ],
        &[uqe("sustained", &["sid", "inode"])],
    ),
    table(
        "delfile",
        &[
            pk("inode", BigInt),
            col("length", BigInt),
            col("expire", BigInt),
        ],
        &[],
    ),
    table(
        "flock",
        &[
            pk("id", BigSerial),
            col("inode", BigInt),
            col("sid", BigInt),
            col("owner", BigInt),
            col("ltype", Int),
        ],
        &[uqe("flock", &["inode", "sid", "owner"])],
    ),
    table(
        "plock",
        &[
            pk("id", BigSerial),
            col("inode", BigInt),
            col("sid", BigInt),
            col("owner", BigInt),
            col("records", Blob),
        ],
        &[uqe("plock", &["inode", "sid", "owner"])],
    ),
    table(
        "dir_quota",
        &[
            pk("inode", BigInt),
            col("max_space", BigInt),
            col("max_inodes", BigInt),
            col("used_space", BigInt),
            col("used_inodes", BigInt),
        ],
        &[],
    ),
    Table {
        name: "user_group_quota",
        columns: &[
            col("qtype", Int),
            col("qkey", BigInt),
            col("max_space", BigInt),
            col("max_inodes", BigInt),
            col("used_space", BigInt),
            col("used_inodes", BigInt),
        ],
        composite_pk: &["qtype", "qkey"],
        indexes: &[],
    },
    table(
        "dir_stats",
        &[
            pk("inode", BigInt),
            col("data_length", BigInt),
            col("used_space", BigInt),
            col("used_inodes", BigInt),
        ],
        &[],
    ),
    table(
        "detached_node",
        &[pk("inode", BigInt), col("added", BigInt)],
        &[],
    ),
    table(
        "acl",
        &[
            pk("id", Serial),
            null("owner", Int),
            null("group", Int),
            null("mask", Int),
            null("other", Int),
            null("named_users", Blob),
            null("named_groups", Blob),
        ],
        &[],
    ),
    table(
        "delegation_token",
        &[pk("id", Serial), null("token", Blob)],
        &[],
    ),
    table(
        "change_log",
        &[pk("id", BigSerial), col("entry", Text)],
        &[],
    ),
];

/// Tables of older releases that `Reset` (and metabench's destroy) also drop if present.
pub const LEGACY_TABLES: &[&str] = &["session"];

/// The names of every JuiceFS table with this prefix, legacy ones included.
pub fn table_names(prefix: &str) -> Vec<String> {
    TABLES
        .iter()
        .map(|t| t.name)
        .chain(LEGACY_TABLES.iter().copied())
        .map(|n| format!("{prefix}{n}"))
        .collect()
}

fn type_sql(d: Dialect, ty: ColType) -> String {
    match (d, ty) {
        (Dialect::Mysql, BigInt) => "BIGINT(20)".into(),
        (Dialect::Postgres, BigInt) => "BIGINT".into(),
        (Dialect::Mysql, Int) => "INT".into(),
        (Dialect::Postgres, Int) => "INTEGER".into(),
        (Dialect::Sqlite, BigInt | Int) => "INTEGER".into(),
        (Dialect::Sqlite, Varchar) => "TEXT".into(),
        (_, Varchar) => "VARCHAR(255)".into(),
        (_, Text) => "TEXT".into(),
        (Dialect::Mysql, Varbinary(n)) => format!("VARBINARY({n})"),
        (Dialect::Postgres, Varbinary(_) | Blob) => "BYTEA".into(),
        (_, Varbinary(_) | Blob) => "BLOB".into(),
        (Dialect::Mysql, BigSerial) => "BIGINT(20) PRIMARY KEY AUTO_INCREMENT".into(),
        (Dialect::Mysql, Serial) => "INT PRIMARY KEY AUTO_INCREMENT".into(),
        // xorm's PostgreSQL dialect leaves a blank where AUTO_INCREMENT would be.
        (Dialect::Postgres, BigSerial) => "BIGSERIAL PRIMARY KEY ".into(),
        (Dialect::Postgres, Serial) => "SERIAL PRIMARY KEY ".into(),
        (Dialect::Sqlite, BigSerial | Serial) => "INTEGER PRIMARY KEY AUTOINCREMENT".into(),
    }
}

fn column_sql(d: Dialect, c: &Column) -> String {
    let mut s = format!("{} {}", d.quote(c.name), type_sql(d, c.ty));
    if c.pk && !matches!(c.ty, BigSerial | Serial) {
        s += " PRIMARY KEY";
    }
    if let Some(def) = c.default {
        s += " DEFAULT ";
        s += def;
    }
    s += if c.not_null { " NOT NULL" } else { " NULL" };
    s
}

/// The `CREATE TABLE IF NOT EXISTS` statement of one table.
pub fn create_table(d: Dialect, prefix: &str, t: &Table) -> String {
    let mut cols: Vec<String> = t.columns.iter().map(|c| column_sql(d, c)).collect();
    if !t.composite_pk.is_empty() {
        let keys: Vec<String> = t.composite_pk.iter().map(|k| d.quote(k)).collect();
        cols.push(format!("PRIMARY KEY ( {} )", keys.join(",")));
    }
    format!(
        "CREATE TABLE IF NOT EXISTS {} ({})",
        d.quote(&format!("{prefix}{}", t.name)),
        cols.join(", ")
    )
}

/// The SQL name of an index: `UQE_<table>_<name>` or `IDX_<table>_<name>`.
pub fn index_name(prefix: &str, t: &Table, i: &Index) -> String {
    let kind = if i.unique { "UQE" } else { "IDX" };
    format!("{kind}_{prefix}{}_{}", t.name, i.name)
}

/// The `CREATE [UNIQUE] INDEX` statement of one index.
pub fn create_index(d: Dialect, prefix: &str, t: &Table, i: &Index) -> String {
    let cols: Vec<String> = i.columns.iter().map(|c| d.quote(c)).collect();
    format!(
        "CREATE {}INDEX {} ON {} ({})",
        if i.unique { "UNIQUE " } else { "" },
        d.quote(&index_name(prefix, t, i)),
        d.quote(&format!("{prefix}{}", t.name)),
        cols.join(",")
    )
}

/// Every DDL statement `juicefs format` sends, in order: each table followed by its
/// indexes.
pub fn create_statements(d: Dialect, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for t in TABLES {
        out.push(create_table(d, prefix, t));
        for i in t.indexes {
            out.push(create_index(d, prefix, t, i));
        }
    }
    out
}

/// The 19 columns of `node`, in struct (and `SELECT`) order.
pub const NODE_COLUMNS: [&str; 19] = [
    "inode",
    "type",
    "flags",
    "mode",
    "uid",
    "gid",
    "atime",
    "mtime",
    "ctime",
    "atimensec",
    "mtimensec",
    "ctimensec",
    "nlink",
    "length",
    "rdev",
    "parent",
    "access_acl_id",
    "default_acl_id",
    "tier_id",
];

/// A `node` row as stored: the 19 columns of [`NODE_COLUMNS`], the nullable ones as
/// `Option`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeRow {
    /// Inode number.
    pub inode: i64,
    /// Type number (`TypeFile` …).
    pub typ: i64,
    /// Flag bits.
    pub flags: i64,
    /// The 12 permission bits only.
    pub mode: i64,
    /// Owner.
    pub uid: i64,
    /// Group.
    pub gid: i64,
    /// Access time in µs.
    pub atime: i64,
    /// Modification time in µs.
    pub mtime: i64,
    /// Change time in µs.
    pub ctime: i64,
    /// Nanosecond rest of `atime` (0..999).
    pub atimensec: i64,
    /// Nanosecond rest of `mtime`.
    pub mtimensec: i64,
    /// Nanosecond rest of `ctime`.
    pub ctimensec: i64,
    /// Link count.
    pub nlink: i64,
    /// Length.
    pub length: i64,
    /// Device number (nullable).
    pub rdev: Option<i64>,
    /// Parent (nullable; 0 for hard-linked files).
    pub parent: Option<i64>,
    /// Access ACL id (nullable).
    pub access_acl_id: Option<i64>,
    /// Default ACL id (nullable).
    pub default_acl_id: Option<i64>,
    /// Storage tier (nullable).
    pub tier_id: Option<i64>,
}

impl NodeRow {
    /// The row `parseNode` builds from an attribute: times split into µs and ns rest,
    /// only the 12 permission bits of `mode`.
    pub fn from_attr(inode: Ino, a: &Attr) -> Self {
        let (atime, atimensec) = a.atime.to_sql();
        let (mtime, mtimensec) = a.mtime.to_sql();
        let (ctime, ctimensec) = a.ctime.to_sql();
        Self {
            inode: inode as i64,
            typ: a.typ.as_u8() as i64,
            flags: a.flags as i64,
            mode: (a.mode & 0o7777) as i64,
            uid: a.uid as i64,
            gid: a.gid as i64,
            atime,
            mtime,
            ctime,
            atimensec: atimensec as i64,
            mtimensec: mtimensec as i64,
            ctimensec: ctimensec as i64,
            nlink: a.nlink as i64,
            length: a.length as i64,
            rdev: Some(a.rdev as i64),
            parent: Some(a.parent as i64),
            access_acl_id: Some(a.access_acl as i64),
            default_acl_id: Some(a.default_acl as i64),
            tier_id: Some(a.tier as i64),
        }
    }

    /// Builds a row from the 19 column values in [`NODE_COLUMNS`] order.
    pub fn from_values(v: [Option<i64>; 19]) -> Result<Self, DecodeError> {
        let req = |i: usize| {
            v[i].ok_or(DecodeError::Invalid {
                what: "NULL in a NOT NULL node column",
                value: i as u64,
            })
        };
        Ok(Self {
            inode: req(0)?,
            typ: req(1)?,
            flags: req(2)?,
            mode: req(3)?,
            uid: req(4)?,
            gid: req(5)?,
            atime: req(6)?,
            mtime: req(7)?,
            ctime: req(8)?,
            atimensec: v[9].unwrap_or(0),
            mtimensec: v[10].unwrap_or(0),
            ctimensec: v[11].unwrap_or(0),
            nlink: req(12)?,
            length: req(13)?,
            rdev: v[14],
            parent: v[15],
            access_acl_id: v[16],
            default_acl_id: v[17],
            tier_id: v[18],
        })
    }

    /// The 19 values in [`NODE_COLUMNS`] order, NULLs as 0 (xorm writes zero values).
    pub fn values(&self) -> [i64; 19] {
        [
            self.inode,
            self.typ,
            self.flags,
            self.mode,
            self.uid,
            self.gid,
            self.atime,
            self.mtime,
            self.ctime,
            self.atimensec,
            self.mtimensec,
            self.ctimensec,
            self.nlink,
            self.length,
            self.rdev.unwrap_or(0),
            self.parent.unwrap_or(0),
            self.access_acl_id.unwrap_or(0),
            self.default_acl_id.unwrap_or(0),
            self.tier_id.unwrap_or(0),
        ]
    }

    /// The attribute `parseAttr` reads from this row (NULL columns read as 0).
    pub fn to_attr(&self) -> Result<Attr, DecodeError> {
        Ok(Attr {
            flags: self.flags as u8,
            typ: FileType::from_u8(self.typ as u8)?,
            mode: (self.mode as u16) & 0o7777,
            uid: self.uid as u32,
            gid: self.gid as u32,
            rdev: self.rdev.unwrap_or(0) as u32,
            atime: Timestamp::from_sql(self.atime, self.atimensec as i32),
            mtime: Timestamp::from_sql(self.mtime, self.mtimensec as i32),
            ctime: Timestamp::from_sql(self.ctime, self.ctimensec as i32),
            nlink: self.nlink as u32,
            length: self.length as u64,
            parent: self.parent.unwrap_or(0) as u64,
            access_acl: self.access_acl_id.unwrap_or(0) as u32,
            default_acl: self.default_acl_id.unwrap_or(0) as u32,
            tier: self.tier_id.unwrap_or(0) as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden_lines(s: &str) -> Vec<String> {
        s.lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The statements xorm sent to MariaDB 10.11 during `juicefs format` (general log).
    #[test]
    fn mysql_ddl_matches_juicefs_format() {
        let golden = golden_lines(include_str!("../testdata/mysql_format_1.4.2.txt"));
        assert_eq!(create_statements(Dialect::Mysql, "jfs_"), golden);
    }

    /// The statements pgx sent to PostgreSQL 15 during `juicefs format` (statement log).
    #[test]
    fn postgres_ddl_matches_juicefs_format() {
        let golden = golden_lines(include_str!("../testdata/pg_format_1.4.2.txt"));
        assert_eq!(create_statements(Dialect::Postgres, "jfs_"), golden);
    }

    /// SQLite keeps the DDL in `sqlite_master` without `IF NOT EXISTS`.
    #[test]
    fn sqlite_ddl_matches_sqlite_master() {
        let golden: Vec<String> = include_str!("../testdata/sqlite_format_1.4.2.txt")
            .lines()
            .filter(|l| l.starts_with("CREATE") && !l.contains("sqlite_sequence"))
            .map(|l| l.trim_end_matches(';').to_owned())
            .collect();
        let ours: Vec<String> = create_statements(Dialect::Sqlite, "jfs_")
            .into_iter()
            .map(|s| s.replace("CREATE TABLE IF NOT EXISTS", "CREATE TABLE"))
            .collect();
        assert_eq!(ours, golden);
    }

    #[test]
    fn prefixes_and_names() {
        assert_eq!(table_prefix(None), "jfs_");
        assert_eq!(table_prefix(Some("")), "jfs_");
        assert_eq!(table_prefix(Some("x")), "jfs_x_");
        let ddl = create_statements(Dialect::Mysql, "jfs_x_");
        assert!(ddl.contains(
            &"CREATE UNIQUE INDEX `UQE_jfs_x_edge_edge` ON `jfs_x_edge` (`parent`,`name`)"
                .to_owned()
        ));
        let names = table_names("jfs_x_");
        assert_eq!(names.len(), TABLES.len() + 1);
        assert!(names.iter().all(|n| n.starts_with("jfs_x_")));
        assert!(names.contains(&"jfs_x_chunk_ref".to_owned()));
    }

    #[test]
    fn render_per_dialect() {
        let t = "SELECT `id` FROM `{p}xattr` WHERE `inode`=? AND `name`=? LIMIT 1 FOR UPDATE";
        assert_eq!(
            Dialect::Mysql.render(t, "jfs_"),
            "SELECT `id` FROM `jfs_xattr` WHERE `inode`=? AND `name`=? LIMIT 1 FOR UPDATE"
        );
        assert_eq!(
            Dialect::Postgres.render(t, "jfs_"),
            "SELECT \"id\" FROM \"jfs_xattr\" WHERE \"inode\"=$1 AND \"name\"=$2 LIMIT 1 FOR UPDATE"
        );
        assert_eq!(
            Dialect::Sqlite.render(t, "jfs_a_"),
            "SELECT `id` FROM `jfs_a_xattr` WHERE `inode`=? AND `name`=? LIMIT 1"
        );
    }

    /// The root row `juicefs format` wrote to SQLite (testdata): µs times plus ns rest.
    #[test]
    fn node_row_round_trip_with_golden_root() {
        let v = [
            1,
            2,
            0,
            511,
            0,
            0,
            1795315196258158,
            1795315196258158,
            1795315196258158,
            580,
            580,
            580,
            2,
            4096,
            0,
            1,
            0,
            0,
            0,
        ];
        let row = NodeRow::from_values(v.map(Some)).unwrap();
        let a = row.to_attr().unwrap();
        assert_eq!(a.typ, FileType::Directory);
        assert_eq!(a.mode, 0o777);
        assert_eq!(a.mtime.sec, 1795315196);
        assert_eq!(a.mtime.nsec, 258_158_580);
        assert_eq!((a.nlink, a.length, a.parent), (2, 4096, 1));
        assert_eq!(NodeRow::from_attr(1, &a), row);
        assert_eq!(NodeRow::from_attr(1, &a).values(), v);
    }

    #[test]
    fn node_row_keeps_only_permission_bits_and_reads_nulls_as_zero() {
        let mut a = Attr::new(FileType::File, 0o4755, 0, 5, 6, 9);
        a.mode = 0o104755 & 0o7777;
        let row = NodeRow::from_attr(3, &a);
        assert_eq!(row.mode, 0o4755);
        assert_eq!(row.typ, 1);
        let mut v = row.values().map(Some);
        v[14] = None;
        v[15] = None;
        v[18] = None;
        let back = NodeRow::from_values(v).unwrap().to_attr().unwrap();
        assert_eq!((back.rdev, back.parent, back.tier), (0, 0, 0));
        v[12] = None;
        assert!(NodeRow::from_values(v).is_err());
        let mut bad = row;
        bad.typ = 9;
        assert!(bad.to_attr().is_err());
    }
}
