// Copyright 2021 TiKV Project Authors. Licensed under Apache-2.0.

pub mod iter;
