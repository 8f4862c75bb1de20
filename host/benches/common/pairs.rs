//! A paired row: two calls back to back in every iteration, so that both
//! see the same machine, and the medians of both and of their ratio.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use criterion::BenchmarkGroup;
use criterion::measurement::WallTime;

/// Runs the row `name`, each iteration `first` then `second`; criterion
/// reports `second`. Returns each sample's mean of both.
pub fn paired(
    group: &mut BenchmarkGroup<'_, WallTime>,
    runtime: &tokio::runtime::Runtime,
    name: &str,
    first: impl AsyncFn(),
    second: impl AsyncFn(),
) -> Vec<(Duration, Duration)> {
    let samples = RefCell::new(Vec::new());
    group.bench_function(name, |b| {
        b.to_async(runtime).iter_custom(|iters| {
            let (samples, first, second) = (&samples, &first, &second);
            async move {
                let (mut a, mut b) = (Duration::ZERO, Duration::ZERO);
                for _ in 0..iters {
                    let start = Instant::now();
                    first().await;
                    a += start.elapsed();
                    let start = Instant::now();
                    second().await;
                    b += start.elapsed();
                }
                samples
                    .borrow_mut()
                    .push((a / iters as u32, b / iters as u32));
                b
            }
        });
    });
    samples.into_inner()
}

pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Prints the medians of the paired samples and of their ratios.
pub fn report_pairs(first: &str, second: &str, samples: &[(Duration, Duration)]) {
    if samples.is_empty() {
        return;
    }
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let a = median(samples.iter().map(|s| micros(s.0)).collect());
    let b = median(samples.iter().map(|s| micros(s.1)).collect());
    let ratio = median(samples.iter().map(|s| micros(s.1) / micros(s.0)).collect());
    eprintln!(
        "paired medians over {} samples: {first} {a:.2} µs, {second} {b:.2} µs, ratio {ratio:.3}",
        samples.len()
    );
}
