//! Every statement the SQL engines send, as xorm / `sql.go` write them, rendered once per
//! dialect and table prefix.
//!
//! The texts were captured from juicefs 1.4.2 (MariaDB general log, PostgreSQL statement
//! log) and are written here in MySQL form: `{p}` is the table prefix, and
//! [`Dialect::render`] switches the quoting and placeholders for PostgreSQL and drops
//! `FOR UPDATE` for SQLite. The few texts that differ beyond that (transaction control,
//! the chunk upsert, `RETURNING "id"` of PostgreSQL inserts into tables with a serial key)
//! are chosen here.

use super::conn::Sql;
use metabench_schema::sql::{Dialect, NODE_COLUMNS};
use std::sync::Arc;

const NODE_SELECT: &str = "SELECT `inode`, `type`, `flags`, `mode`, `uid`, `gid`, `atime`, `mtime`, `ctime`, `atimensec`, `mtimensec`, `ctimensec`, `nlink`, `length`, `rdev`, `parent`, `access_acl_id`, `default_acl_id`, `tier_id` FROM `{p}node`";
const EDGE_SELECT: &str = "SELECT `id`, `parent`, `name`, `inode`, `type` FROM `{p}edge`";
const PARENT_UPDATE: &str =
    "UPDATE `{p}node` SET `mtime` = ?, `ctime` = ?, `mtimensec` = ?, `ctimensec` = ?";

/// The statements of one dialect and table prefix.
#[derive(Debug)]
pub(crate) struct Stmts {
    pub dialect: Dialect,
    pub prefix: String,
    /// BEGIN of a write transaction (`START TRANSACTION`, `begin`, `BEGIN`).
    pub begin: &'static str,
    /// COMMIT.
    pub commit: &'static str,
    /// ROLLBACK.
    pub rollback: &'static str,
    /// The read-only transaction start of `roTxn`: one statement, or two on MySQL.
    pub begin_ro: &'static [&'static str],
    pub node_get: Sql,
    pub node_get_for_update: Sql,
    pub node_insert: Sql,
    pub node_delete: Sql,
    pub node_update_ctime_parent: Sql,
    pub node_update_link: Sql,
    pub node_update_write: Sql,
    pub node_setattr: Sql,
    pub parent_update_mtime: Sql,
    pub parent_update_rmdir: Sql,
    pub edge_get: Sql,
    pub edge_first_child: Sql,
    /// `doLookup` without attributes (the trash sub-directory): `SELECT *` of the edge.
    pub edge_lookup_plain: Sql,
    /// The trash-entry check of `doUnlink` for files with more links.
    pub edge_get_full: Sql,
    pub edge_insert: Sql,
    pub edge_delete: Sql,
    pub edge_update_target: Sql,
    pub edges_of_inode: Sql,
    pub lookup: Sql,
    pub readdir: Sql,
    pub readdir_plus: Sql,
    pub dirstat_insert: Sql,
    pub dirstat_delete: Sql,
    pub dirstat_add: Sql,
    pub dirstat_set: Sql,
    pub dirquota_delete: Sql,
    pub symlink_insert: Sql,
    pub symlink_get: Sql,
    pub symlink_delete: Sql,
    pub xattr_get: Sql,
    pub xattr_get_for_update: Sql,
    pub xattr_insert: Sql,
    pub xattr_update: Sql,
    pub xattr_remove: Sql,
    pub xattr_delete_all: Sql,
    pub xattr_list: Sql,
    pub delfile_insert: Sql,
    pub delfile_delete: Sql,
    pub counter_get_for_update: Sql,
    pub counter_update: Sql,
    pub counter_insert: Sql,
    pub counters_init: Sql,
    pub stats_inodes: Sql,
    pub stats_space: Sql,
    pub chunk_upsert: Sql,
    pub chunkref_insert: Sql,
    pub chunkref_get: Sql,
    pub chunkref_delete: Sql,
    pub chunk_get: Sql,
    /// `appendSlice`'s update: `slices || ?` (SQLite, PostgreSQL) or `concat` (MySQL).
    pub chunk_append: Sql,
    /// `appendSlice`'s insert when no row was updated (`mustInsert` of a chunk).
    pub chunk_insert: Sql,
    /// `doTruncate`'s zero chunks: the existing indexes strictly between two, locked.
    pub chunk_indexes_between: Sql,
    pub chunk_get_for_update: Sql,
    pub chunk_indexes: Sql,
    pub chunk_delete: Sql,
    pub setting_get: Sql,
    pub setting_insert: Sql,
    /// `doNewSession`'s insert, `doRefreshSession`'s update.
    pub session2_insert: Sql,
    pub session2_update_expire: Sql,
    /// `doCleanStaleSession`: locks released, sustained inodes listed, the record removed,
    /// and xorm's `IsTableExist` of the legacy `session` table (with [`Stmts::table_schema`]
    /// and the table's name), whose rows are removed when it exists.
    pub flock_delete_sid: Sql,
    pub plock_delete_sid: Sql,
    pub sustained_of_sid: Sql,
    pub session2_delete: Sql,
    pub table_exists: Sql,
    pub legacy_session_delete: Sql,
    /// The schema `table_exists` names: the database (MySQL), `public` (PostgreSQL, as
    /// xorm's default), nothing (SQLite).
    pub table_schema: String,
    parent_nlink: [Sql; 3],
}

impl Stmts {
    /// Renders every statement for `dialect` and `prefix`.
    pub fn new(dialect: Dialect, prefix: &str) -> Self {
        let r = |t: &str| -> Sql { Arc::from(dialect.render(t, prefix)) };
        let returning_id = |t: &str| -> Sql {
            let mut s = dialect.render(t, prefix);
            if dialect == Dialect::Postgres {
                s.push_str(" RETURNING \"id\"");
            }
            Arc::from(s)
        };
        let node_cols: Vec<String> = NODE_COLUMNS.iter().map(|c| format!("`{c}`")).collect();
        let chunk_upsert = match dialect {
            Dialect::Mysql => "\n\t\t\t INSERT INTO {p}chunk (inode, indx, slices)\n\t\t\t VALUES (?, ?, ?)\n\t\t\t ON DUPLICATE KEY UPDATE\n\t\t\t slices=concat(slices, ?)",
            _ => "\n\t\t\t INSERT INTO {p}chunk (inode, indx, slices)\n\t\t\t VALUES (?, ?, ?)\n\t\t\t ON CONFLICT (inode, indx)\n\t\t\t DO UPDATE SET slices={p}chunk.slices || ?",
        };
        let (begin, commit, rollback, begin_ro): (_, _, _, &'static [&'static str]) = match dialect
        {
            Dialect::Mysql => (
                "START TRANSACTION",
                "COMMIT",
                "ROLLBACK",
                &[
                    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
                    "START TRANSACTION READ ONLY",
                ],
            ),
            Dialect::Postgres => (
                "begin",
                "commit",
                "rollback",
                &["begin isolation level repeatable read read only"],
            ),
            // go-sqlite3 ignores the read-only / isolation options: a plain BEGIN.
            Dialect::Sqlite => ("BEGIN", "COMMIT", "ROLLBACK", &["BEGIN"]),
        };
        Self {
            dialect,
            prefix: prefix.to_owned(),
            begin,
            commit,
            rollback,
            begin_ro,
            node_get: r(&format!("{NODE_SELECT} WHERE `inode`=? LIMIT 1")),
            node_get_for_update: r(&format!("{NODE_SELECT} WHERE `inode`=? LIMIT 1 FOR UPDATE")),
            node_insert: r(&format!(
                "INSERT INTO `{{p}}node` ({}) VALUES ({})",
                node_cols.join(","),
                ["?"; 19].join(",")
            )),
            node_delete: r("DELETE FROM `{p}node` WHERE `inode`=?"),
            node_update_ctime_parent: r(
                "UPDATE `{p}node` SET `ctime` = ?, `ctimensec` = ?, `parent` = ? WHERE `inode`=?",
            ),
            node_update_link: r(
                "UPDATE `{p}node` SET `ctime` = ?, `ctimensec` = ?, `nlink` = ?, `parent` = ? WHERE `inode`=?",
            ),
            node_update_write: r(
                "UPDATE `{p}node` SET `mtime` = ?, `ctime` = ?, `mtimensec` = ?, `ctimensec` = ?, `length` = ? WHERE `inode`=?",
            ),
            node_setattr: r(
                "UPDATE `{p}node` SET `flags` = ?, `mode` = ?, `uid` = ?, `gid` = ?, `atime` = ?, `mtime` = ?, `ctime` = ?, `atimensec` = ?, `mtimensec` = ?, `ctimensec` = ?, `access_acl_id` = ?, `default_acl_id` = ?, `tier_id` = ? WHERE `inode`=?",
            ),
            parent_update_mtime: r(&format!("{PARENT_UPDATE} WHERE `inode`=?")),
            parent_update_rmdir: r(&format!("{PARENT_UPDATE}, `nlink`=nlink - 1 WHERE `inode`=?")),
            edge_get: r(&format!("{EDGE_SELECT} WHERE `parent`=? AND `name`=? LIMIT 1")),
            edge_first_child: r(&format!("{EDGE_SELECT} WHERE `parent`=? LIMIT 1")),
            edge_lookup_plain: r("SELECT * FROM `{p}edge` WHERE `parent`=? AND `name`=? LIMIT 1"),
            edge_get_full: r(&format!(
                "{EDGE_SELECT} WHERE `parent`=? AND `name`=? AND `inode`=? AND `type`=? LIMIT 1"
            )),
            edge_insert: returning_id(
                "INSERT INTO `{p}edge` (`parent`,`name`,`inode`,`type`) VALUES (?,?,?,?)",
            ),
            edge_delete: r(
                "DELETE FROM `{p}edge` WHERE (parent = ? AND name = ? AND inode = ? AND type = ?) AND (id = ?)",
            ),
            edge_update_target: r(
                "UPDATE `{p}edge` SET `inode` = ?, `type` = ? WHERE `parent`=? AND `name`=?",
            ),
            edges_of_inode: r(&format!("{EDGE_SELECT} WHERE `inode`=?")),
            lookup: r(
                "SELECT {p}node.* FROM `{p}edge` INNER JOIN `{p}node` ON {p}edge.inode={p}node.inode WHERE `{p}edge`.`parent`=? AND `{p}edge`.`name`=? LIMIT 1",
            ),
            readdir: r("SELECT * FROM `{p}edge` WHERE `parent`=?"),
            readdir_plus: r(
                "SELECT * FROM `{p}edge` INNER JOIN `{p}node` ON {p}edge.inode={p}node.inode WHERE `{p}edge`.`parent`=?",
            ),
            dirstat_insert: r(
                "INSERT INTO `{p}dir_stats` (`inode`,`data_length`,`used_space`,`used_inodes`) VALUES (?,?,?,?)",
            ),
            dirstat_delete: r("DELETE FROM `{p}dir_stats` WHERE `inode`=?"),
            dirstat_add: r(
                "update `{p}dir_stats` set `data_length` = `data_length` + ?, `used_space` = `used_space` + ?, `used_inodes` = `used_inodes` + ? where `inode` = ?",
            ),
            dirstat_set: r(
                "UPDATE `{p}dir_stats` SET `data_length` = ?, `used_space` = ?, `used_inodes` = ? WHERE `inode`=?",
            ),
            dirquota_delete: r("DELETE FROM `{p}dir_quota` WHERE `inode`=?"),
            symlink_insert: r("INSERT INTO `{p}symlink` (`inode`,`target`) VALUES (?,?)"),
            symlink_get: r("SELECT `inode`, `target` FROM `{p}symlink` WHERE `inode`=? LIMIT 1"),
            symlink_delete: r("DELETE FROM `{p}symlink` WHERE `inode`=?"),
            xattr_get: r(
                "SELECT `id`, `inode`, `name`, `value` FROM `{p}xattr` WHERE `inode`=? AND `name`=? LIMIT 1",
            ),
            xattr_get_for_update: r(
                "SELECT `id`, `inode`, `name`, `value` FROM `{p}xattr` WHERE `inode`=? AND `name`=? LIMIT 1 FOR UPDATE",
            ),
            xattr_insert: returning_id(
                "INSERT INTO `{p}xattr` (`inode`,`name`,`value`) VALUES (?,?,?)",
            ),
            xattr_update: r(
                "UPDATE `{p}xattr` SET `value` = ? WHERE `id`=? AND `inode`=? AND `name`=?",
            ),
            xattr_remove: r("DELETE FROM `{p}xattr` WHERE `inode`=? AND `name`=?"),
            xattr_delete_all: r("DELETE FROM `{p}xattr` WHERE `inode`=?"),
            xattr_list: r(
                "SELECT `id`, `inode`, `name`, `value` FROM `{p}xattr` WHERE (inode = ?) AND `inode`=?",
            ),
            delfile_insert: r(
                "INSERT INTO `{p}delfile` (`inode`,`length`,`expire`) VALUES (?,?,?)",
            ),
            delfile_delete: r("DELETE FROM `{p}delfile` WHERE `inode`=?"),
            counter_get_for_update: r(
                "SELECT `name`, `value` FROM `{p}counter` WHERE `name`=? LIMIT 1 FOR UPDATE",
            ),
            counter_update: r("UPDATE `{p}counter` SET `value` = ? WHERE `name`=?"),
            counter_insert: r("INSERT INTO `{p}counter` (`name`,`value`) VALUES (?,?)"),
            counters_init: r(&format!(
                "INSERT INTO `{{p}}counter` (`name`,`value`) VALUES {}",
                ["(?, ?)"; 6].join(",")
            )),
            stats_inodes: r("update {p}counter set value=value + ? where name='totalInodes'"),
            stats_space: r("update {p}counter set value= value + ? where name='usedSpace'"),
            chunk_upsert: r(chunk_upsert),
            chunkref_insert: r(
                "INSERT INTO `{p}chunk_ref` (`chunkid`,`size`,`refs`) VALUES (?,?,?)",
            ),
            chunkref_get: r(
                "SELECT `chunkid`, `size`, `refs` FROM `{p}chunk_ref` WHERE `chunkid`=? LIMIT 1",
            ),
            chunkref_delete: r("DELETE FROM `{p}chunk_ref` WHERE `chunkid`=?"),
            chunk_get: r(
                "SELECT `id`, `inode`, `indx`, `slices` FROM `{p}chunk` WHERE `inode`=? AND `indx`=? LIMIT 1",
            ),
            chunk_append: r(match dialect {
                Dialect::Mysql => {
                    "update {p}chunk set slices=concat(slices, ?) where inode=? AND indx=?"
                }
                _ => "update {p}chunk set slices=slices || ? where inode=? AND indx=?",
            }),
            chunk_insert: returning_id(
                "INSERT INTO `{p}chunk` (`inode`,`indx`,`slices`) VALUES (?,?,?)",
            ),
            chunk_indexes_between: r(
                "SELECT `indx` FROM `{p}chunk` WHERE (inode = ? AND indx > ? AND indx < ?) FOR UPDATE",
            ),
            chunk_get_for_update: r(
                "SELECT `id`, `inode`, `indx`, `slices` FROM `{p}chunk` WHERE `inode`=? AND `indx`=? LIMIT 1 FOR UPDATE",
            ),
            chunk_indexes: r("SELECT `indx` FROM `{p}chunk` WHERE `inode`=?"),
            chunk_delete: r(
                "DELETE FROM `{p}chunk` WHERE (inode = ? AND indx = ?) AND `id`=? AND `inode`=?",
            ),
            setting_get: r("SELECT `name`, `value` FROM `{p}setting` WHERE `name`=? LIMIT 1"),
            setting_insert: r("INSERT INTO `{p}setting` (`name`,`value`) VALUES (?,?)"),
            session2_insert: r("INSERT INTO `{p}session2` (`sid`,`expire`,`info`) VALUES (?,?,?)"),
            session2_update_expire: r("UPDATE `{p}session2` SET `expire` = ? WHERE `sid`=?"),
            flock_delete_sid: r("DELETE FROM `{p}flock` WHERE `sid`=?"),
            plock_delete_sid: r("DELETE FROM `{p}plock` WHERE `sid`=?"),
            sustained_of_sid: r("SELECT `id`, `sid`, `inode` FROM `{p}sustained` WHERE `sid`=?"),
            session2_delete: r("DELETE FROM `{p}session2` WHERE `sid`=?"),
            table_exists: r(match dialect {
                Dialect::Mysql => {
                    "SELECT `TABLE_NAME` from `INFORMATION_SCHEMA`.`TABLES` WHERE `TABLE_SCHEMA`=? and `TABLE_NAME`=?"
                }
                Dialect::Postgres => {
                    "SELECT tablename FROM pg_tables WHERE schemaname = ? AND tablename = ?"
                }
                Dialect::Sqlite => "SELECT name FROM sqlite_master WHERE type='table' and name = ?",
            }),
            legacy_session_delete: r("DELETE FROM `{p}session` WHERE `sid`=?"),
            table_schema: match dialect {
                Dialect::Postgres => "public".to_owned(),
                _ => String::new(),
            },
            parent_nlink: [-1, 0, 1].map(|k| r(&parent_nlink_template(k))),
        }
    }

    /// The parent update of mknod and rename: `… nlink=nlink + (k) WHERE inode=?`.
    pub fn parent_update_nlink(&self, k: i32) -> Sql {
        match k {
            -1..=1 => self.parent_nlink[(k + 1) as usize].clone(),
            _ => Arc::from(self.dialect.render(&parent_nlink_template(k), &self.prefix)),
        }
    }

    /// `batchUpdateChunkRefs`: `UPDATE chunk_ref SET refs = refs + CASE WHEN chunkid = ?
    /// THEN ? … ELSE 0 END WHERE chunkid IN (?,…)` for `n` slice ids.
    pub fn chunkref_batch(&self, n: usize) -> Sql {
        let whens = vec!["WHEN chunkid = ? THEN ? "; n].concat();
        let ins = vec!["?"; n].join(",");
        Arc::from(self.dialect.render(
            &format!("UPDATE {{p}}chunk_ref SET refs = refs + CASE {whens}ELSE 0 END WHERE chunkid IN ({ins})"),
            &self.prefix,
        ))
    }

    /// How many slice ids one `batchUpdateChunkRefs` statement carries
    /// (`getTxnBatchNum`).
    pub fn txn_batch(&self) -> usize {
        match self.dialect {
            Dialect::Sqlite => 999 / 19,
            Dialect::Mysql => 65535 / 19,
            Dialect::Postgres => 1000,
        }
    }
}

fn parent_nlink_template(k: i32) -> String {
    format!("{PARENT_UPDATE}, `nlink`=nlink + ({k}) WHERE `inode`=?")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts as the MariaDB general log and the PostgreSQL log showed them for juicefs
    /// 1.4.2 (see the module doc).
    #[test]
    fn captured_texts() {
        let m = Stmts::new(Dialect::Mysql, "jfs_");
        assert_eq!(
            &*m.lookup,
            "SELECT jfs_node.* FROM `jfs_edge` INNER JOIN `jfs_node` ON jfs_edge.inode=jfs_node.inode WHERE `jfs_edge`.`parent`=? AND `jfs_edge`.`name`=? LIMIT 1"
        );
        assert_eq!(
            &*m.parent_update_nlink(1),
            "UPDATE `jfs_node` SET `mtime` = ?, `ctime` = ?, `mtimensec` = ?, `ctimensec` = ?, `nlink`=nlink + (1) WHERE `inode`=?"
        );
        assert_eq!(
            &*m.node_insert,
            "INSERT INTO `jfs_node` (`inode`,`type`,`flags`,`mode`,`uid`,`gid`,`atime`,`mtime`,`ctime`,`atimensec`,`mtimensec`,`ctimensec`,`nlink`,`length`,`rdev`,`parent`,`access_acl_id`,`default_acl_id`,`tier_id`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
        );
        assert_eq!(
            &*m.chunkref_batch(2),
            "UPDATE jfs_chunk_ref SET refs = refs + CASE WHEN chunkid = ? THEN ? WHEN chunkid = ? THEN ? ELSE 0 END WHERE chunkid IN (?,?)"
        );
        let p = Stmts::new(Dialect::Postgres, "jfs_");
        assert_eq!(
            &*p.edge_insert,
            "INSERT INTO \"jfs_edge\" (\"parent\",\"name\",\"inode\",\"type\") VALUES ($1,$2,$3,$4) RETURNING \"id\""
        );
        assert_eq!(
            &*p.chunk_upsert,
            "\n\t\t\t INSERT INTO jfs_chunk (inode, indx, slices)\n\t\t\t VALUES ($1, $2, $3)\n\t\t\t ON CONFLICT (inode, indx)\n\t\t\t DO UPDATE SET slices=jfs_chunk.slices || $4"
        );
        assert_eq!(
            &*p.counters_init,
            "INSERT INTO \"jfs_counter\" (\"name\",\"value\") VALUES ($1, $2),($3, $4),($5, $6),($7, $8),($9, $10),($11, $12)"
        );
        assert_eq!(
            &*p.stats_space,
            "update jfs_counter set value= value + $1 where name='usedSpace'"
        );
        // `appendSlice` and `doTruncate`, captured from `truncate -s` on a mount.
        assert_eq!(
            &*p.chunk_append,
            "update jfs_chunk set slices=slices || $1 where inode=$2 AND indx=$3"
        );
        assert_eq!(
            &*p.chunk_insert,
            "INSERT INTO \"jfs_chunk\" (\"inode\",\"indx\",\"slices\") VALUES ($1,$2,$3) RETURNING \"id\""
        );
        assert_eq!(
            &*m.chunk_append,
            "update jfs_chunk set slices=concat(slices, ?) where inode=? AND indx=?"
        );
        assert_eq!(
            &*m.chunk_indexes_between,
            "SELECT `indx` FROM `jfs_chunk` WHERE (inode = ? AND indx > ? AND indx < ?) FOR UPDATE"
        );
        let s = Stmts::new(Dialect::Sqlite, "jfs_x_");
        assert!(!s.node_get_for_update.contains("FOR UPDATE"));
        assert!(s.node_get_for_update.contains("`jfs_x_node`"));
        assert_eq!(
            &*s.edge_insert,
            &*Stmts::new(Dialect::Mysql, "jfs_x_").edge_insert
        );
    }
}
