//! std::time::Instant::now() under criterion (issue 44: the ladder's cost
//! against the language's own harness; tools/clockbench/cli/bench_harness.py).
//! Bencher::iter hands the returned Instant to black_box.

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Instant;

fn instant_now(c: &mut Criterion) {
    c.bench_function("Instant::now", |b| b.iter(Instant::now));
}

criterion_group!(benches, instant_now);
criterion_main!(benches);
