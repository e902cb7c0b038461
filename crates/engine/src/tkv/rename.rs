//! `kvMeta.doRename`, after `baseMeta.Rename`'s checks in the client layer: one
//! transaction over both parents, both entries and the inodes involved, as
//! `pkg/meta/tkv.go` sends it.

use super::kv::txn;
use super::session::{drop_link, TkvSession};
use crate::meta::Ctx;
use crate::retry::decode_attr as decode;
use crate::rules::ParentRule;
use crate::rules::{
    check_not_pinned, check_rename_nodes, check_sticky, is_trash, move_between_parents,
    RENAME_NOREPLACE,
};
use crate::{MetaError, Rename, Renamed, Result};
use metabench_schema::{Attr, Dentry, FileType, Ino, Timestamp};

impl TkvSession {
    pub(super) async fn rename_txn(&mut self, ctx: &Ctx, r: &Rename<'_>) -> Result<Renamed> {
        let (parent_src, name_src, parent_dst, name_dst, flags) =
            (r.parent_src, r.name_src, r.parent_dst, r.name_dst, r.flags);
        let (ps, pd) = (parent_src, parent_dst);
        let keys = self.keys.clone();
        struct Moved {
            ino: Ino,
            attr: Attr,
            /// Replaced target: inode, type, attribute after the change, freed (space, inodes).
            target: Option<(Ino, FileType, Attr, i64, i64)>,
            /// False when nothing moved (one path, or two names of one inode).
            moved: bool,
        }
        let (skip_mtime, skip_nlink) = self.base.dir_skips();
        // `parentLocks`: the destination, and the source unless it is in the trash.
        let src_lock = if is_trash(ps) { pd } else { ps };
        let moved = txn!(self, [pd, src_lock], |tx| {
            let kes = keys.entry(ps, name_src);
            let ked = keys.entry(pd, name_dst);
            let buf = tx.get(&kes).await?.ok_or(MetaError::NotFound)?;
            let d = Dentry::decode(&buf)?;
            let (typ, ino) = (d.typ, d.inode);
            if ps == pd && name_src == name_dst {
                return Ok(Moved {
                    ino,
                    attr: Attr::type_only(typ),
                    target: None,
                    moved: false,
                });
            }
            let rs = tx
                .gets(&[keys.inode(ps), keys.inode(pd), keys.inode(ino), ked.clone()])
                .await?;
            let (Some(sb), Some(db), Some(ib)) = (&rs[0], &rs[1], &rs[2]) else {
                return Err(MetaError::NotFound.into());
            };
            let mut sattr = decode(sb)?;
            let mut dattr = if ps == pd { sattr.clone() } else { decode(db)? };
            let mut iattr = decode(ib)?;
            check_rename_nodes(ctx, r, ino, [&sattr, &dattr, &iattr])?;
            let now = Timestamp::now();
            let mut target = None;
            let (mut supdate, mut dupdate) = (false, false);
            if let Some(tb) = &rs[3] {
                if flags & RENAME_NOREPLACE != 0 {
                    return Err(MetaError::Exists.into());
                }
                let t = Dentry::decode(tb)?;
                if t.inode == ino {
                    return Ok(Moved {
                        ino,
                        attr: iattr,
                        target: None,
                        moved: false,
                    });
                }
                if typ == FileType::Directory && t.typ != FileType::Directory {
                    return Err(MetaError::NotDir.into());
                }
                if typ != FileType::Directory && t.typ == FileType::Directory {
                    return Err(MetaError::IsDir.into());
                }
                let mut tattr = match tx.get(&keys.inode(t.inode)).await? {
                    Some(b) => decode(&b)?,
                    None => Attr::type_only(t.typ),
                };
                check_not_pinned(&tattr)?;
                if t.typ == FileType::Directory {
                    if tx.exist(&keys.entry_prefix(t.inode)).await? {
                        return Err(MetaError::NotEmpty.into());
                    }
                    dattr.nlink = dattr.nlink.saturating_sub(1);
                    dupdate = true;
                    tattr.nlink = 0;
                } else {
                    tattr.nlink = tattr.nlink.saturating_sub(1);
                }
                tattr.ctime = now;
                check_sticky(ctx, &dattr, tattr.uid)?;
                let (space, inodes) = drop_link(&mut tx, &keys, (&t, pd), &tattr, now).await?;
                // kvMeta.doRename leaves a replaced directory's dir-stat key alone and
                // deletes its quota key only when there is one.
                if t.typ == FileType::Directory {
                    let kq = keys.dir_quota(t.inode);
                    if tx.get(&kq).await?.is_some() {
                        tx.delete(&kq);
                    }
                }
                target = Some((t.inode, t.typ, tattr, space, inodes));
            }
            (supdate, dupdate) = move_between_parents(
                ctx,
                r,
                typ,
                [&mut sattr, &mut dattr, &mut iattr],
                (supdate, dupdate),
                now,
                ParentRule::kv(skip_mtime, skip_nlink, tx.retry()),
            )?;
            if ps == pd {
                // One directory: only the destination's copy is written (kvMeta.doRename
                // writes the source parent only when the parents differ), with its own
                // times: a replaced directory forces it to be touched.
                supdate = false;
            }
            tx.delete(&kes);
            if supdate && !is_trash(ps) {
                tx.set(&keys.inode(ps), &sattr.encode()).await?;
            }
            if iattr.parent == 0 && ps != pd {
                tx.incr_by(&keys.parent(ino, pd), 1).await?;
                tx.incr_by(&keys.parent(ino, ps), -1).await?;
            }
            tx.set(&keys.inode(ino), &iattr.encode()).await?;
            tx.set(&ked, &buf).await?;
            if dupdate {
                tx.set(&keys.inode(pd), &dattr.encode()).await?;
            }
            Ok(Moved {
                ino,
                attr: iattr,
                target,
                moved: true,
            })
        })?;
        if let Some((tino, ttyp, tattr, space, inodes)) = &moved.target {
            if *ttyp == FileType::File && tattr.nlink == 0 {
                self.base.file_deleted(*tino, tattr.length);
            }
            self.base.update_stats(*space, *inodes);
        }
        Ok(Renamed {
            ino: moved.ino,
            attr: moved.attr,
            moved: moved.moved,
            target: moved.target.map(|(tino, ttyp, mut tattr, ..)| {
                // The entry's type counts, as kvMeta.doRename's `dtyp`.
                tattr.typ = ttyp;
                (tino, tattr)
            }),
        })
    }
}
