//! `redisMeta.doRename`, after `baseMeta.Rename`'s checks in the client layer: one WATCH
//! transaction over both parents, both entries and the inodes involved, as
//! `pkg/meta/redis.go` sends it.

use super::session::{hdel_dir_fields, RedisSession};
use super::txn::txn;
use super::wire::command;
use crate::meta::Ctx;
use crate::retry::decode_attr as decode;
use crate::rules::{
    check_not_pinned, check_rename_nodes, check_sticky, is_trash, move_between_parents,
    RENAME_EXCHANGE, RENAME_NOREPLACE,
};
use crate::{MetaError, Rename, Renamed, Result};
use metabench_schema::redis_keys::{names, RedisKeys};
use metabench_schema::{align4k, Attr, Dentry, FileType, Ino, Timestamp};
use redis::cmd;

impl RedisSession {
    pub(super) async fn rename_txn(&mut self, ctx: &Ctx, r: &Rename<'_>) -> Result<Renamed> {
        let (parent_src, name_src, parent_dst, name_dst, flags) =
            (r.parent_src, r.name_src, r.parent_dst, r.name_dst, r.flags);
        let (ps, pd) = (parent_src, parent_dst);
        let exchange = flags == RENAME_EXCHANGE;
        let mut wkeys = vec![
            self.keys.inode(ps),
            self.keys.entries(ps),
            self.keys.inode(pd),
            self.keys.entries(pd),
        ];
        if is_trash(ps) {
            wkeys.swap(0, 2);
        }
        let keys = self.keys.clone();
        struct Moved {
            ino: Ino,
            attr: Attr,
            /// Target inode, its entry type and attribute (a zero attribute if missing).
            target: Option<(Ino, FileType, Attr)>,
            same: bool,
        }
        // Nothing moves: the source is the destination, or both name one inode.
        let unmoved = |ino, typ| Moved {
            ino,
            attr: Attr::type_only(typ),
            target: None,
            same: true,
        };
        let rule = self.base.parent_rule();
        let moved = txn!(self, wkeys.clone(), |c| {
            let (kds, kdd) = (keys.entries(ps), keys.entries(pd));
            let buf: Option<Vec<u8>> = c.query(command!("HGET", &kds, name_src)).await?;
            let buf = buf.ok_or(MetaError::NotFound)?;
            let d = Dentry::decode(&buf)?;
            let (typ, ino) = (d.typ, d.inode);
            if ps == pd && name_src == name_dst {
                return Ok(unmoved(ino, typ));
            }
            let mut watch = vec![keys.inode(ino)];
            let dbuf: Option<Vec<u8>> = c.query(command!("HGET", &kdd, name_dst)).await?;
            let mut dentry = None;
            if let Some(db) = &dbuf {
                if flags & RENAME_NOREPLACE != 0 {
                    return Err(MetaError::Exists.into());
                }
                let t = Dentry::decode(db)?;
                watch.push(keys.inode(t.inode));
                if t.typ == FileType::Directory {
                    watch.push(keys.entries(t.inode));
                }
                dentry = Some(t);
            }
            c.watch(&watch).await?;
            if let Some(t) = &dentry {
                if t.inode == ino {
                    return Ok(unmoved(ino, typ));
                }
                if exchange {
                } else if typ == FileType::Directory && t.typ != FileType::Directory {
                    return Err(MetaError::NotDir.into());
                } else if typ != FileType::Directory && t.typ == FileType::Directory {
                    return Err(MetaError::IsDir.into());
                }
            }
            let mut mget = cmd("MGET");
            mget.arg(keys.inode(ps))
                .arg(keys.inode(pd))
                .arg(keys.inode(ino));
            if let Some(t) = &dentry {
                mget.arg(keys.inode(t.inode));
            }
            let rs: Vec<Option<Vec<u8>>> = c.query(&mget).await?;
            let (Some(sb), Some(db), Some(ib)) = (&rs[0], &rs[1], &rs[2]) else {
                return Err(MetaError::NotFound.into());
            };
            let mut sattr = decode(sb)?;
            let mut dattr = decode(db)?;
            let mut iattr = decode(ib)?;
            check_rename_nodes(ctx, r, ino, [&sattr, &dattr, &iattr])?;
            let (mut supdate, mut dupdate) = (false, false);
            let now = Timestamp::now();
            let mut target = None;
            if let Some(t) = &dentry {
                let mut tattr = match rs.get(3).and_then(|v| v.as_ref()) {
                    Some(b) => decode(b)?,
                    None => {
                        tracing::warn!("no attribute for inode {} ({pd}, {:?})", t.inode, name_dst);
                        Attr::type_only(t.typ)
                    }
                };
                check_not_pinned(&tattr)?;
                tattr.ctime = now;
                if exchange {
                    if ps != pd {
                        if t.typ == FileType::Directory {
                            tattr.parent = ps;
                            dattr.nlink = dattr.nlink.saturating_sub(1);
                            sattr.nlink += 1;
                            supdate = true;
                            dupdate = true;
                        } else if tattr.parent > 0 {
                            tattr.parent = ps;
                        }
                    }
                } else if t.typ == FileType::Directory {
                    let cnt: u64 = c.query(command!("HLEN", keys.entries(t.inode))).await?;
                    if cnt != 0 {
                        return Err(MetaError::NotEmpty.into());
                    }
                    dattr.nlink = dattr.nlink.saturating_sub(1);
                    dupdate = true;
                } else {
                    tattr.nlink = tattr.nlink.saturating_sub(1);
                }
                check_sticky(ctx, &dattr, tattr.uid)?;
                target = Some((t.inode, t.typ, tattr));
            } else if exchange {
                return Err(MetaError::NotFound.into());
            }
            (supdate, dupdate) = move_between_parents(
                ctx,
                r,
                typ,
                [&mut sattr, &mut dattr, &mut iattr],
                (supdate, dupdate),
                now,
                rule,
            )?;

            let mut p = redis::pipe();
            p.atomic();
            if exchange {
                let (dino, _, tattr) = target.as_ref().expect("exchange has a target");
                p.cmd("SET").arg(keys.inode(*dino)).arg(tattr.encode());
                p.cmd("HSET")
                    .arg(&kds)
                    .arg(name_src)
                    .arg(dbuf.as_deref().expect("exchange has a target"));
                if ps != pd && tattr.parent == 0 {
                    p.cmd("HINCRBY")
                        .arg(keys.parents(*dino))
                        .arg(ps.to_string())
                        .arg(1);
                    p.cmd("HINCRBY")
                        .arg(keys.parents(*dino))
                        .arg(pd.to_string())
                        .arg(-1);
                }
            } else {
                p.cmd("HDEL").arg(&kds).arg(name_src);
                if let Some((dino, dtyp, tattr)) = &target {
                    let (dino, dtyp) = (*dino, *dtyp);
                    if dtyp != FileType::Directory && tattr.nlink > 0 {
                        p.cmd("SET").arg(keys.inode(dino)).arg(tattr.encode());
                        if tattr.parent == 0 {
                            p.cmd("HINCRBY")
                                .arg(keys.parents(dino))
                                .arg(pd.to_string())
                                .arg(-1);
                        }
                    } else {
                        if dtyp == FileType::File {
                            p.cmd("ZADD")
                                .arg(keys.named(names::DEL_FILES))
                                .arg(now.sec)
                                .arg(RedisKeys::delfile_member(dino, tattr.length));
                            p.cmd("DEL").arg(keys.inode(dino));
                            p.cmd("INCRBY")
                                .arg(keys.named(names::USED_SPACE))
                                .arg(-align4k(tattr.length));
                            p.cmd("DECR").arg(keys.named(names::TOTAL_INODES));
                        } else {
                            if dtyp == FileType::Symlink {
                                p.cmd("DEL").arg(keys.symlink(dino));
                            }
                            p.cmd("DEL").arg(keys.inode(dino));
                            p.cmd("INCRBY")
                                .arg(keys.named(names::USED_SPACE))
                                .arg(-align4k(0));
                            p.cmd("DECR").arg(keys.named(names::TOTAL_INODES));
                        }
                        p.cmd("DEL").arg(keys.xattr(dino));
                        if tattr.parent == 0 {
                            p.cmd("DEL").arg(keys.parents(dino));
                        }
                    }
                    if dtyp == FileType::Directory {
                        hdel_dir_fields(&mut p, &keys, &names::DIR_QUOTA_HASHES, dino);
                    }
                }
            }
            if pd != ps {
                if !is_trash(ps) && supdate {
                    p.cmd("SET").arg(keys.inode(ps)).arg(sattr.encode());
                }
                if iattr.parent == 0 {
                    p.cmd("HINCRBY")
                        .arg(keys.parents(ino))
                        .arg(pd.to_string())
                        .arg(1);
                    p.cmd("HINCRBY")
                        .arg(keys.parents(ino))
                        .arg(ps.to_string())
                        .arg(-1);
                }
            }
            p.cmd("SET").arg(keys.inode(ino)).arg(iattr.encode());
            p.cmd("HSET").arg(&kdd).arg(name_dst).arg(&buf[..]);
            if dupdate {
                p.cmd("SET").arg(keys.inode(pd)).arg(dattr.encode());
            }
            c.exec(&p).await?;
            Ok(Moved {
                ino,
                attr: iattr,
                target,
                same: false,
            })
        })?;
        if let Some((dino, dtyp, tattr)) = &moved.target {
            if !exchange && *dtyp == FileType::File && tattr.nlink == 0 {
                self.base.file_deleted(*dino, tattr.length);
            }
        }
        Ok(Renamed {
            ino: moved.ino,
            attr: moved.attr,
            moved: !moved.same,
            target: moved.target.map(|(dino, _, tattr)| (dino, tattr)),
        })
    }
}
