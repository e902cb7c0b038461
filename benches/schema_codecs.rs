//! Micro-benchmarks of the JuiceFS record codecs: these run on every operation, so they
//! must stay far below an engine round trip.

use criterion::{criterion_group, criterion_main, Criterion};
use metabench_schema::redis_keys::RedisKeys;
use metabench_schema::tkv::TkvKeys;
use metabench_schema::{Attr, Dentry, FileType, Slice};
use std::hint::black_box;

fn codecs(c: &mut Criterion) {
    let attr = Attr::new(FileType::File, 0o644, 0o022, 1000, 1000, 12345);
    let encoded = attr.encode();
    c.bench_function("attr_encode", |b| b.iter(|| black_box(&attr).encode()));
    c.bench_function("attr_decode", |b| {
        b.iter(|| Attr::decode(black_box(&encoded)))
    });
    let d = Dentry {
        typ: FileType::Directory,
        inode: 42,
    };
    c.bench_function("dentry_encode", |b| b.iter(|| black_box(&d).encode()));
    let slices: Vec<u8> = (0..10u32)
        .flat_map(|i| {
            Slice {
                pos: i * 1024,
                id: i as u64 + 1,
                size: 1024,
                off: 0,
                len: 1024,
            }
            .encode()
        })
        .collect();
    c.bench_function("chunk_decode_10", |b| {
        b.iter(|| Slice::decode_all(black_box(&slices)))
    });
    let rk = RedisKeys::default();
    c.bench_function("redis_inode_key", |b| {
        b.iter(|| rk.inode(black_box(123456789)))
    });
    let tk = TkvKeys::for_volume(b"/jfs");
    c.bench_function("tkv_entry_key", |b| {
        b.iter(|| tk.entry(black_box(123456789), b"file-name"))
    });
}

criterion_group!(benches, codecs);
criterion_main!(benches);
