//! The `metabench` binary: a thin shell around [`metabench_cli`].

fn main() {
    std::process::exit(metabench_cli::main());
}
