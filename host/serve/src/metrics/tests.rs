//! The metrics' text, read back and checked, and checked by promtool.

use super::*;

/// One sample of the text: its name, labels and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// Parses the sample lines of `text`, unescaping label values, and
/// checks that every family has its `# HELP` and `# TYPE` before its
/// samples.
fn parse(text: &str) -> Vec<Sample> {
    assert!(text.ends_with('\n'), "{text}");
    let mut typed: Vec<(String, String)> = Vec::new();
    let mut helped: Vec<String> = Vec::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.push(rest.split(' ').next().unwrap().to_owned());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            typed.push((name.to_owned(), kind.to_owned()));
            continue;
        }
        let (name, mut rest) = match line.find(['{', ' ']) {
            Some(at) => line.split_at(at),
            None => panic!("a sample without a value: {line}"),
        };
        let mut labels = Vec::new();
        if let Some(inner) = rest.strip_prefix('{') {
            let mut chars = inner.chars();
            loop {
                let label: String = chars.by_ref().take_while(|c| *c != '=').collect();
                assert_eq!(chars.next(), Some('"'), "{line}");
                let mut value = String::new();
                loop {
                    match chars.next().unwrap() {
                        '"' => break,
                        '\\' => value.push(match chars.next().unwrap() {
                            'n' => '\n',
                            other => other,
                        }),
                        c => value.push(c),
                    }
                }
                labels.push((label, value));
                match chars.next().unwrap() {
                    ',' => continue,
                    '}' => break,
                    other => panic!("{other:?} after a label in {line}"),
                }
            }
            rest = chars.as_str();
        }
        let value = rest.strip_prefix(' ').unwrap();
        let family = typed.last().map(|(family, _)| family.as_str()).unwrap();
        assert!(name.starts_with(family), "{name} outside its family");
        assert_eq!(helped.last().map(String::as_str), Some(family));
        samples.push(Sample {
            name: name.to_owned(),
            labels,
            value: value.parse().unwrap(),
        });
    }
    samples
}

/// The value of the sample `name` (without the prefix) with exactly
/// `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let name = format!("{PREFIX}{name}");
    let found: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            s.name == name
                && s.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(l, w)| l == k && w == v))
        })
        .collect();
    assert_eq!(found.len(), 1, "{name} {labels:?}: {found:?}");
    found[0].value
}

/// The `tool` labels of the samples `name`, in their order.
fn tools(samples: &[Sample], name: &str) -> Vec<String> {
    let name = format!("{PREFIX}{name}");
    samples
        .iter()
        .filter(|s| s.name == name)
        .map(|s| {
            let (_, tool) = s.labels.iter().find(|(l, _)| l == "tool").unwrap();
            tool.clone()
        })
        .collect()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A Metrics with some of everything.
fn filled() -> Metrics {
    let metrics = Metrics::default();
    for method in [
        "tools/call",
        "tools/call",
        "tools/list",
        "initialize",
        "ping",
        "other",
    ] {
        metrics.request(method);
    }
    metrics.refused("unauthorized");
    metrics.refused("rate_limited");
    metrics.refused("rate_limited");
    metrics.refused("bad_request");
    metrics.call_finished(Some("fs/read"), "ok", Duration::from_micros(300));
    metrics.call_finished(Some("fs/read"), "ok", ms(3));
    metrics.call_finished(Some("fs/read"), "tool_error", ms(700));
    metrics.call_finished(Some("fs/read"), "ok", Duration::from_secs(60));
    metrics.call_finished(Some("web/get"), "cancelled", ms(1));
    metrics.call_finished(None, "unknown_tool", Duration::ZERO);
    metrics.reload(true);
    metrics.reload(false);
    metrics.reload(true);
    metrics
}

#[test]
fn every_family_renders_its_values() {
    let text = filled().render();
    let samples = parse(&text);

    for (method, count) in [
        ("initialize", 1.0),
        ("other", 2.0),
        ("server/discover", 0.0),
        ("tools/call", 2.0),
        ("tools/list", 1.0),
    ] {
        assert_eq!(
            value(&samples, "requests_total", &[("method", method)]),
            count
        );
    }
    for (reason, count) in [
        ("unauthorized", 1.0),
        ("rate_limited", 2.0),
        ("busy", 0.0),
        ("sessions", 0.0),
        ("bad_request", 1.0),
    ] {
        assert_eq!(
            value(&samples, "refused_total", &[("reason", reason)]),
            count
        );
    }
    for (tool, outcome, count) in [
        ("fs/read", "ok", 3.0),
        ("fs/read", "tool_error", 1.0),
        ("web/get", "cancelled", 1.0),
        ("", "unknown_tool", 1.0),
    ] {
        let labels = [("tool", tool), ("outcome", outcome)];
        assert_eq!(value(&samples, "calls_total", &labels), count);
    }
    assert_eq!(value(&samples, "calls_in_flight", &[]), 0.0);
    assert_eq!(value(&samples, "reloads_total", &[("result", "ok")]), 2.0);
    assert_eq!(
        value(&samples, "reloads_total", &[("result", "failed")]),
        1.0
    );

    // fs/read: 0.3 ms, 3 ms, 700 ms and 60 s.
    let tool = ("tool", "fs/read");
    let count = value(&samples, "call_duration_seconds_count", &[tool]);
    assert_eq!(count, 4.0);
    let sum = value(&samples, "call_duration_seconds_sum", &[tool]);
    assert!((sum - 60.7033).abs() < 1e-9, "{sum}");
    let bucket = |le| {
        value(
            &samples,
            "call_duration_seconds_bucket",
            &[tool, ("le", le)],
        )
    };
    assert_eq!(bucket("+Inf"), count);
    let mut last = 0.0;
    for le in BOUNDS_LE {
        assert!(bucket(le) >= last, "le={le} is not cumulative");
        last = bucket(le);
    }
    for (le, below) in [
        ("0.0005", 1.0),
        ("0.0025", 1.0),
        ("0.005", 2.0),
        ("0.5", 2.0),
        ("1", 3.0),
        ("30", 3.0),
    ] {
        assert_eq!(bucket(le), below, "le={le}");
    }
    // A bound is inclusive: 1 ms is in le="0.001".
    let web = ("tool", "web/get");
    let web_bucket = |le| value(&samples, "call_duration_seconds_bucket", &[web, ("le", le)]);
    assert_eq!(web_bucket("0.0005"), 0.0);
    assert_eq!(web_bucket("0.001"), 1.0);

    // Sorted by label values, the same every time.
    assert_eq!(
        tools(&samples, "calls_total"),
        ["", "fs/read", "fs/read", "web/get"]
    );
    assert_eq!(
        tools(&samples, "call_duration_seconds_count"),
        ["", "fs/read", "web/get"]
    );
    assert_eq!(text, filled().render());
}

#[test]
fn label_values_are_escaped() {
    let metrics = Metrics::default();
    let tool = "a\\b\"c\nd";
    metrics.call_finished(Some(tool), "ok", ms(1));
    let text = metrics.render();
    assert!(
        text.contains(r#"calls_total{tool="a\\b\"c\nd",outcome="ok"} 1"#),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| l.starts_with('d')).count(), 0);
    let samples = parse(&text);
    let labels = [("tool", tool), ("outcome", "ok")];
    assert_eq!(value(&samples, "calls_total", &labels), 1.0);
    assert_eq!(
        value(&samples, "call_duration_seconds_count", &[("tool", tool)]),
        1.0
    );
    assert_eq!(Escaped("plain").to_string(), "plain");
    assert_eq!(Escaped("\\\\\n\"").to_string(), "\\\\\\\\\\n\\\"");
}

#[test]
fn series_past_the_bound_fold_into_other() {
    let metrics = Metrics::default();
    for n in 0..MAX_SERIES + 10 {
        metrics.call_finished(Some(&format!("t/{n:05}")), "ok", ms(1));
    }
    // A new outcome of a tool with a histogram: its series folds,
    // its duration does not.
    metrics.call_finished(Some("t/00000"), "tool_error", ms(2));
    // Known series keep counting under their names.
    metrics.call_finished(Some("t/00001"), "ok", ms(1));
    let samples = parse(&metrics.render());

    let calls = tools(&samples, "calls_total");
    assert_eq!(calls.len(), MAX_SERIES + 2);
    assert_eq!(
        calls.iter().filter(|t| *t != OTHER_TOOL).count(),
        MAX_SERIES
    );
    let other_ok = [("tool", OTHER_TOOL), ("outcome", "ok")];
    assert_eq!(value(&samples, "calls_total", &other_ok), 10.0);
    let other_error = [("tool", OTHER_TOOL), ("outcome", "tool_error")];
    assert_eq!(value(&samples, "calls_total", &other_error), 1.0);
    let known = [("tool", "t/00001"), ("outcome", "ok")];
    assert_eq!(value(&samples, "calls_total", &known), 2.0);
    let late = format!("t/{:05}", MAX_SERIES);
    assert!(!calls.contains(&late));

    let histograms = tools(&samples, "call_duration_seconds_count");
    assert_eq!(histograms.len(), MAX_SERIES + 1);
    let other = [("tool", OTHER_TOOL)];
    assert_eq!(value(&samples, "call_duration_seconds_count", &other), 10.0);
    let first = [("tool", "t/00000")];
    assert_eq!(value(&samples, "call_duration_seconds_count", &first), 2.0);
    assert!(!histograms.contains(&late));
}

#[test]
fn the_in_flight_gauge_follows_its_guards() {
    let metrics = Arc::new(Metrics::default());
    let in_flight = |m: &Metrics| value(&parse(&m.render()), "calls_in_flight", &[]);
    let first = metrics.call_started();
    let second = metrics.call_started();
    assert_eq!(in_flight(&metrics), 2.0);
    drop(first);
    assert_eq!(in_flight(&metrics), 1.0);
    let third = std::thread::spawn({
        let metrics = metrics.clone();
        move || metrics.call_started()
    })
    .join()
    .unwrap();
    assert_eq!(in_flight(&metrics), 2.0);
    drop((second, third));
    assert_eq!(in_flight(&metrics), 0.0);
}

#[test]
fn promtool_accepts_the_text() {
    let promtool = tiny_harness_prereq::system_program("/usr/bin/promtool", "prometheus");
    let empty = Metrics::default().render();
    let filled = filled();
    filled.call_finished(Some("odd \"name\"\\\n"), "ok", ms(5));
    let _guard = filled.call_started();
    for text in [empty, filled.render()] {
        let mut child = std::process::Command::new(&promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write as _;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(text.as_bytes()).unwrap();
        }
        let output = child.wait_with_output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success() && said.trim().is_empty(),
            "promtool check metrics ({}): {said}\n{text}",
            output.status
        );
    }
}
