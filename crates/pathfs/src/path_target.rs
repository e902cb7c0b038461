//! A path-level system beside JuiceFS (HDFS, S3, anything with [`FsOps`]) as a target of
//! the sweep: NNBench's four calls on each system, timed by the same runner, window and
//! recorder as a JuiceFS engine's operations.
//!
//! NNBench's operations, as metabench's `nnbench` workload names them, on a system's
//! [`FsOps`]:
//! - `create_write`: create, write one small block ([`BLOCK_BYTES`]), close;
//! - `open`: open of an existing file (HDFS `getFileInfo` + `getBlockLocations`, S3
//!   HEAD + GET);
//! - `rename`: rename of a file within its directory (S3: COPY + DELETE, as S3A does);
//! - `unlink`: delete of a file, made (empty, as on the JuiceFS side) untimed before
//!   each call.
//!
//! The names follow the JuiceFS side's ([`metabench_load::catalog::OpState`]): `f{i}`
//! for the numbered files, `file` for the fixed one, all after the client's tag.

use crate::error::FsError;
use crate::fs_ops::FsOps;
use metabench_engine::{MetaError, Result, SessionOptions, SessionStats, Telemetry};
use metabench_load::{Op, Session, Target};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

/// Bytes written by `create_write` (and in the files `open` and `rename` work on): the
/// same 1 KiB the JuiceFS side's `create_write` records as one slice.
pub const BLOCK_BYTES: u64 = 1024;

/// A path-level system: where its clients' calls come from.
pub trait PathSystem: Send + Sync + 'static {
    /// One client's calls.
    type Fs: FsOps<Dir: Serialize + DeserializeOwned>;

    /// The system's name in results and failures (`hdfs`, `s3`).
    fn name(&self) -> &'static str;

    /// A client of its own (its own connections), opened where it is called: on the
    /// thread that will make its calls, so no request or reply crosses to another
    /// thread. NNBench's tasks were JVMs with a client each.
    fn fs(&self) -> crate::Result<Self::Fs>;

    /// The run's own directory: every path the sweep touches is below it.
    fn root(&self) -> <Self::Fs as FsOps>::Dir;

    /// The system's URL, as results print it (no secret is ever in it).
    fn url(&self) -> String;

    /// The client library that makes the calls, and how the calls are made: what
    /// results say in place of a JuiceFS client profile.
    fn client(&self) -> &'static str;

    /// What each operation is on this system, and where a figure knowingly differs from
    /// the published comparison's client: one line each, printed with every result.
    fn fidelity_notes(&self) -> Vec<String>;

    /// Removes everything the run made (the run's directory, and what it made above it).
    fn cleanup(&self) -> impl std::future::Future<Output = crate::Result<()>> + Send;
}

/// A [`PathSystem`] as a sweep [`Target`].
pub struct PathTarget<P>(pub P);

/// A [`PathSystem`]'s client as a sweep [`Session`]: its calls, and the run's directory
/// (where its null round trip asks for a path that is never there).
pub struct PathSession<F: FsOps> {
    fs: F,
    root: F::Dir,
}

/// One NNBench operation's state on a path-level client.
pub struct PathWork<D> {
    op: Op,
    dir: D,
    tag: String,
    i: u64,
    /// The fixed file's name (`{tag}file`), made once.
    fixed: String,
    /// The numbered names of the next call (`{tag}f{i}`, `{tag}f{i+1}`), written by the
    /// untimed preparation.
    next: [String; 2],
}

fn meta_error(e: FsError) -> MetaError {
    match e {
        FsError::Meta(e) => e,
        other => MetaError::Engine(other.to_string()),
    }
}

impl<P: PathSystem> Target for PathTarget<P> {
    type Session = PathSession<P::Fs>;
    type Client = ();

    fn name(&self) -> &str {
        self.0.name()
    }

    async fn session(&self, _opts: &SessionOptions) -> Result<Self::Session> {
        Ok(PathSession {
            fs: self.0.fs().map_err(meta_error)?,
            root: self.0.root(),
        })
    }

    fn client_of(_session: &Self::Session) {}

    async fn worker(&self, opts: &SessionOptions, _client: &()) -> Result<Self::Session> {
        self.session(opts).await
    }

    async fn settle(&self) -> Result<()> {
        Ok(())
    }

    async fn telemetry(&self) -> Result<Telemetry> {
        Ok(Telemetry::default())
    }

    fn engine_bound(&self, _delta: &Telemetry, _window: Duration, _clients: u32) -> Option<String> {
        None
    }
}

impl<F: FsOps<Dir: Serialize + DeserializeOwned>> Session for PathSession<F> {
    type Dir = F::Dir;
    type Work = PathWork<F::Dir>;

    async fn mkdir(&mut self, parent: &F::Dir, name: &str) -> Result<F::Dir> {
        self.fs.mkdir(parent, name).await.map_err(meta_error)
    }

    async fn remove_tree(&mut self, parent: &F::Dir, name: &str) -> Result<()> {
        self.fs.remove_tree(parent, name).await.map_err(meta_error)
    }

    async fn setup(&mut self, op: Op, dir: &F::Dir, tag: &str) -> Result<PathWork<F::Dir>> {
        if !Op::NNBENCH.contains(&op) {
            return Err(MetaError::Engine(format!(
                "{op} is a JuiceFS operation with no call of its own on a path-level system: \
                 use --workload nnbench (create_write, open, rename, unlink)"
            )));
        }
        let work = PathWork {
            op,
            dir: dir.clone(),
            tag: tag.to_owned(),
            i: 0,
            fixed: format!("{tag}file"),
            next: [String::new(), String::new()],
        };
        let made = match op {
            Op::Open => self.fs.create(dir, &work.fixed, BLOCK_BYTES).await,
            Op::Rename => self.fs.create(dir, &format!("{tag}f0"), BLOCK_BYTES).await,
            _ => Ok(()),
        };
        made.map_err(meta_error)?;
        Ok(work)
    }

    async fn prepare(&mut self, work: &mut PathWork<F::Dir>) -> Result<()> {
        use std::fmt::Write as _;
        let [first, second] = &mut work.next;
        first.clear();
        second.clear();
        let _ = write!(first, "{}f{}", work.tag, work.i);
        let _ = write!(second, "{}f{}", work.tag, work.i + 1);
        if work.op == Op::Unlink {
            // Empty, as the JuiceFS side's (a delete is the same request either way; an
            // HDFS file with a block would take its close's wait for the block report).
            self.fs
                .create(&work.dir, &work.fixed, 0)
                .await
                .map_err(meta_error)?;
        }
        Ok(())
    }

    async fn call(&mut self, work: &mut PathWork<F::Dir>) -> Result<()> {
        work.i += 1;
        let (dir, [first, second]) = (&work.dir, &work.next);
        let outcome = match work.op {
            Op::CreateWrite => self.fs.create(dir, first, BLOCK_BYTES).await,
            Op::Open => self.fs.open(dir, &work.fixed).await,
            Op::Rename => self.fs.rename(dir, first, second).await,
            Op::Unlink => self.fs.unlink(dir, &work.fixed).await,
            other => unreachable!("{other} refused by setup"),
        };
        outcome.map_err(meta_error)
    }

    /// The requests the system's client counts ([`FsOps::requests`]): HDFS NameNode
    /// RPCs, S3 HTTP requests.
    fn stats(&self) -> SessionStats {
        SessionStats {
            round_trips: self.fs.requests(),
            ..SessionStats::default()
        }
    }

    async fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    async fn null_round_trip(&mut self) -> Result<&'static str> {
        self.fs
            .null_round_trip(&self.root)
            .await
            .map_err(meta_error)
    }

    fn deleted_pending(&mut self) -> usize {
        0
    }

    async fn free_deleted(&mut self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::tests::{MemFs, World};
    use metabench_load::{run_sweep, Exec, Live, Solo, StopFlag, SweepConfig, Workload};
    use std::sync::{Arc, Mutex};

    struct Mem(Arc<Mutex<World>>);

    impl PathSystem for Mem {
        type Fs = MemFs;
        fn name(&self) -> &'static str {
            "mem"
        }
        fn fs(&self) -> crate::Result<MemFs> {
            Ok(MemFs(self.0.clone()))
        }
        fn root(&self) -> String {
            "base".to_owned()
        }
        fn url(&self) -> String {
            "mem://".to_owned()
        }
        fn client(&self) -> &'static str {
            "in memory"
        }
        fn fidelity_notes(&self) -> Vec<String> {
            Vec::new()
        }
        async fn cleanup(&self) -> crate::Result<()> {
            Ok(())
        }
    }

    /// The sweep drives a path-level system as it drives an engine: every nnbench
    /// operation at every level, without errors, its floor on the system's null round
    /// trip, and nothing left below the run's directory afterwards.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sweep_runs_nnbench_on_a_path_level_system_and_leaves_nothing() {
        let world = Arc::new(Mutex::new(World::default()));
        world.lock().unwrap().dirs.insert("base".into());
        let config = SweepConfig {
            levels: vec![1, 3],
            open_loop: None,
            workload: Workload::resolve("nnbench", &[]).unwrap(),
            warmup: Duration::from_millis(20),
            duration: Duration::from_millis(150),
            shared_dir: false,
            until_plateau: false,
            session: SessionOptions::default(),
            background_in_window: false,
            op_timeout: Duration::from_secs(5),
            threads_per_client: 1,
            tree: None,
            engine_counters: true,
        };
        let exec = Exec::new(2, metabench_load::Idle::Sleep).unwrap();
        let outcome = run_sweep(
            &exec,
            Arc::new(PathTarget(Mem(world.clone()))),
            "base".to_owned(),
            &config,
            &StopFlag::default(),
            Arc::new(Live::default()),
            &Solo::default(),
            |_, _| {},
        )
        .await
        .unwrap();
        assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
        assert_eq!(
            outcome.floor.as_ref().map(|f| f.request.as_str()),
            Some("null")
        );
        assert_eq!(
            outcome.levels.iter().map(|l| l.clients).collect::<Vec<_>>(),
            [1, 3]
        );
        for level in &outcome.levels {
            let ops: Vec<&str> = level.ops.iter().map(|o| o.op.as_str()).collect();
            assert_eq!(ops, ["create_write", "open", "rename", "unlink"]);
            for op in &level.ops {
                assert!(op.latency.count > 0, "{} at {}", op.op, level.clients);
                assert!(op.errors.is_empty(), "{}: {:?}", op.op, op.errors);
            }
        }
        let w = world.lock().unwrap();
        assert_eq!(w.dirs.iter().collect::<Vec<_>>(), ["base"]);
        assert!(
            w.files.is_empty(),
            "{:?}",
            w.files.keys().take(3).collect::<Vec<_>>()
        );
        for call in ["create", "read", "rename", "unlink", "remove_tree"] {
            assert!(
                w.calls.get(call).copied().unwrap_or(0) > 0,
                "no {call}: {:?}",
                w.calls
            );
        }
    }

    /// An operation a path-level system has no call for fails the level's setup, in one
    /// line that names the workload to use.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_juicefs_only_operation_is_refused_at_setup() {
        let world = Arc::new(Mutex::new(World::default()));
        world.lock().unwrap().dirs.insert("base".into());
        let mut session = PathTarget(Mem(world))
            .session(&SessionOptions::default())
            .await
            .unwrap();
        let refused = session.setup(Op::Getxattr, &"base".to_owned(), "").await;
        match refused {
            Err(e) => assert!(e.to_string().contains("--workload nnbench"), "{e}"),
            Ok(_) => panic!("getxattr set up on a path-level system"),
        }
    }
}
