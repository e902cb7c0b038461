//! A network client per calling tokio runtime, made on it: the etcd and TiKV clients
//! spawn the tasks that drive their connections on the runtime that builds them, so a
//! client shared across client threads would send every call through another thread.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use tokio::runtime::{Handle, Id};

/// One `T` per runtime that asked, each made on that runtime the first time it asks.
pub(crate) struct PerRuntime<T> {
    made: Mutex<HashMap<Id, T>>,
}

impl<T: Clone> PerRuntime<T> {
    /// `first` serves the calling runtime (the one that opened the engine).
    pub(crate) fn new(first: T) -> Self {
        Self {
            made: Mutex::new(HashMap::from([(Handle::current().id(), first)])),
        }
    }

    /// The calling runtime's `T`, made with `connect` on it the first time.
    pub(crate) async fn get<E, F>(&self, connect: impl FnOnce() -> F) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        let runtime = Handle::current().id();
        if let Some(t) = self.made.lock().expect("per-runtime clients").get(&runtime) {
            return Ok(t.clone());
        }
        let made = connect().await?;
        let mut all = self.made.lock().expect("per-runtime clients");
        Ok(all.entry(runtime).or_insert(made).clone())
    }
}
