//! Store benchmarks (work in progress).
fn main() {}
