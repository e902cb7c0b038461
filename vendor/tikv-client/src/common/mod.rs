// Copyright 2023 TiKV Project Authors. Licensed under Apache-2.0.

mod errors;
pub mod security;

pub use self::errors::Error;
pub use self::errors::ProtoKeyError;
pub use self::errors::ProtoRegionError;
pub use self::errors::Result;
