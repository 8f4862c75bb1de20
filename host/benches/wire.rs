//! The wire-name codec: what a request pays to name its tools.
//!
//! - `codec_new/<rule>/<n>`: building the codec for a request offering
//!   `n` tools (100 and 10,000), one in twenty of them lossy (a character
//!   the rule refuses, or too long), so hashed.
//! - `encode/<n>` and `decode/<n>`: every name of such a codec through
//!   it, reported per name.
//! - `wire_name/<form>`: one name's wire name alone, mapped (the common
//!   case) and hashed (a sha256 of the full name).
//!
//! Run: `cargo bench -p tiny-harness-host --bench wire`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tiny_harness_provider::wire::{WireCodec, WireRule};

/// `n` registry names spread over plugins and servers as a large setup
/// would have them; every twentieth is lossy under the strict rule.
fn names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let (plugin, server) = (i % 7, (i / 7) % 13);
            match i % 20 {
                0 => format!("mcp{plugin}/server-{server}.query rows {i}"),
                10 => format!("plugin{plugin}/server-{server}.{}_{i}", "long".repeat(20)),
                _ => format!("plugin{plugin}/server-{server}.read_file_{i}"),
            }
        })
        .collect()
}

fn codec_new(c: &mut Criterion) {
    let mut group = c.benchmark_group("codec_new");
    for n in [100, 10_000] {
        let names = names(n);
        group.throughput(Throughput::Elements(n as u64));
        for (label, rule) in [("strict", WireRule::Strict), ("gemini", WireRule::Gemini)] {
            group.bench_with_input(BenchmarkId::new(label, n), &names, |b, names| {
                b.iter(|| WireCodec::new(rule, names.iter().map(String::as_str)))
            });
        }
    }
    group.finish();
}

fn lookups(c: &mut Criterion) {
    for n in [100, 10_000] {
        let names = names(n);
        let codec = WireCodec::new(WireRule::Strict, names.iter().map(String::as_str));
        let wires: Vec<String> = names
            .iter()
            .map(|name| codec.encode(name).expect("offered").to_owned())
            .collect();
        let mut group = c.benchmark_group("encode");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                for name in &names {
                    black_box(codec.encode(black_box(name)));
                }
            })
        });
        group.finish();
        let mut group = c.benchmark_group("decode");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                for wire in &wires {
                    black_box(codec.decode(black_box(wire)).expect("offered"));
                }
            })
        });
        group.finish();
    }
}

fn wire_name(c: &mut Criterion) {
    let mut group = c.benchmark_group("wire_name");
    for (form, name) in [
        ("mapped", "plugin3/server-7.read_file_1234"),
        ("hashed", "mcp3/server-7.query rows 1234"),
    ] {
        group.bench_function(form, |b| {
            b.iter(|| WireRule::Strict.wire_name(black_box(name)))
        });
    }
    group.finish();
}

criterion_group!(benches, codec_new, lookups, wire_name);
criterion_main!(benches);
