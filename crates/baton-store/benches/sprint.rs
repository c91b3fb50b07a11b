//! Benchmarks of the sprint file (written below).

fn main() {}
