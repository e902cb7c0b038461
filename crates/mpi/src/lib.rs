//! metabench's ranks under Open MPI: a [`Team`] whose members are the processes of an
//! MPI job (`mpirun -np N metabench sweep …`), built on the `mpi` crate (rsmpi).
//!
//! MPI is driven from one thread of its own, which initialises it, makes the collective
//! calls and finalises it. The sweep hands it calls and awaits their answers, so a rank
//! blocked in a collective whose peer died still sees its stop flag. MPI is initialised
//! with `MPI_THREAD_MULTIPLE` where the library offers it, so that a rank that gave up on
//! the others can call `MPI_Abort` while that thread is still blocked.

use metabench_load::team::{Answer, Team};
use mpi::datatype::PartitionMut;
use mpi::traits::*;
use mpi::Count;
use std::sync::mpsc;
use tokio::sync::oneshot;

/// A collective call, with where its answer goes.
enum Call {
    Barrier(oneshot::Sender<()>),
    Gather(Vec<u8>, oneshot::Sender<Option<Vec<Vec<u8>>>>),
    Broadcast(Vec<u8>, oneshot::Sender<Vec<u8>>),
    Finish(oneshot::Sender<()>),
}

/// This process as one rank of the MPI job that started it.
pub struct MpiTeam {
    rank: usize,
    size: usize,
    host: String,
    /// Whether any thread may call MPI (`MPI_THREAD_MULTIPLE`).
    multiple: bool,
    calls: mpsc::Sender<Call>,
}

/// Who this rank is, as MPI's thread found out.
struct Joined {
    rank: usize,
    size: usize,
    host: String,
    multiple: bool,
}

impl MpiTeam {
    /// Joins the MPI job this process was started in (`MPI_Init_thread` on MPI's own
    /// thread). Fails in one line when MPI cannot be initialised.
    pub fn join() -> Result<Self, String> {
        let (calls, inbox) = mpsc::channel::<Call>();
        let (joined_tx, joined) = mpsc::channel::<Result<Joined, String>>();
        std::thread::Builder::new()
            .name("metabench-mpi".to_owned())
            .spawn(move || serve(inbox, joined_tx))
            .map_err(|e| format!("cannot start MPI's thread: {e}"))?;
        let joined = joined
            .recv()
            .map_err(|_| "MPI's thread ended while initialising MPI".to_owned())??;
        Ok(Self {
            rank: joined.rank,
            size: joined.size,
            host: joined.host,
            multiple: joined.multiple,
            calls,
        })
    }

    fn call<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Call) -> Answer<T> {
        let (tx, rx) = oneshot::channel();
        // A closed thread drops the sender: the caller sees the team gone.
        let _ = self.calls.send(make(tx));
        rx
    }
}

impl Team for MpiTeam {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn host(&self) -> &str {
        &self.host
    }

    fn barrier(&self) -> Answer<()> {
        self.call(Call::Barrier)
    }

    fn gather(&self, bytes: Vec<u8>) -> Answer<Option<Vec<Vec<u8>>>> {
        self.call(|tx| Call::Gather(bytes, tx))
    }

    fn broadcast(&self, bytes: Vec<u8>) -> Answer<Vec<u8>> {
        self.call(|tx| Call::Broadcast(bytes, tx))
    }

    fn finish(&self) -> Answer<()> {
        self.call(Call::Finish)
    }

    fn abort(&self, code: i32) -> ! {
        if self.multiple {
            mpi::topology::SimpleCommunicator::world().abort(code)
        }
        // Without MPI_THREAD_MULTIPLE only MPI's thread may call MPI: exiting with an
        // error code makes mpirun end the job.
        std::process::exit(code)
    }
}

/// MPI's thread: initialises MPI, says who this rank is, then makes the calls it is
/// handed until `Finish` (or until the team is dropped), and finalises MPI.
fn serve(inbox: mpsc::Receiver<Call>, joined: mpsc::Sender<Result<Joined, String>>) {
    let Some((universe, threading)) = mpi::initialize_with_threading(mpi::Threading::Multiple)
    else {
        let _ = joined.send(Err("MPI was already initialised in this process".to_owned()));
        return;
    };
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let host =
        mpi::environment::processor_name().unwrap_or_else(|_| metabench_load::team::host_name());
    let me = Joined {
        rank,
        size,
        host,
        multiple: threading == mpi::Threading::Multiple,
    };
    if joined.send(Ok(me)).is_err() {
        return;
    }
    let root = world.process_at_rank(0);
    for call in inbox {
        match call {
            Call::Barrier(tx) => {
                world.barrier();
                let _ = tx.send(());
            }
            Call::Gather(bytes, tx) => {
                // A rank's report is kilobytes; MPI counts bytes in an `i32`.
                let len = Count::try_from(bytes.len()).expect("a report under 2 GiB");
                let all = if rank == 0 {
                    let mut counts = vec![0 as Count; size];
                    root.gather_into_root(&len, &mut counts[..]);
                    let displs: Vec<Count> = counts
                        .iter()
                        .scan(0, |at, &n| {
                            let here = *at;
                            *at = Count::checked_add(*at, n).expect("reports under 2 GiB in all");
                            Some(here)
                        })
                        .collect();
                    let mut buf = vec![0u8; counts.iter().map(|&n| n as usize).sum()];
                    {
                        let mut parts = PartitionMut::new(&mut buf[..], &counts[..], &displs[..]);
                        root.gather_varcount_into_root(&bytes[..], &mut parts);
                    }
                    Some(
                        counts
                            .iter()
                            .zip(&displs)
                            .map(|(&n, &at)| buf[at as usize..(at + n) as usize].to_vec())
                            .collect(),
                    )
                } else {
                    root.gather_into(&len);
                    root.gather_varcount_into(&bytes[..]);
                    None
                };
                let _ = tx.send(all);
            }
            Call::Broadcast(bytes, tx) => {
                let mut len = if rank == 0 { bytes.len() as u64 } else { 0 };
                root.broadcast_into(&mut len);
                let mut buf = if rank == 0 {
                    bytes
                } else {
                    vec![0u8; len as usize]
                };
                root.broadcast_into(&mut buf[..]);
                let _ = tx.send(buf);
            }
            Call::Finish(tx) => {
                drop(universe);
                let _ = tx.send(());
                return;
            }
        }
    }
}
