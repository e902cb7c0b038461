//! The namespace operations of an SQL session (`dbMeta.doMknod`, `doLink`, `doUnlink`,
//! `doRmdir`, `doRename`) and the trash they move entries to.

use super::rows::*;
use super::sql_session::SqlSession;
use super::tx_err::TxErr;
use super::txn::{simple, txn};
use crate::rules::{
    access, check_sticky, is_trash, new_child_attr, orphan_attr, parent_gains, FLAG_APPEND,
    FLAG_IMMUTABLE, FLAG_SKIP_TRASH, RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_RESTORE,
};
use crate::sql::conn::{Arg, DbError};
use crate::{Ctx, MetaError, NewNode, Rename, Renamed, Result};
use metabench_schema::sql::NodeRow;
use metabench_schema::{align4k, Attr, FileType, Ino, Timestamp, TRASH_INODE};

impl SqlSession {
    /// `dbMeta.doMknod` (its checks, quota walk and inode are `BaseMeta::make_node`'s). On
    /// EEXIST of a file or directory the existing entry is returned in `found` (for
    /// `Create`).
    pub(super) async fn mknod_txn(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        node: &NewNode<'_>,
        found: &mut Option<(Ino, Attr)>,
    ) -> Result<Attr> {
        let (parent, name, typ) = (node.parent, node.name, node.typ);
        let path = node.target;
        let st = self.st.clone();
        let t = typ.as_u8() as i64;
        let rule = self.base.parent_rule();
        let attr = txn!(self, {
            *found = None;
            let (_, mut pattr) = self.parent_to_add(ctx, parent).await?;
            if let Some(e) = self.get_edge(parent, name).await? {
                if matches!(typ, FileType::File | FileType::Directory) {
                    let a = match self.get_node(e.inode, false).await? {
                        Some(n) => n.to_attr()?,
                        None => orphan_attr(file_type(e.typ)?, parent),
                    };
                    *found = Some((e.inode, a));
                }
                return Err(MetaError::Exists.into());
            }
            let now = Timestamp::now();
            let a = new_child_attr(ctx, &pattr, node, now);
            let update_parent = parent_gains(&mut pattr, typ, now, rule);
            let row = NodeRow::from_attr(ino, &a);
            self.insert_edge(parent, name, ino, t).await?;
            self.exec(&st.node_insert, &node_args(&row)).await?;
            if typ == FileType::Symlink {
                self.exec(
                    &st.symlink_insert,
                    &[Arg::I64(ino as i64), Arg::Bytes(path)],
                )
                .await?;
            }
            if typ == FileType::Directory {
                self.exec(
                    &st.dirstat_insert,
                    &[Arg::I64(ino as i64), Arg::I64(0), Arg::I64(0), Arg::I64(0)],
                )
                .await?;
            }
            if update_parent {
                let sql = st.parent_update_nlink(i32::from(typ == FileType::Directory));
                self.update_parent(&sql, &NodeRow::from_attr(parent, &pattr))
                    .await?;
            }
            a
        })?;
        Ok(attr)
    }

    /// The parent checks `dbMeta.doMknod` and `doLink` begin with: the parent's row, which
    /// must be a directory (ENOTDIR) outside the trash (ENOENT) that `ctx` may write and
    /// search (EACCES) and that is not immutable (EPERM). Returns the row and its
    /// attribute.
    async fn parent_to_add(
        &mut self,
        ctx: &Ctx,
        parent: Ino,
    ) -> std::result::Result<(NodeRow, Attr), TxErr> {
        let pn = self
            .get_node(parent, false)
            .await?
            .ok_or(MetaError::NotFound)?;
        if pn.typ != TYPE_DIR {
            return Err(MetaError::NotDir.into());
        }
        let pattr = pn.to_attr()?;
        if pattr.parent > TRASH_INODE {
            return Err(MetaError::NotFound.into());
        }
        access(ctx, &pattr, 0o3)?;
        if pn.flags & i64::from(FLAG_IMMUTABLE) != 0 {
            return Err(MetaError::Perm.into());
        }
        Ok((pn, pattr))
    }

    /// `dbMeta.doLink` (its checks, `GetAttr` and quota walks are `Meta::link`'s).
    pub(super) async fn link_txn(
        &mut self,
        ctx: &Ctx,
        ino: Ino,
        parent: Ino,
        name: &[u8],
    ) -> Result<Attr> {
        let st = self.st.clone();
        let rule = self.base.parent_rule();
        // `doLink` locks the inode, not the parent.
        let attr = txn!(self, [ino], {
            let (mut pn, _) = self.parent_to_add(ctx, parent).await?;
            if self.get_edge(parent, name).await?.is_some() {
                return Err(MetaError::Exists.into());
            }
            let mut n = self.get_node(ino, true).await?.ok_or(MetaError::NotFound)?;
            if n.typ == TYPE_DIR {
                return Err(MetaError::Perm.into());
            }
            if n.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
                return Err(MetaError::Perm.into());
            }
            let now = Timestamp::now();
            let update_parent = touch_parent(&rule, &mut pn, false, now);
            n.parent = Some(0);
            n.nlink += 1;
            set_ctime(&mut n, now);
            self.insert_edge(parent, name, ino, n.typ).await?;
            self.update_link(&n).await?;
            if update_parent {
                self.update_parent(&st.parent_update_mtime, &pn).await?;
            }
            n.to_attr()?
        })?;
        Ok(attr)
    }

    /// `checkTrash`: the trash sub-directory of this hour (`YYYY-MM-DD-HH`, UTC) when the
    /// volume keeps a trash and `parent` is not in it; 0 otherwise. Looked up (and made
    /// if missing) once per hour per session, as each JuiceFS client does.
    pub(super) async fn check_trash(&mut self, parent: Ino) -> Result<Ino> {
        if self.trash_days == 0 || is_trash(parent) {
            return Ok(0);
        }
        let name = trash_hour(Timestamp::now().sec);
        if let Some((n, ino)) = &self.sub_trash {
            if *n == name {
                return Ok(*ino);
            }
        }
        let st = self.st.clone();
        let rows = simple!(self, {
            self.fetch(
                &st.edge_lookup_plain,
                &[Arg::I64(TRASH_INODE as i64), Arg::Bytes(name.as_bytes())],
            )
            .await?
        })?;
        let ino = match rows.first() {
            Some(r) => r.int(3).map_err(|e| MetaError::Engine(e.msg))? as Ino,
            None => self.make_trash_dir(&name).await?,
        };
        if ino <= TRASH_INODE {
            return Err(MetaError::Engine(format!("invalid trash inode {ino}")));
        }
        self.sub_trash = Some((name, ino));
        Ok(ino)
    }

    /// `doMknod` of a trash sub-directory: inode `TrashInode + nextTrash`, mode 0555,
    /// no parent update. An existing one (made by another client) is returned.
    pub(super) async fn make_trash_dir(&mut self, name: &str) -> Result<Ino> {
        let st = self.st.clone();
        // As root (`Background()`), whom the parent's permission check lets through.
        let root = Ctx::root();
        let created = txn!(self, {
            let (pn, pattr) = self.parent_to_add(&root, TRASH_INODE).await?;
            if let Some(e) = self.get_edge(TRASH_INODE, name.as_bytes()).await? {
                // EEXIST for a directory reads the existing node too
                self.get_node(e.inode, false).await?;
                (e.inode, false)
            } else {
                let rows = self
                    .fetch(&st.counter_get_for_update, &[Arg::Str("nextTrash")])
                    .await?;
                let next = match rows.first() {
                    Some(r) => r.int(1)?,
                    None => 0,
                } + 1;
                if rows.is_empty() {
                    self.exec(&st.counter_insert, &[Arg::Str("nextTrash"), Arg::I64(next)])
                        .await?;
                } else {
                    self.exec(&st.counter_update, &[Arg::I64(next), Arg::Str("nextTrash")])
                        .await?;
                }
                let ino = TRASH_INODE + next as u64;
                let now = Timestamp::now();
                let mut a = Attr::new(FileType::Directory, 0o555, 0, 0, 0, TRASH_INODE);
                a.atime = now;
                a.mtime = now;
                a.ctime = now;
                if pn.flags & i64::from(FLAG_SKIP_TRASH) != 0 {
                    a.flags |= FLAG_SKIP_TRASH;
                }
                a.tier = pattr.tier;
                self.insert_edge(TRASH_INODE, name.as_bytes(), ino, TYPE_DIR)
                    .await?;
                self.exec(&st.node_insert, &node_args(&NodeRow::from_attr(ino, &a)))
                    .await?;
                self.exec(
                    &st.dirstat_insert,
                    &[Arg::I64(ino as i64), Arg::I64(0), Arg::I64(0), Arg::I64(0)],
                )
                .await?;
                (ino, true)
            }
        })?;
        if created.1 {
            self.base.update_stats(align4k(0), 1);
        }
        Ok(created.0)
    }

    /// `dbMeta.doUnlink` (its checks, dir stat and quota walk are `Meta::unlink`'s).
    /// Returns the removed entry's attribute.
    pub(super) async fn unlink_txn(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<Attr> {
        let trash = self.check_trash(parent).await?;
        let st = self.st.clone();
        // (node after the change, freed space, freed inodes, trash it went to)
        let mut outcome = (NodeRow::default(), 0i64, 0i64, 0);
        let rule = self.base.parent_rule();
        txn!(self, {
            let mut trash = trash;
            outcome = (NodeRow::default(), 0, 0, 0);
            let (mut pn, pattr, e) = self.parent_and_entry(ctx, parent, name).await?;
            if e.typ == TYPE_DIR {
                return Err(MetaError::Perm.into());
            }
            let entry = trash_entry(parent, e.inode, &e.name);
            let now = Timestamp::now();
            let mut n = match self.get_node(e.inode, true).await? {
                Some(mut n) => {
                    check_sticky(ctx, &pattr, n.uid as u32)?;
                    if n.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
                        return Err(MetaError::Perm.into());
                    }
                    if n.flags & i64::from(FLAG_SKIP_TRASH) != 0 {
                        trash = 0;
                    }
                    if trash > 0 && n.nlink > 1 {
                        // another link of this file may already be in the trash
                        let rows = self
                            .fetch(
                                &st.edge_get_full,
                                &[
                                    Arg::I64(trash as i64),
                                    Arg::Bytes(&entry),
                                    Arg::I64(e.inode as i64),
                                    Arg::I32(e.typ as i32),
                                ],
                            )
                            .await?;
                        if !rows.is_empty() {
                            trash = 0;
                        }
                    }
                    set_ctime(&mut n, now);
                    if trash == 0 {
                        n.nlink -= 1;
                    } else if n.parent.unwrap_or(0) > 0 {
                        n.parent = Some(trash as i64);
                    }
                    n
                }
                None => {
                    tracing::warn!("no attribute for inode {} ({parent})", e.inode);
                    trash = 0;
                    NodeRow {
                        inode: e.inode as i64,
                        ..NodeRow::default()
                    }
                }
            };
            let update_parent = !is_trash(parent) && touch_parent(&rule, &mut pn, false, now);
            self.delete_edge(parent, &e).await?;
            let (mut space, mut inodes) = (0, 0);
            if n.nlink > 0 {
                self.update_link(&n).await?;
                if trash > 0 {
                    inodes = 1;
                    space = align4k(counted_length(n.typ, n.length));
                    self.insert_edge(trash, &entry, e.inode, e.typ).await?;
                }
            } else {
                space = self.delete_node(e.inode as i64, e.typ, n.length).await?;
                inodes = -1;
            }
            if update_parent {
                self.update_parent(&st.parent_update_mtime, &pn).await?;
            }
            if n.typ == 0 {
                n.typ = e.typ;
            }
            outcome = (n, space, inodes, trash);
        })?;
        let (n, space, inodes, trash) = outcome;
        let ino = n.inode as Ino;
        let attr = n.to_attr()?;
        let len = counted_length(n.typ, n.length);
        if trash == 0 {
            if n.typ == TYPE_FILE && n.nlink == 0 {
                self.base.file_deleted(ino, n.length as u64);
            }
            self.base.update_stats(space, inodes);
        } else {
            self.base.update_dir_stat(trash, len as i64, space, inodes);
        }
        Ok(attr)
    }

    /// `dbMeta.doRmdir` (its checks, dir stat, `dirParents` and quota walk are
    /// `Meta::rmdir`'s). Returns the removed directory.
    pub(super) async fn rmdir_txn(&mut self, ctx: &Ctx, parent: Ino, name: &[u8]) -> Result<Ino> {
        let trash = self.check_trash(parent).await?;
        let st = self.st.clone();
        let (trashed, removed) = txn!(self, {
            let mut trash = trash;
            let (mut pn, pattr, e) = self.parent_and_entry(ctx, parent, name).await?;
            if e.typ != TYPE_DIR {
                return Err(MetaError::NotDir.into());
            }
            let mut n = self.get_node(e.inode, true).await?;
            let child = self
                .fetch(&st.edge_first_child, &[Arg::I64(e.inode as i64)])
                .await?;
            if !child.is_empty() {
                return Err(MetaError::NotEmpty.into());
            }
            if n.as_ref()
                .map(|n| n.flags & i64::from(FLAG_SKIP_TRASH) != 0)
                .unwrap_or(false)
            {
                trash = 0;
            }
            let now = Timestamp::now();
            match &mut n {
                Some(n) => {
                    check_sticky(ctx, &pattr, n.uid as u32)?;
                    if trash > 0 {
                        set_ctime(n, now);
                        n.parent = Some(trash as i64);
                    }
                }
                None => {
                    tracing::warn!("no attribute for inode {} ({parent})", e.inode);
                    trash = 0;
                }
            }
            pn.nlink -= 1;
            set_mtime(&mut pn, now);
            set_ctime(&mut pn, now);
            let ino = Arg::I64(e.inode as i64);
            self.delete_edge(parent, &e).await?;
            self.exec(&st.dirstat_delete, &[ino]).await?;
            self.exec(&st.dirquota_delete, &[ino]).await?;
            match (&n, trash) {
                (Some(n), t) if t > 0 => {
                    self.update_ctime_parent(n, t as i64).await?;
                    let entry = trash_entry(parent, e.inode, &e.name);
                    self.insert_edge(t, &entry, e.inode, TYPE_DIR).await?;
                }
                _ => {
                    self.exec(&st.node_delete, &[ino]).await?;
                    self.exec(&st.xattr_delete_all, &[ino]).await?;
                }
            }
            if !is_trash(parent) {
                // no check of the affected rows here in doRmdir
                self.exec(&st.parent_update_rmdir, &parent_args(&pn))
                    .await?;
            }
            (trash, e.inode)
        })?;
        if trashed == 0 {
            self.base.update_stats(-align4k(0), -1);
        } else {
            self.base.update_dir_stat(trashed, 0, align4k(0), 1);
        }
        Ok(removed)
    }

    /// `dbMeta.doRename` (its checks and quota walks are `BaseMeta::check_and_walk_rename`'s).
    pub(super) async fn rename_txn(&mut self, ctx: &Ctx, r: &Rename<'_>) -> Result<Renamed> {
        let (ps, ns_, pd, nd, flags) =
            (r.parent_src, r.name_src, r.parent_dst, r.name_dst, r.flags);
        let exchange = flags == RENAME_EXCHANGE;
        let trash0 = self.check_trash(pd).await?;
        let st = self.st.clone();
        // (source inode, its attr, target node if any, target's type, freed space, inodes)
        struct Out {
            ino: Ino,
            attr: Attr,
            target: Option<NodeRow>,
            ttyp: i64,
            space: i64,
            inodes: i64,
            trash: Ino,
            /// False when nothing moved (one path, or two names of one inode).
            moved: bool,
        }
        impl Out {
            /// A rename that moves nothing: the entry's inode and attribute.
            fn unmoved(ino: Ino, attr: Attr) -> Self {
                Out {
                    ino,
                    attr,
                    target: None,
                    ttyp: 0,
                    space: 0,
                    inodes: 0,
                    trash: 0,
                    moved: false,
                }
            }
        }
        let rule = self.base.parent_rule();
        // `parentLocks`: the destination, and the source unless it is in the trash.
        let src_lock = if is_trash(ps) { pd } else { ps };
        let out = txn!(self, [pd, src_lock], {
            let mut trash = trash0;
            let spn = self.get_node(ps, false).await?.ok_or(MetaError::NotFound)?;
            let dpn = self.get_node(pd, false).await?.ok_or(MetaError::NotFound)?;
            if spn.typ != TYPE_DIR || dpn.typ != TYPE_DIR {
                return Err(MetaError::NotDir.into());
            }
            if spn.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0
                || dpn.flags & i64::from(FLAG_IMMUTABLE) != 0
            {
                return Err(MetaError::Perm.into());
            }
            let spattr = spn.to_attr()?;
            let dpattr = dpn.to_attr()?;
            if flags & RENAME_RESTORE == 0 && dpattr.parent > TRASH_INODE {
                return Err(MetaError::NotFound.into());
            }
            access(ctx, &spattr, 0o3)?;
            access(ctx, &dpattr, 0o3)?;
            let se = self.get_edge(ps, ns_).await?.ok_or(MetaError::NotFound)?;
            if ps == pd && se.name == nd {
                let mut a = Attr::type_only(file_type(se.typ)?);
                a.parent = ps;
                Out::unmoved(se.inode, a)
            } else {
                if se.inode == pd || se.inode == dpattr.parent {
                    return Err(MetaError::Perm.into());
                }
                let mut sn = self
                    .get_node(se.inode, false)
                    .await?
                    .ok_or(MetaError::NotFound)?;
                let sattr = sn.to_attr()?;
                if ps != pd
                    && spattr.mode & 0o1000 != 0
                    && ctx.uid != 0
                    && ctx.uid != sattr.uid
                    && (ctx.uid != spattr.uid || sattr.typ == FileType::Directory)
                {
                    return Err(MetaError::Access.into());
                }
                if sn.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
                    return Err(MetaError::Perm.into());
                }
                let de = self.get_edge(pd, nd).await?;
                let (mut src, mut dst) = (RenameParent::of(spn), RenameParent::of(dpn));
                let now = Timestamp::now();
                let mut dn: Option<NodeRow> = None;
                let mut same_inode = false;
                if let Some(de) = &de {
                    if flags & RENAME_NOREPLACE != 0 {
                        return Err(MetaError::Exists.into());
                    }
                    let mut n = match self.get_node(de.inode, true).await? {
                        Some(n) => n,
                        None => {
                            tracing::warn!("no attribute for inode {} ({pd})", de.inode);
                            trash = 0;
                            NodeRow {
                                inode: de.inode as i64,
                                typ: de.typ,
                                ..NodeRow::default()
                            }
                        }
                    };
                    if n.flags & i64::from(FLAG_APPEND | FLAG_IMMUTABLE) != 0 {
                        return Err(MetaError::Perm.into());
                    }
                    if n.flags & i64::from(FLAG_SKIP_TRASH) != 0 {
                        trash = 0;
                    }
                    set_ctime(&mut n, now);
                    if exchange {
                        move_to_parent(&mut n, de.typ, [pd, ps], [&mut dst, &mut src]);
                    } else if de.inode == se.inode {
                        same_inode = true;
                    } else if se.typ == TYPE_DIR && de.typ != TYPE_DIR {
                        return Err(MetaError::NotDir.into());
                    } else if de.typ == TYPE_DIR {
                        if se.typ != TYPE_DIR {
                            return Err(MetaError::IsDir.into());
                        }
                        let child = self
                            .fetch(&st.edge_first_child, &[Arg::I64(de.inode as i64)])
                            .await?;
                        if !child.is_empty() {
                            return Err(MetaError::NotEmpty.into());
                        }
                        dst.row.nlink -= 1;
                        dst.nlink -= 1;
                        dst.update = true;
                        if trash > 0 {
                            n.parent = Some(trash as i64);
                        }
                    } else if trash == 0 {
                        n.nlink -= 1;
                    } else if n.parent.unwrap_or(0) > 0 {
                        n.parent = Some(trash as i64);
                    }
                    if !same_inode {
                        check_sticky(ctx, &dpattr, n.uid as u32)?;
                    }
                    dn = Some(n);
                } else if exchange {
                    return Err(MetaError::NotFound.into());
                }
                if same_inode {
                    Out::unmoved(se.inode, sattr)
                } else {
                    check_sticky(ctx, &spattr, sattr.uid)?;
                    move_to_parent(&mut sn, se.typ, [ps, pd], [&mut src, &mut dst]);
                    src.update = touch_parent(&rule, &mut src.row, src.update, now);
                    dst.update = touch_parent(&rule, &mut dst.row, dst.update, now);
                    set_ctime(&mut sn, now);
                    let (mut space, mut inodes) = (0i64, 0i64);
                    if exchange {
                        let de = de.as_ref().expect("exchange needs a target");
                        let dn = dn.as_ref().expect("exchange needs a target");
                        let edge_to =
                            |e: &EdgeRow| [Arg::I64(e.inode as i64), Arg::I32(e.typ as i32)];
                        let [di, dt] = edge_to(de);
                        let args = [di, dt, Arg::I64(ps as i64), Arg::Bytes(&se.name)];
                        self.exec(&st.edge_update_target, &args).await?;
                        let [si, stp] = edge_to(&se);
                        let args = [si, stp, Arg::I64(pd as i64), Arg::Bytes(&de.name)];
                        self.exec(&st.edge_update_target, &args).await?;
                        self.update_ctime_parent(dn, dn.parent.unwrap_or(0)).await?;
                    } else {
                        if self.delete_edge(ps, &se).await? != 1 {
                            return Err(TxErr::Db(DbError::decode("delete src failed".into())));
                        }
                        if let (Some(de), Some(dn)) = (&de, &dn) {
                            let dino = Arg::I64(de.inode as i64);
                            if trash > 0 {
                                inodes = 1;
                                space = align4k(counted_length(de.typ, dn.length));
                                self.update_ctime_parent(dn, dn.parent.unwrap_or(0)).await?;
                                let entry = trash_entry(pd, de.inode, &de.name);
                                self.insert_edge(trash, &entry, de.inode, de.typ).await?;
                            } else if de.typ != TYPE_DIR && dn.nlink > 0 {
                                self.update_link(dn).await?;
                            } else {
                                space =
                                    self.delete_node(de.inode as i64, de.typ, dn.length).await?;
                                inodes = -1;
                            }
                            self.delete_edge(pd, de).await?;
                            if de.typ == TYPE_DIR {
                                self.exec(&st.dirquota_delete, &[dino]).await?;
                            }
                        }
                        self.insert_edge(pd, nd, se.inode, se.typ).await?;
                    }
                    self.update_ctime_parent(&sn, sn.parent.unwrap_or(0))
                        .await?;
                    if pd != ps && !is_trash(ps) && src.update {
                        if dst.update && dst.row.inode < src.row.inode {
                            let sql = st.parent_update_nlink(dst.nlink);
                            self.update_parent(&sql, &dst.row).await?;
                            dst.update = false;
                        }
                        let sql = st.parent_update_nlink(src.nlink);
                        self.update_parent(&sql, &src.row).await?;
                    }
                    if dst.update {
                        let sql = st.parent_update_nlink(dst.nlink);
                        self.update_parent(&sql, &dst.row).await?;
                    }
                    Out {
                        ino: se.inode,
                        attr: sn.to_attr()?,
                        ttyp: de.as_ref().map(|d| d.typ).unwrap_or(0),
                        target: dn,
                        space,
                        inodes,
                        trash,
                        moved: true,
                    }
                }
            }
        })?;
        // What dbMeta.doRename does itself for a replaced target: the trash directory's
        // stat, or the freed data and the volume counters.
        if let Some(dn) = &out.target {
            if !exchange && out.trash > 0 {
                let tl = counted_length(out.ttyp, dn.length);
                self.base
                    .update_dir_stat(out.trash, tl as i64, out.space, out.inodes);
            } else if !exchange {
                if out.ttyp == TYPE_FILE && dn.nlink == 0 {
                    self.base.file_deleted(dn.inode as Ino, dn.length as u64);
                }
                self.base.update_stats(out.space, out.inodes);
            }
        }
        let target = match &out.target {
            Some(dn) => {
                let mut tattr = dn.to_attr()?;
                // The entry's type counts, as dbMeta.doRename's `dtyp`.
                tattr.typ = file_type(out.ttyp)?;
                Some((dn.inode as Ino, tattr))
            }
            None => None,
        };
        Ok(Renamed {
            ino: out.ino,
            attr: out.attr,
            moved: out.moved,
            target,
        })
    }
}

/// A parent directory of `dbMeta.doRename`: its row, the change to its link count that
/// its update adds (`srcnlink`, `dstnlink`), and whether it must be written (`supdate`,
/// `dupdate`).
struct RenameParent {
    row: NodeRow,
    nlink: i32,
    update: bool,
}

impl RenameParent {
    /// The parent as read, nothing changed yet.
    fn of(row: NodeRow) -> Self {
        Self {
            row,
            nlink: 0,
            update: false,
        }
    }
}

/// A node of type `typ` moving from directory `from` to directory `to` in
/// `dbMeta.doRename` (nothing when they are one): a directory takes one link from the
/// parent it leaves to the one it joins (both rows and both pending nlink changes), and
/// both parents must then be written; a file records its new parent unless it is
/// hard-linked (parent 0).
fn move_to_parent(
    n: &mut NodeRow,
    typ: i64,
    [from, to]: [Ino; 2],
    [leaves, joins]: [&mut RenameParent; 2],
) {
    if from == to {
        return;
    }
    if typ == TYPE_DIR {
        n.parent = Some(to as i64);
        leaves.row.nlink -= 1;
        leaves.nlink -= 1;
        joins.row.nlink += 1;
        joins.nlink += 1;
        (leaves.update, joins.update) = (true, true);
    } else if n.parent.unwrap_or(0) > 0 {
        n.parent = Some(to as i64);
    }
}

/// The length an entry of type `typ` counts for in its directory's stat: a file's
/// length, 0 for anything else.
fn counted_length(typ: i64, length: i64) -> u64 {
    if typ == TYPE_FILE {
        length as u64
    } else {
        0
    }
}
