//! The `metabench` binary: a thin shell around [`metabench_cli`].

/// mimalloc, not the C library's malloc: every call of a session allocates a few small
/// blocks (its boxed future, the request's key and command, the reply), and glibc's
/// malloc spends more instructions on them than `redis-benchmark` spends on a whole GET.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(metabench_cli::main());
}
