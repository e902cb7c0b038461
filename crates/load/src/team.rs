//! The processes one sweep spans: this process alone ([`Solo`]), or the ranks of an MPI
//! job (`metabench-mpi`). Rank 0 leads: it formats or enters the volume, merges what
//! every rank measured and decides what happens next; every rank runs its share of each
//! level's clients. The sweep talks to the team through three collective calls, made by
//! every rank in the same order: [`Team::barrier`], [`Team::gather`] and
//! [`Team::broadcast`].
//!
//! Each call answers on a channel, so rank 0, waiting for the others, still sees its
//! own stop flag: shortly after a stop (`mpirun` stopping the job on Ctrl-C or because a
//! rank died) it gives up on ranks that do not come, and writes what it merged and
//! cleans up before `mpirun` kills it. The other ranks wait for rank 0 (or for `mpirun`):
//! one that left early would make `mpirun` end the job at once.

use crate::stop::StopFlag;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long rank 0 still waits for the others once its stop flag is set: long enough
/// for ranks that were stopped together to meet, short enough to clean up before
/// `mpirun` kills a job it is stopping (SIGTERM and SIGKILL 1 s apart by default).
pub const STOP_GRACE: Duration = Duration::from_millis(500);

/// The answer to a collective call, when every rank has made it.
pub type Answer<T> = oneshot::Receiver<T>;

/// The processes of one run, each running a share of every level's clients.
pub trait Team: Send + Sync {
    /// This process's rank: 0 leads.
    fn rank(&self) -> usize;
    /// How many ranks there are.
    fn size(&self) -> usize;
    /// The host this rank runs on.
    fn host(&self) -> &str;
    /// Answers once every rank has called it.
    fn barrier(&self) -> Answer<()>;
    /// Rank 0 gets every rank's bytes, in rank order; the other ranks get `None`.
    fn gather(&self, bytes: Vec<u8>) -> Answer<Option<Vec<Vec<u8>>>>;
    /// Every rank gets rank 0's bytes (what the other ranks pass is not sent).
    fn broadcast(&self, bytes: Vec<u8>) -> Answer<Vec<u8>>;
    /// Leaves the team once every rank has (MPI: `MPI_Finalize`); no call after it.
    fn finish(&self) -> Answer<()>;
    /// Ends this process with `code`, and with it the whole job (MPI: `MPI_Abort`): the
    /// last resort of a rank that gave up on the others, so that none is left waiting.
    fn abort(&self, code: i32) -> !;
}

/// Whether an MPI launcher (`mpirun`, `mpiexec`, `srun`) started this process as one of
/// several ranks: its environment says so.
pub fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .any(|n| n.trim().parse::<u32>().is_ok_and(|n| n > 1))
}

/// This process's rank as its MPI launcher set it (0 when none did): known before the
/// team is joined, e.g. to let rank 0 alone speak.
pub fn launched_rank() -> u32 {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
        .unwrap_or(0)
}

/// Why a rank stopped waiting for the others.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct TeamError(pub String);

/// This process alone: rank 0 of 1.
#[derive(Debug, Clone)]
pub struct Solo {
    host: String,
}

impl Default for Solo {
    fn default() -> Self {
        Self { host: host_name() }
    }
}

impl Team for Solo {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn host(&self) -> &str {
        &self.host
    }

    fn barrier(&self) -> Answer<()> {
        answered(())
    }

    fn gather(&self, bytes: Vec<u8>) -> Answer<Option<Vec<Vec<u8>>>> {
        answered(Some(vec![bytes]))
    }

    fn broadcast(&self, bytes: Vec<u8>) -> Answer<Vec<u8>> {
        answered(bytes)
    }

    fn finish(&self) -> Answer<()> {
        answered(())
    }

    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
}

/// A call answered at once.
fn answered<T>(value: T) -> Answer<T> {
    let (tx, rx) = oneshot::channel();
    let _ = tx.send(value);
    rx
}

/// This machine's host name (`uname -n`).
pub fn host_name() -> String {
    // SAFETY: uname only writes into the struct we pass.
    let mut name: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut name) } != 0 {
        return "localhost".to_owned();
    }
    let bytes: Vec<u8> = name
        .nodename
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Rank `rank`'s share of `clients` spread over `size` ranks, as evenly as the level
/// allows (the first `clients % size` ranks run one more): how many clients it runs,
/// and the level-wide index of its first.
pub fn share(clients: u32, rank: usize, size: usize) -> (u32, u32) {
    let (size, rank) = (size.max(1) as u32, rank as u32);
    let (each, extra) = (clients / size, clients % size);
    let count = each + u32::from(rank < extra);
    let first = rank * each + rank.min(extra);
    (count, first)
}

/// Rank `rank`'s share of `workers` grouped into clients of `per_client` (the last one
/// smaller when they do not divide): whole clients spread as [`share`] spreads clients,
/// so no client is split over two ranks. How many workers the rank runs, and the
/// level-wide index of its first.
pub fn share_clients(workers: u32, per_client: u32, rank: usize, size: usize) -> (u32, u32) {
    let per_client = per_client.max(1);
    let (clients, first_client) = share(workers.div_ceil(per_client), rank, size);
    let first = (first_client * per_client).min(workers);
    let end = ((first_client + clients) * per_client).min(workers);
    (end - first, first)
}

/// Waits for `team`'s answer to a collective call: on rank 0, gives up [`STOP_GRACE`]
/// after `stop` is set (a rank that died never answers); on the others, waits for it.
/// Fails when the team is gone.
pub async fn answer<T>(team: &dyn Team, rx: Answer<T>, stop: &StopFlag) -> Result<T, TeamError> {
    let patience = (team.rank() == 0).then_some(STOP_GRACE);
    answer_within(rx, stop, patience).await
}

/// Waits for a collective call's answer, giving up `patience` after `stop` is set (never
/// without it), or when the team is gone.
async fn answer_within<T>(
    mut rx: Answer<T>,
    stop: &StopFlag,
    patience: Option<Duration>,
) -> Result<T, TeamError> {
    let mut stopped_at: Option<Instant> = None;
    loop {
        tokio::select! {
            got = &mut rx => {
                return got.map_err(|_| TeamError("the MPI ranks are gone".to_owned()));
            }
            () = tokio::time::sleep(Duration::from_millis(20)) => {
                if let (true, Some(patience)) = (stop.is_stopped(), patience) {
                    let since = *stopped_at.get_or_insert_with(Instant::now);
                    if since.elapsed() >= patience {
                        return Err(TeamError(
                            "stopped while waiting for the other ranks".to_owned(),
                        ));
                    }
                }
            }
        }
    }
}

/// Every rank's `value`, in rank order, on rank 0 (`None` on the others).
pub async fn gather_all<T: Serialize + DeserializeOwned>(
    team: &dyn Team,
    value: &T,
    stop: &StopFlag,
) -> Result<Option<Vec<T>>, TeamError> {
    let bytes = serde_json::to_vec(value).expect("team messages serialize");
    let Some(all) = answer(team, team.gather(bytes), stop).await? else {
        return Ok(None);
    };
    all.iter()
        .enumerate()
        .map(|(rank, b)| {
            serde_json::from_slice(b)
                .map_err(|e| TeamError(format!("rank {rank} sent what this rank cannot read: {e}")))
        })
        .collect::<Result<Vec<T>, _>>()
        .map(Some)
}

/// Rank 0's `value` on every rank (`value` is only read on rank 0).
pub async fn from_leader<T: Serialize + DeserializeOwned>(
    team: &dyn Team,
    value: Option<&T>,
    stop: &StopFlag,
) -> Result<T, TeamError> {
    let bytes = match value {
        Some(v) if team.rank() == 0 => serde_json::to_vec(v).expect("team messages serialize"),
        _ => Vec::new(),
    };
    let got = answer(team, team.broadcast(bytes), stop).await?;
    serde_json::from_slice(&got)
        .map_err(|e| TeamError(format!("rank 0 sent what this rank cannot read: {e}")))
}

/// Gathers every rank's `value` on rank 0, lets it `decide` from them, and gives the
/// decision to every rank: one round of agreement (and a barrier).
pub async fn agree<T, D>(
    team: &dyn Team,
    value: &T,
    stop: &StopFlag,
    decide: impl FnOnce(Vec<T>) -> D,
) -> Result<D, TeamError>
where
    T: Serialize + DeserializeOwned,
    D: Serialize + DeserializeOwned,
{
    let all = gather_all(team, value, stop).await?;
    let decision = all.map(decide);
    from_leader(team, decision.as_ref(), stop).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_spread_in_whole_clients() {
        // 12 workers in clients of 4 over 2 ranks: clients 0, 1 and 2 go 2 + 1.
        assert_eq!(share_clients(12, 4, 0, 2), (8, 0));
        assert_eq!(share_clients(12, 4, 1, 2), (4, 8));
        // 10 in clients of 4: clients of 4, 4 and 2, spread 2 + 1; a rank may get none.
        assert_eq!(share_clients(10, 4, 0, 2), (8, 0));
        assert_eq!(share_clients(10, 4, 1, 2), (2, 8));
        assert_eq!(share_clients(4, 4, 1, 2), (0, 4));
        // One worker per client is `share`.
        for rank in 0..3 {
            assert_eq!(share_clients(10, 1, rank, 3), share(10, rank, 3));
        }
    }

    #[test]
    fn shares_add_up_and_do_not_overlap() {
        for size in 1..6 {
            for clients in 0..40u32 {
                let shares: Vec<(u32, u32)> = (0..size).map(|r| share(clients, r, size)).collect();
                assert_eq!(shares.iter().map(|s| s.0).sum::<u32>(), clients);
                let mut next = 0;
                for (count, first) in &shares {
                    assert_eq!(*first, next, "{clients} over {size}: {shares:?}");
                    next += count;
                }
                let (min, max) = (
                    shares.iter().map(|s| s.0).min().unwrap(),
                    shares.iter().map(|s| s.0).max().unwrap(),
                );
                assert!(max - min <= 1, "{shares:?}");
            }
        }
    }

    #[tokio::test]
    async fn alone_every_call_answers_at_once() {
        let (team, stop) = (Solo::default(), StopFlag::default());
        assert_eq!((team.rank(), team.size()), (0, 1));
        assert!(!team.host().is_empty());
        answer(&team, team.barrier(), &stop).await.unwrap();
        let all = gather_all(&team, &7u32, &stop).await.unwrap();
        assert_eq!(all, Some(vec![7]));
        let decided = agree(&team, &3u32, &stop, |v| v.iter().sum::<u32>() * 2)
            .await
            .unwrap();
        assert_eq!(decided, 6);
    }

    #[tokio::test]
    async fn a_rank_that_never_answers_is_given_up_after_a_stop() {
        let stop = StopFlag::default();
        let (_tx, rx) = oneshot::channel::<()>();
        stop.stop();
        let started = Instant::now();
        let e = answer(&Solo::default(), rx, &stop).await.unwrap_err();
        assert!(e.0.contains("stopped"), "{e}");
        assert!(started.elapsed() >= STOP_GRACE);
        // A rank other than 0 waits on (until mpirun ends the job).
        let (_tx, rx) = oneshot::channel::<()>();
        let waited = tokio::time::timeout(STOP_GRACE * 3, answer_within(rx, &stop, None)).await;
        assert!(waited.is_err(), "gave up: {waited:?}");
        let (tx, rx) = oneshot::channel::<()>();
        drop(tx);
        assert!(answer(&Solo::default(), rx, &StopFlag::default())
            .await
            .is_err());
    }
}
