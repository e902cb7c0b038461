//! Errors of metadata operations, named after the errno JuiceFS returns.

/// What went wrong in an operation or while talking to an engine.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// ENOENT.
    #[error("no such file or directory")]
    NotFound,
    /// EEXIST.
    #[error("file exists")]
    Exists,
    /// ENOTEMPTY.
    #[error("directory not empty")]
    NotEmpty,
    /// ENOTDIR.
    #[error("not a directory")]
    NotDir,
    /// EISDIR.
    #[error("is a directory")]
    IsDir,
    /// ENOATTR / ENODATA.
    #[error("no such attribute")]
    NoAttr,
    /// EACCES.
    #[error("permission denied")]
    Access,
    /// EPERM.
    #[error("operation not permitted")]
    Perm,
    /// ENOTSUP: JuiceFS answers this too (e.g. `Resolve` without Lua scripts).
    #[error("operation not supported")]
    NotSupported,
    /// EINVAL.
    #[error("invalid argument")]
    Invalid,
    /// EFBIG: a length from `ChunkSize << 31` bytes on (the VFS's `maxFileSize`).
    #[error("file too large")]
    TooBig,
    /// EPIPE: `fallocate` of a FIFO.
    #[error("broken pipe")]
    BrokenPipe,
    /// EIO: a record JuiceFS expects is missing (a symlink without a target).
    #[error("input/output error")]
    Io,
    /// An optimistic transaction kept conflicting and was given up, as JuiceFS gives up.
    #[error("transaction conflict persisted after {0} tries")]
    Conflict(u32),
    /// The meta URL could not be understood.
    #[error("invalid meta URL: {0}")]
    BadUrl(String),
    /// The engine could not be reached or refused the login.
    #[error("cannot connect to {url}: {reason}")]
    Connect {
        /// The URL, password redacted.
        url: String,
        /// Why.
        reason: String,
    },
    /// A stored record is not what JuiceFS writes.
    #[error("corrupt metadata: {0}")]
    Corrupt(String),
    /// Any other error the engine returned.
    #[error("{0}")]
    Engine(String),
    /// The call did not finish within the run's op timeout (`--op-timeout`). The session's
    /// connection is in an unknown state afterwards: runners open a fresh one.
    #[error("no answer within {0:?} (op timeout)")]
    Timeout(std::time::Duration),
}

impl MetaError {
    /// A short stable name for counting errors by kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotFound => "ENOENT",
            Self::Exists => "EEXIST",
            Self::NotEmpty => "ENOTEMPTY",
            Self::NotDir => "ENOTDIR",
            Self::IsDir => "EISDIR",
            Self::NoAttr => "ENOATTR",
            Self::Access => "EACCES",
            Self::Perm => "EPERM",
            Self::NotSupported => "ENOTSUP",
            Self::Invalid => "EINVAL",
            Self::TooBig => "EFBIG",
            Self::BrokenPipe => "EPIPE",
            Self::Io => "EIO",
            Self::Conflict(_) => "conflict",
            Self::BadUrl(_) => "bad-url",
            Self::Connect { .. } => "connect",
            Self::Corrupt(_) => "corrupt",
            Self::Engine(_) => "engine",
            Self::Timeout(_) => "timeout",
        }
    }

    /// Whether the session that returned this error may be unusable: a timeout left a
    /// request half-way, or the connection failed (I/O errors come as [`MetaError::Engine`]).
    /// An errno answer (ENOENT, EEXIST, …) or a conflict never breaks a session.
    pub fn breaks_session(&self) -> bool {
        matches!(
            self,
            Self::Timeout(_) | Self::Engine(_) | Self::Connect { .. }
        )
    }
}

impl From<metabench_schema::DecodeError> for MetaError {
    fn from(e: metabench_schema::DecodeError) -> Self {
        Self::Corrupt(e.to_string())
    }
}

/// Result of a metadata operation.
pub type Result<T> = std::result::Result<T, MetaError>;
