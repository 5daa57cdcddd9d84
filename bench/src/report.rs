//! Turns recorded cells into statistics and markdown tables.
//!
//! Per cell: the median, minimum and maximum throughput over the recorded runs, and the median
//! CPU time and allocations per operation. Per row: each column's median divided by the
//! reference column's median (above 1.00× is faster than the reference), and the reference's
//! median CPU time per operation divided by the column's (above 1.00× uses less CPU; other
//! load on the machine moves this far less than it moves throughput). Rows whose load generator
//! measures its own CPU time (HTTP) get a third matrix by CPU time without it, and the column
//! pairs of [`PAIRS`] are compared with each other as well.

use std::fmt::Write;

use crate::contenders::PAIRS;
use crate::harness::{Cell, Row};
use crate::sample::NoSample;

/// Summary statistics of one measured cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stats {
    /// Median operations per second.
    pub(crate) median: f64,
    /// Slowest run.
    pub(crate) min: f64,
    /// Fastest run.
    pub(crate) max: f64,
    /// Median allocation requests per operation.
    pub(crate) allocs_per_op: f64,
    /// Median CPU time per operation (whole process), in microseconds.
    pub(crate) cpu_micros_per_op: f64,
    /// Median CPU time per operation of the load generator's threads, where it measures it.
    pub(crate) load_cpu_micros_per_op: Option<f64>,
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

impl Stats {
    /// Statistics of a cell, or `None` when it has no samples.
    pub(crate) fn of(cell: &Cell) -> Option<Self> {
        let mut rates: Vec<f64> = cell.samples.iter().map(|s| s.ops_per_sec()).collect();
        let mut allocs: Vec<f64> = cell
            .samples
            .iter()
            .map(|s| s.allocations_per_op())
            .collect();
        let mut cpu: Vec<f64> = cell.samples.iter().map(|s| s.cpu_micros_per_op()).collect();
        let mut load: Vec<f64> = cell
            .samples
            .iter()
            .filter_map(|s| s.load_cpu_micros_per_op())
            .collect();
        let median_rate = median(&mut rates)?;
        Some(Self {
            median: median_rate,
            min: rates[0],
            max: rates[rates.len() - 1],
            allocs_per_op: median(&mut allocs)?,
            cpu_micros_per_op: median(&mut cpu)?,
            load_cpu_micros_per_op: median(&mut load),
        })
    }

    /// Median CPU time per operation without the load generator's share (all of it where the
    /// load does not measure itself).
    pub(crate) fn server_cpu_micros_per_op(&self) -> f64 {
        self.cpu_micros_per_op - self.load_cpu_micros_per_op.unwrap_or(0.0)
    }
}

/// Formats a rate with an SI suffix and at least two significant digits: `1.23 M`, `456 k`,
/// `1.6 k`, `789`.
pub(crate) fn human(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2} M", rate / 1e6)
    } else if rate >= 1e4 {
        format!("{:.0} k", rate / 1e3)
    } else if rate >= 1e3 {
        format!("{:.1} k", rate / 1e3)
    } else {
        format!("{rate:.0}")
    }
}

/// Collects distinct footnote texts and hands out their numbers.
#[derive(Debug, Default)]
struct Notes(Vec<String>);

impl Notes {
    fn mark(&mut self, text: String) -> usize {
        if let Some(i) = self.0.iter().position(|t| *t == text) {
            return i + 1;
        }
        self.0.push(text);
        self.0.len()
    }
}

fn missing_text(cell: &Cell, name: &str, notes: &mut Notes) -> String {
    match &cell.missing {
        Some(NoSample::Unsupported(why)) => {
            format!("n/a [{}]", notes.mark(format!("{name}: {why}")))
        }
        Some(NoSample::Failed(why)) => format!("failed [{}]", notes.mark(format!("{name}: {why}"))),
        None => "no runs".into(),
    }
}

/// The reference column's statistics for a row, if that column measured it.
fn reference_stats(row: &Row, names: &[&str]) -> Option<Stats> {
    let reference = row.workload.reference();
    let index = names.iter().position(|n| *n == reference)?;
    Stats::of(&row.cells[index])
}

/// The reference column's median for a row, if that column measured it.
fn reference_median(row: &Row, names: &[&str]) -> Option<f64> {
    reference_stats(row, names).map(|s| s.median)
}

/// A ratio matrix: one line per row, one cell per contender, `ratio(cell, reference)` or the
/// reason the cell has no number.
fn ratio_matrix(
    out: &mut String,
    rows: &[&Row],
    names: &[&str],
    notes: &mut Notes,
    ratio: impl Fn(&Stats, &Stats) -> f64,
) {
    let _ = write!(out, "| workload | reference |");
    for name in names {
        let _ = write!(out, " {name} |");
    }
    let _ = write!(out, "\n|---|---|");
    for _ in names {
        let _ = write!(out, "---:|");
    }
    out.push('\n');
    for row in rows {
        let reference = reference_stats(row, names);
        let _ = write!(
            out,
            "| {} | {} |",
            row.workload.label(),
            row.workload.reference()
        );
        for (cell, name) in row.cells.iter().zip(names) {
            let text = match (Stats::of(cell), &reference) {
                (Some(stats), Some(reference)) => format!("{:.2}×", ratio(&stats, reference)),
                (Some(_), None) => "(no reference)".into(),
                (None, _) => missing_text(cell, name, notes),
            };
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
}

/// The whole report: the ratio matrix, the detail table and the footnotes.
pub(crate) fn markdown(rows: &[Row], names: &[&str], runs: usize) -> String {
    let mut notes = Notes::default();
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(
        out,
        "### Ratios (median of {runs} runs, relative to the reference column; higher is faster)\n"
    );
    let all: Vec<&Row> = rows.iter().collect();
    ratio_matrix(&mut out, &all, names, &mut notes, |cell, reference| {
        cell.median / reference.median
    });
    let _ = writeln!(
        out,
        "\n### Ratios by CPU time (the reference's median CPU time per operation divided by the column's; higher uses less CPU)\n"
    );
    ratio_matrix(&mut out, &all, names, &mut notes, |cell, reference| {
        reference.cpu_micros_per_op / cell.cpu_micros_per_op.max(1e-9)
    });
    let measured_load: Vec<&Row> = rows
        .iter()
        .filter(|row| {
            reference_stats(row, names).is_some_and(|s| s.load_cpu_micros_per_op.is_some())
        })
        .collect();
    if !measured_load.is_empty() {
        let _ = writeln!(
            out,
            "\n### Ratios by CPU time without the load generator's threads (as above, each side's load-generator CPU per operation subtracted)\n"
        );
        ratio_matrix(
            &mut out,
            &measured_load,
            names,
            &mut notes,
            |cell, reference| {
                reference.server_cpu_micros_per_op() / cell.server_cpu_micros_per_op().max(1e-9)
            },
        );
    }
    pair_table(&mut out, rows, names);

    let _ = writeln!(
        out,
        "\n### Throughput, CPU time and allocations (median [min – max] over {runs} runs)\n"
    );
    let _ = writeln!(
        out,
        "| workload | contender | median | min – max | ratio | CPU µs/op | allocs/op |\n|---|---|---:|---:|---:|---:|---:|"
    );
    for row in rows {
        let reference = reference_median(row, names);
        for (cell, name) in row.cells.iter().zip(names) {
            let Some(stats) = Stats::of(cell) else {
                let text = missing_text(cell, name, &mut notes);
                let _ = writeln!(
                    out,
                    "| {} | {name} | {text} | | | | |",
                    row.workload.label()
                );
                continue;
            };
            let ratio =
                reference.map_or_else(|| "–".to_string(), |r| format!("{:.2}×", stats.median / r));
            let load = stats
                .load_cpu_micros_per_op
                .map_or_else(String::new, |load| format!(" (load {load:.2})"));
            let _ = writeln!(
                out,
                "| {} | {name} | {} {} | {} – {} | {ratio} | {:.2}{load} | {:.2} |",
                row.workload.label(),
                human(stats.median),
                row.workload.unit(),
                human(stats.min),
                human(stats.max),
                stats.cpu_micros_per_op,
                stats.allocs_per_op
            );
        }
    }
    if !notes.0.is_empty() {
        out.push_str("\nNotes:\n\n");
        for (i, text) in notes.0.iter().enumerate() {
            let _ = writeln!(out, "{}. {text}", i + 1);
        }
    }
    out
}

/// [`PAIRS`]: each column against its baseline on every row both measured.
fn pair_table(out: &mut String, rows: &[Row], names: &[&str]) {
    let index = |name: &str| names.iter().position(|n| *n == name);
    for (column, baseline) in PAIRS {
        let (Some(c), Some(b)) = (index(column), index(baseline)) else {
            continue;
        };
        let measured: Vec<(&Row, Stats, Stats)> = rows
            .iter()
            .filter_map(|row| Some((row, Stats::of(&row.cells[c])?, Stats::of(&row.cells[b])?)))
            .collect();
        if measured.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n### {column} against {baseline} (same rows, same rounds; higher is better for {column})\n\n\
             | workload | by throughput | by CPU time |\n|---|---:|---:|"
        );
        for (row, column, baseline) in measured {
            let _ = writeln!(
                out,
                "| {} | {:.2}× | {:.2}× |",
                row.workload.label(),
                column.median / baseline.median,
                baseline.cpu_micros_per_op / column.cpu_micros_per_op.max(1e-9)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::FileOp;
    use crate::sample::Sample;
    use crate::workloads::Workload;
    use std::time::Duration;

    fn cell(rates: &[u64]) -> Cell {
        Cell {
            samples: rates
                .iter()
                .map(|&ops| Sample {
                    ops,
                    elapsed: Duration::from_secs(1),
                    allocations: ops * 2,
                    cpu: Duration::from_micros(ops * 2),
                    load_cpu: None,
                })
                .collect(),
            missing: None,
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn stats_report_median_min_max() {
        let stats = Stats::of(&cell(&[50, 10, 40, 20, 30])).expect("five samples");
        assert_eq!((stats.median, stats.min, stats.max), (30.0, 10.0, 50.0));
        assert!((stats.allocs_per_op - 2.0).abs() < 1e-9);
    }

    #[test]
    fn ratios_divide_by_the_reference_median_and_footnote_gaps() {
        let row = Row {
            workload: Workload::File {
                op: FileOp::Read,
                depth: 1,
            },
            cells: vec![
                cell(&[100, 100, 100, 100, 100]),
                cell(&[50, 50, 50, 50, 50]),
                Cell {
                    samples: Vec::new(),
                    missing: Some(NoSample::Unsupported("no such thing")),
                },
            ],
        };
        let text = markdown(&[row], &["raw io_uring", "tokio", "other"], 5);
        assert!(text.contains("| 1.00× | 0.50× | n/a [1] |"), "{text}");
        // By CPU: both columns use 2 µs per operation.
        assert!(text.contains("| 1.00× | 1.00× | n/a [1] |"), "{text}");
        assert!(text.contains("1. other: no such thing"), "{text}");
    }

    #[test]
    fn pairs_and_load_free_cpu_are_reported_for_rows_that_have_them() {
        let with_load = |rate: u64, load_micros: u64| {
            let mut cell = cell(&[rate; 5]);
            for sample in &mut cell.samples {
                sample.load_cpu = Some(Duration::from_micros(load_micros));
            }
            cell
        };
        let row = Row {
            workload: Workload::Http {
                body: crate::jobs::HttpBody::Json,
            },
            // CPU per op is 2 µs everywhere; without the load: 1.5, 1.0 and 0.5 µs.
            cells: vec![
                with_load(1000, 500),
                with_load(800, 800),
                with_load(500, 750),
            ],
        };
        let text = markdown(&[row], &["tokio", "Baton", "Baton Compat"], 5);
        assert!(text.contains("without the load generator"), "{text}");
        assert!(text.contains("| 1.00× | 1.50× | 3.00× |"), "{text}");
        assert!(text.contains("Baton Compat against Baton"), "{text}");
        assert!(text.contains("| 0.62× | 1.00× |"), "{text}");
        assert!(text.contains("2.00 (load 0.50)"), "{text}");
    }

    #[test]
    fn human_rates_use_si_suffixes() {
        assert_eq!(human(1_234_567.0), "1.23 M");
        assert_eq!(human(45_600.0), "46 k");
        assert_eq!(human(1_640.0), "1.6 k");
        assert_eq!(human(789.0), "789");
    }
}
