//! The one password every test engine is set up with.

/// The password of every test engine (shared servers and private Redis servers).
pub const PASSWORD: &str = "metabench-test-pw";
