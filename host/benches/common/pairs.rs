//! A paired row: two calls back to back in every iteration, so that both
//! see the same machine, and the medians of both and of their ratio; and
//! the CPU time the bench process spent in each (every thread of it, the
//! runtime's included; not the server's), which a machine's noise moves
//! far less than wall time.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use criterion::BenchmarkGroup;
use criterion::measurement::WallTime;

/// One sample of a paired row: the mean wall time of each call, and the
/// mean CPU time of the bench process during each.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    pub first: Duration,
    pub second: Duration,
    pub first_cpu: Duration,
    pub second_cpu: Duration,
}

/// The CPU time of this process so far, every thread's.
fn cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to write.
    let read = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    assert_eq!(read, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Runs the row `name`, each iteration `first` then `second`; criterion
/// reports `second`. Returns each sample's means of both.
pub fn paired(
    group: &mut BenchmarkGroup<'_, WallTime>,
    runtime: &tokio::runtime::Runtime,
    name: &str,
    first: impl AsyncFn(),
    second: impl AsyncFn(),
) -> Vec<Pair> {
    let samples = RefCell::new(Vec::new());
    group.bench_function(name, |b| {
        b.to_async(runtime).iter_custom(|iters| {
            let (samples, first, second) = (&samples, &first, &second);
            async move {
                let (mut a, mut b) = (Duration::ZERO, Duration::ZERO);
                let (mut a_cpu, mut b_cpu) = (Duration::ZERO, Duration::ZERO);
                for _ in 0..iters {
                    // The clock's own call stays out of the wall time.
                    let cpu = cpu_time();
                    let start = Instant::now();
                    first().await;
                    a += start.elapsed();
                    a_cpu += cpu_time() - cpu;
                    let cpu = cpu_time();
                    let start = Instant::now();
                    second().await;
                    b += start.elapsed();
                    b_cpu += cpu_time() - cpu;
                }
                let n = iters as u32;
                samples.borrow_mut().push(Pair {
                    first: a / n,
                    second: b / n,
                    first_cpu: a_cpu / n,
                    second_cpu: b_cpu / n,
                });
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

/// Prints the medians of the paired samples and of their ratios, of
/// wall time, then of the process's CPU time.
pub fn report_pairs(first: &str, second: &str, samples: &[Pair]) {
    if samples.is_empty() {
        return;
    }
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let a = median(samples.iter().map(|s| micros(s.first)).collect());
    let b = median(samples.iter().map(|s| micros(s.second)).collect());
    let ratio = median(
        samples
            .iter()
            .map(|s| micros(s.second) / micros(s.first))
            .collect(),
    );
    eprintln!(
        "paired medians over {} samples: {first} {a:.2} µs, {second} {b:.2} µs, ratio {ratio:.3}",
        samples.len()
    );
    let a = median(samples.iter().map(|s| micros(s.first_cpu)).collect());
    let b = median(samples.iter().map(|s| micros(s.second_cpu)).collect());
    eprintln!(
        "paired CPU medians: {first} {a:.2} µs, {second} {b:.2} µs, the second's extra {:.2} µs",
        b - a
    );
}
