mod client;
mod cluster;
mod retry;
mod timestamp;

pub use self::client::PdClient;
pub use self::client::PdRpcClient;
pub use self::cluster::Cluster;
pub use self::cluster::Connection;
pub use self::retry::RetryClient;
pub use self::retry::RetryClientTrait;
