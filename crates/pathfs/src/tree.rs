//! An mdtest-equivalent driver: the phases, tree shape and rate definitions of mdtest,
//! generic over [`FsOps`], so the same code drives POSIX calls through a mount and engine
//! sessions natively, and both sides make exactly the same calls.
//!
//! The tree (mdtest `-b`, `-z`): `mdtest_tree.R.0` with `b` children per directory down
//! to depth `z`, i.e. `1 + b + … + b^z` directories, numbered breadth-first
//! (`mdtest_tree.R.N`). With `-u` every task has its own tree (R = task) and makes it;
//! otherwise task 0 makes one tree (R = 0) that all tasks share. Each task puts `-I`
//! items in every directory of its tree (`dir.mdtest.T.K`, `file.mdtest.T.K`).
//!
//! Phases, in mdtest's order and with its labels: tree creation, directory creation /
//! stat / removal (unless `-F`), file creation / stat / read / removal (unless `-D`),
//! tree removal. A phase starts and ends with all tasks together (mdtest's barriers);
//! its rate is the items of all tasks divided by the phase's wall time, as in mdtest's
//! SUMMARY (for tree phases: the tree directories of all tasks).

use crate::error::{FsError, Result};
use crate::fs_ops::FsOps;
use metabench_load::StopFlag;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// mdtest's options that shape the work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeSpec {
    /// `-b`: directories per tree directory.
    pub branch: u32,
    /// `-z`: tree depth (0: only the top directory).
    pub depth: u32,
    /// `-I`: items per tree directory, per task.
    pub items: u64,
    /// `-u`: a tree per task.
    pub unique_dir: bool,
    /// `-F`: files only.
    pub files_only: bool,
    /// `-D`: directories only.
    pub dirs_only: bool,
    /// `-w`: bytes written per file.
    pub write_bytes: u64,
    /// `-e`: bytes read per file.
    pub read_bytes: u64,
    /// Tasks (MPI ranks).
    pub tasks: u32,
}

impl TreeSpec {
    /// The JuiceFS docs' metadata run: `-b 3 -z 1 -I 100 -u`.
    pub fn docs_metadata(tasks: u32) -> Self {
        Self {
            branch: 3,
            depth: 1,
            items: 100,
            unique_dir: true,
            files_only: false,
            dirs_only: false,
            write_bytes: 0,
            read_bytes: 0,
            tasks,
        }
    }

    /// The JuiceFS docs' small-file run: `-F -w 102400 -I 1000 -z 0 -u`.
    pub fn docs_small_files(tasks: u32) -> Self {
        Self {
            branch: 0,
            depth: 0,
            items: 1000,
            unique_dir: true,
            files_only: true,
            dirs_only: false,
            write_bytes: 102_400,
            read_bytes: 0,
            tasks,
        }
    }

    /// A small run of every phase with `tasks` tasks, for checking a target end to end:
    /// `-b 2 -z 1 -I 3 -u -w 1024 -e 1024`.
    pub fn smoke(tasks: u32) -> Self {
        Self {
            branch: 2,
            depth: 1,
            items: 3,
            unique_dir: true,
            files_only: false,
            dirs_only: false,
            write_bytes: 1024,
            read_bytes: 1024,
            tasks,
        }
    }

    /// Directories in one tree: `1 + b + … + b^z`.
    pub fn dirs_in_tree(&self) -> u64 {
        let b = u64::from(self.branch);
        (0..=self.depth).map(|i| b.pow(i)).sum()
    }

    /// Trees made: one per task with `-u`, else one.
    pub fn trees(&self) -> u64 {
        if self.unique_dir {
            u64::from(self.tasks)
        } else {
            1
        }
    }

    /// Items (directories or files) each task makes: `-I` × directories in the tree.
    pub fn items_per_task(&self) -> u64 {
        self.items * self.dirs_in_tree()
    }

    /// The phases that run, in order.
    pub fn phases(&self) -> Vec<Phase> {
        let mut v = vec![Phase::TreeCreation];
        if !self.files_only {
            v.extend([Phase::DirCreation, Phase::DirStat, Phase::DirRemoval]);
        }
        if !self.dirs_only {
            v.extend([
                Phase::FileCreation,
                Phase::FileStat,
                Phase::FileRead,
                Phase::FileRemoval,
            ]);
        }
        v.push(Phase::TreeRemoval);
        v
    }

    /// Calls a phase makes over all tasks (what mdtest counts for its rate).
    pub fn expected_items(&self, phase: Phase) -> u64 {
        match phase {
            Phase::TreeCreation | Phase::TreeRemoval => self.trees() * self.dirs_in_tree(),
            _ => u64::from(self.tasks) * self.items_per_task(),
        }
    }

    /// The shape `juicefs mdtest` runs with this tree's size: one tree that all tasks
    /// share (no `-u`), files only, the same `-b`, `-z`, `-I` and `-w`.
    pub fn shared_files_only(&self) -> Self {
        Self {
            unique_dir: false,
            files_only: true,
            dirs_only: false,
            ..self.clone()
        }
    }

    /// The mdtest arguments that ask for this work (without `-d`).
    pub fn mdtest_args(&self) -> Vec<String> {
        let mut a = vec![];
        if self.files_only {
            a.push("-F".into());
        }
        if self.dirs_only {
            a.push("-D".into());
        }
        if self.branch > 0 {
            a.extend(["-b".into(), self.branch.to_string()]);
        }
        a.extend(["-z".into(), self.depth.to_string()]);
        a.extend(["-I".into(), self.items.to_string()]);
        if self.write_bytes > 0 {
            a.extend(["-w".into(), self.write_bytes.to_string()]);
        }
        if self.read_bytes > 0 {
            a.extend(["-e".into(), self.read_bytes.to_string()]);
        }
        if self.unique_dir {
            a.push("-u".into());
        }
        a
    }
}

/// One mdtest phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Tree creation.
    TreeCreation,
    /// Directory creation.
    DirCreation,
    /// Directory stat.
    DirStat,
    /// Directory removal.
    DirRemoval,
    /// File creation.
    FileCreation,
    /// File stat.
    FileStat,
    /// File read.
    FileRead,
    /// File removal.
    FileRemoval,
    /// Tree removal.
    TreeRemoval,
}

impl Phase {
    /// mdtest's SUMMARY label.
    pub fn label(self) -> &'static str {
        match self {
            Phase::TreeCreation => "Tree creation",
            Phase::DirCreation => "Directory creation",
            Phase::DirStat => "Directory stat",
            Phase::DirRemoval => "Directory removal",
            Phase::FileCreation => "File creation",
            Phase::FileStat => "File stat",
            Phase::FileRead => "File read",
            Phase::FileRemoval => "File removal",
            Phase::TreeRemoval => "Tree removal",
        }
    }

    /// The phase with this SUMMARY label.
    pub fn from_label(s: &str) -> Option<Phase> {
        [
            Phase::TreeCreation,
            Phase::DirCreation,
            Phase::DirStat,
            Phase::DirRemoval,
            Phase::FileCreation,
            Phase::FileStat,
            Phase::FileRead,
            Phase::FileRemoval,
            Phase::TreeRemoval,
        ]
        .into_iter()
        .find(|p| p.label().eq_ignore_ascii_case(s.trim()))
    }
}

/// What one phase did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseResult {
    /// The phase.
    pub phase: Phase,
    /// Calls made by all tasks.
    pub items: u64,
    /// Wall time, barrier to barrier.
    pub seconds: f64,
    /// `items / seconds`.
    pub ops_per_s: f64,
}

/// Tree node `k`'s parent in breadth-first numbering, for branching `b`.
fn parent_of(k: u64, b: u64) -> Option<u64> {
    (k > 0).then(|| (k - 1) / b)
}

/// What one task does in one phase.
async fn task_phase<F: FsOps>(
    fs: &mut F,
    phase: Phase,
    task: u32,
    spec: &TreeSpec,
    base: &F::Dir,
    trees: &[Vec<F::Dir>],
    stop: &StopFlag,
) -> Result<(u64, Option<Vec<F::Dir>>)> {
    let b = u64::from(spec.branch.max(1));
    let n = spec.dirs_in_tree();
    let check = || {
        if stop.is_stopped() {
            Err(FsError::Interrupted)
        } else {
            Ok(())
        }
    };
    match phase {
        Phase::TreeCreation => {
            if !spec.unique_dir && task != 0 {
                return Ok((0, None));
            }
            let r = if spec.unique_dir { task } else { 0 };
            let mut dirs: Vec<F::Dir> = Vec::with_capacity(n as usize);
            for k in 0..n {
                check()?;
                let parent = match parent_of(k, b) {
                    None => base.clone(),
                    Some(p) => dirs[p as usize].clone(),
                };
                dirs.push(fs.mkdir(&parent, &format!("mdtest_tree.{r}.{k}")).await?);
            }
            Ok((n, Some(dirs)))
        }
        Phase::TreeRemoval => {
            if !spec.unique_dir && task != 0 {
                return Ok((0, None));
            }
            let r = if spec.unique_dir { task } else { 0 };
            let dirs = &trees[if spec.unique_dir { task as usize } else { 0 }];
            for k in (0..n).rev() {
                check()?;
                let parent = match parent_of(k, b) {
                    None => base,
                    Some(p) => &dirs[p as usize],
                };
                fs.rmdir(parent, &format!("mdtest_tree.{r}.{k}")).await?;
            }
            Ok((n, None))
        }
        _ => {
            let dirs = &trees[if spec.unique_dir { task as usize } else { 0 }];
            let mut done = 0;
            for dir in dirs {
                for i in 0..spec.items {
                    check()?;
                    let dname = format!("dir.mdtest.{task}.{i}");
                    let fname = format!("file.mdtest.{task}.{i}");
                    match phase {
                        Phase::DirCreation => drop(fs.mkdir(dir, &dname).await?),
                        Phase::DirStat => fs.stat(dir, &dname).await?,
                        Phase::DirRemoval => fs.rmdir(dir, &dname).await?,
                        Phase::FileCreation => fs.create(dir, &fname, spec.write_bytes).await?,
                        Phase::FileStat => fs.stat(dir, &fname).await?,
                        Phase::FileRead => fs.read(dir, &fname, spec.read_bytes).await?,
                        Phase::FileRemoval => fs.unlink(dir, &fname).await?,
                        Phase::TreeCreation | Phase::TreeRemoval => unreachable!(),
                    }
                    done += 1;
                }
            }
            Ok((done, None))
        }
    }
}

/// Runs [`TreeSpec::smoke`] below `base` with one [`FsOps`] per client and checks that
/// every phase made the calls it should: a target's end-to-end check.
pub async fn run_smoke<F: FsOps>(clients: Vec<F>, base: F::Dir) -> Result<Vec<PhaseResult>> {
    let spec = TreeSpec::smoke(clients.len() as u32);
    let results = run_tree(clients, base, &spec, &StopFlag::default(), |_| {}).await?;
    let ran: Vec<Phase> = results.iter().map(|r| r.phase).collect();
    if ran != spec.phases() {
        return Err(FsError::Io(format!("phases run: {ran:?}")));
    }
    for r in &results {
        if r.items != spec.expected_items(r.phase) {
            return Err(FsError::Io(format!(
                "{:?}: {} calls, not {}",
                r.phase,
                r.items,
                spec.expected_items(r.phase)
            )));
        }
    }
    Ok(results)
}

/// Runs every phase of `spec` below `base` with one [`FsOps`] per task (`clients.len()`
/// must be `spec.tasks`). Stops at the first failure or when `stop` is set; the tree is
/// then left for the caller's cleanup.
pub async fn run_tree<F: FsOps>(
    mut clients: Vec<F>,
    base: F::Dir,
    spec: &TreeSpec,
    stop: &StopFlag,
    mut on_phase: impl FnMut(&PhaseResult),
) -> Result<Vec<PhaseResult>> {
    assert_eq!(clients.len(), spec.tasks as usize, "one client per task");
    let mut trees: Vec<Vec<F::Dir>> = vec![Vec::new(); spec.trees() as usize];
    let mut results = Vec::new();
    for phase in spec.phases() {
        let shared = std::sync::Arc::new((spec.clone(), base.clone(), trees.clone()));
        let t0 = Instant::now();
        let mut handles = Vec::new();
        for (task, mut fs) in clients.drain(..).enumerate() {
            let (shared, stop) = (shared.clone(), stop.clone());
            handles.push(tokio::spawn(async move {
                let (spec, base, trees) = &*shared;
                let r = task_phase(&mut fs, phase, task as u32, spec, base, trees, &stop).await;
                (fs, r)
            }));
        }
        let mut items = 0;
        let mut first_err = None;
        for (task, h) in handles.into_iter().enumerate() {
            let (fs, r) = h
                .await
                .map_err(|e| FsError::Io(format!("task {task} panicked: {e}")))?;
            clients.push(fs);
            match r {
                Ok((n, made)) => {
                    items += n;
                    if let Some(dirs) = made {
                        let slot = if spec.unique_dir { task } else { 0 };
                        trees[slot] = dirs;
                    }
                }
                Err(e) => {
                    if first_err.is_none() || matches!(first_err, Some(FsError::Interrupted)) {
                        first_err = Some(e);
                    }
                }
            }
        }
        let seconds = t0.elapsed().as_secs_f64();
        if let Some(e) = first_err {
            return Err(e);
        }
        for fs in &mut clients {
            fs.between_phases().await?;
        }
        let r = PhaseResult {
            phase,
            items,
            seconds,
            ops_per_s: if seconds > 0.0 {
                items as f64 / seconds
            } else {
                0.0
            },
        };
        on_phase(&r);
        results.push(r);
    }
    Ok(results)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use async_trait::async_trait;
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::{Arc, Mutex};

    /// An in-memory file system that counts calls and checks they make sense.
    #[derive(Default)]
    pub(crate) struct World {
        pub(crate) dirs: BTreeSet<String>,
        pub(crate) files: BTreeMap<String, u64>,
        pub(crate) calls: BTreeMap<&'static str, u64>,
    }

    /// One task's calls on a shared [`World`].
    pub(crate) struct MemFs(pub(crate) Arc<Mutex<World>>);

    #[async_trait]
    impl FsOps for MemFs {
        type Dir = String;
        async fn mkdir(&mut self, parent: &String, name: &str) -> Result<String> {
            let mut w = self.0.lock().unwrap();
            assert!(w.dirs.contains(parent), "mkdir in missing {parent}");
            let p = format!("{parent}/{name}");
            assert!(w.dirs.insert(p.clone()), "mkdir of existing {p}");
            *w.calls.entry("mkdir").or_default() += 1;
            Ok(p)
        }
        async fn rmdir(&mut self, parent: &String, name: &str) -> Result<()> {
            let mut w = self.0.lock().unwrap();
            let p = format!("{parent}/{name}");
            let prefix = format!("{p}/");
            assert!(
                !w.dirs.iter().any(|d| d.starts_with(&prefix)),
                "{p} not empty"
            );
            assert!(
                !w.files.keys().any(|d| d.starts_with(&prefix)),
                "{p} not empty"
            );
            assert!(w.dirs.remove(&p), "rmdir of missing {p}");
            *w.calls.entry("rmdir").or_default() += 1;
            Ok(())
        }
        async fn stat(&mut self, parent: &String, name: &str) -> Result<()> {
            let mut w = self.0.lock().unwrap();
            let p = format!("{parent}/{name}");
            assert!(
                w.dirs.contains(&p) || w.files.contains_key(&p),
                "stat of missing {p}"
            );
            *w.calls.entry("stat").or_default() += 1;
            Ok(())
        }
        async fn create(&mut self, parent: &String, name: &str, bytes: u64) -> Result<()> {
            let mut w = self.0.lock().unwrap();
            assert!(w.dirs.contains(parent));
            assert!(w.files.insert(format!("{parent}/{name}"), bytes).is_none());
            *w.calls.entry("create").or_default() += 1;
            *w.calls.entry("bytes_written").or_default() += bytes;
            Ok(())
        }
        async fn read(&mut self, parent: &String, name: &str, bytes: u64) -> Result<()> {
            let mut w = self.0.lock().unwrap();
            assert!(w.files.contains_key(&format!("{parent}/{name}")));
            *w.calls.entry("read").or_default() += 1;
            *w.calls.entry("bytes_read").or_default() += bytes;
            Ok(())
        }
        async fn unlink(&mut self, parent: &String, name: &str) -> Result<()> {
            let mut w = self.0.lock().unwrap();
            assert!(w.files.remove(&format!("{parent}/{name}")).is_some());
            *w.calls.entry("unlink").or_default() += 1;
            Ok(())
        }
        async fn open(&mut self, parent: &String, name: &str) -> Result<()> {
            self.read(parent, name, 0).await
        }
        async fn rename(&mut self, parent: &String, from: &str, to: &str) -> Result<()> {
            let mut w = self.0.lock().unwrap();
            let bytes = w.files.remove(&format!("{parent}/{from}")).unwrap();
            w.files.insert(format!("{parent}/{to}"), bytes);
            *w.calls.entry("rename").or_default() += 1;
            Ok(())
        }
        async fn remove_tree(&mut self, parent: &String, name: &str) -> Result<()> {
            let mut w = self.0.lock().unwrap();
            let p = format!("{parent}/{name}");
            let prefix = format!("{p}/");
            let below = |k: &String| *k == p || k.starts_with(&prefix);
            w.dirs.retain(|d| !below(d));
            w.files.retain(|f, _| !below(f));
            *w.calls.entry("remove_tree").or_default() += 1;
            Ok(())
        }
        async fn null_round_trip(&mut self, _dir: &String) -> Result<&'static str> {
            *self.0.lock().unwrap().calls.entry("null").or_default() += 1;
            Ok("null")
        }
    }

    async fn run(spec: &TreeSpec) -> (World, Vec<PhaseResult>) {
        let world = Arc::new(Mutex::new(World::default()));
        world.lock().unwrap().dirs.insert("base".into());
        let clients = (0..spec.tasks).map(|_| MemFs(world.clone())).collect();
        let results = run_tree(
            clients,
            "base".to_owned(),
            spec,
            &StopFlag::default(),
            |_| {},
        )
        .await
        .unwrap();
        let w = std::mem::take(&mut *world.lock().unwrap());
        (w, results)
    }

    fn items(results: &[PhaseResult], p: Phase) -> u64 {
        results.iter().find(|r| r.phase == p).map_or(0, |r| r.items)
    }

    #[tokio::test]
    async fn docs_metadata_two_tasks_counts_match_mdtest() {
        // mdtest -b 3 -z 1 -I 100 -u on 2 tasks: each task's tree has 1 + 3 = 4
        // directories and gets 100 items in each, i.e. 400 directories per task.
        let spec = TreeSpec::docs_metadata(2);
        assert_eq!(spec.dirs_in_tree(), 4);
        let (w, r) = run(&spec).await;
        assert_eq!(items(&r, Phase::TreeCreation), 8);
        assert_eq!(items(&r, Phase::DirCreation), 800);
        assert_eq!(items(&r, Phase::DirStat), 800);
        assert_eq!(items(&r, Phase::DirRemoval), 800);
        assert_eq!(items(&r, Phase::FileCreation), 800);
        assert_eq!(items(&r, Phase::FileStat), 800);
        assert_eq!(items(&r, Phase::FileRead), 800);
        assert_eq!(items(&r, Phase::FileRemoval), 800);
        assert_eq!(items(&r, Phase::TreeRemoval), 8);
        assert_eq!(w.calls["mkdir"], 808);
        assert_eq!(w.calls["rmdir"], 808);
        assert_eq!(w.calls["create"], 800);
        assert_eq!(w.calls["unlink"], 800);
        assert_eq!(w.calls["stat"], 1600);
        assert_eq!(w.dirs.len(), 1, "only the base is left");
        assert!(w.files.is_empty());
        for p in spec.phases() {
            assert_eq!(items(&r, p), spec.expected_items(p), "{p:?}");
        }
        assert_eq!(spec.mdtest_args().join(" "), "-b 3 -z 1 -I 100 -u");
    }

    #[tokio::test]
    async fn docs_small_files_counts_match_mdtest() {
        // mdtest -F -w 102400 -I 1000 -z 0 -u on 3 tasks: one directory per task,
        // 1000 files of 100 KiB each, no directory phases.
        let spec = TreeSpec::docs_small_files(3);
        let (w, r) = run(&spec).await;
        assert_eq!(
            r.iter().map(|p| p.phase).collect::<Vec<_>>(),
            [
                Phase::TreeCreation,
                Phase::FileCreation,
                Phase::FileStat,
                Phase::FileRead,
                Phase::FileRemoval,
                Phase::TreeRemoval
            ]
        );
        assert_eq!(items(&r, Phase::TreeCreation), 3);
        assert_eq!(items(&r, Phase::FileCreation), 3000);
        assert_eq!(w.calls["bytes_written"], 3000 * 102_400);
        assert_eq!(w.calls.get("bytes_read"), Some(&0));
        assert_eq!(w.calls["mkdir"], 3);
        assert_eq!(spec.mdtest_args().join(" "), "-F -z 0 -I 1000 -w 102400 -u");
    }

    #[tokio::test]
    async fn shared_tree_is_made_once() {
        // Without -u, task 0 makes one tree (b=2, z=2: 7 directories) that 4 tasks fill.
        let spec = TreeSpec {
            branch: 2,
            depth: 2,
            items: 5,
            unique_dir: false,
            tasks: 4,
            ..TreeSpec::docs_metadata(4)
        };
        let (w, r) = run(&spec).await;
        assert_eq!(items(&r, Phase::TreeCreation), 7);
        assert_eq!(items(&r, Phase::DirCreation), 4 * 5 * 7);
        assert_eq!(w.calls["mkdir"], 7 + 140);
        assert_eq!(w.dirs.len(), 1);
    }

    #[tokio::test]
    async fn stop_interrupts() {
        let world = Arc::new(Mutex::new(World::default()));
        world.lock().unwrap().dirs.insert("base".into());
        let stop = StopFlag::default();
        stop.stop();
        let spec = TreeSpec::docs_metadata(1);
        let err = run_tree(vec![MemFs(world)], "base".into(), &spec, &stop, |_| {})
            .await
            .unwrap_err();
        assert!(matches!(err, FsError::Interrupted));
    }
}
