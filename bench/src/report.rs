//! The results as Markdown: per workload, each server's figures at each offer, as the
//! median of the rounds with their spread, and each figure's ratio to the ceiling's in
//! the same round.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use crate::load::{Offer, Stats};
use crate::memory::Growth;
use crate::plan::Workload;

/// A measured cell: indices of its workload, entry and offer.
pub type Cell = (usize, usize, usize);
/// One round's figures of a cell, and the ceiling's of the same round and offer.
pub type Round = (Stats, Option<Stats>);

#[derive(Default)]
pub struct Results {
    pub cells: BTreeMap<Cell, Vec<Round>>,
    pub memory: Vec<Growth>,
}

/// `median (min–max)` of `values`.
fn spread(values: &mut [f64], digits: usize) -> String {
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    let (low, high) = (values[0], values[values.len() - 1]);
    if values.len() == 1 {
        format!("{median:.digits$}")
    } else {
        format!("{median:.digits$} ({low:.digits$}–{high:.digits$})")
    }
}

pub fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

impl Results {
    /// The median over the rounds of `pick` of a cell's figures.
    pub fn median(&self, key: Cell, pick: fn(&Stats) -> f64) -> Option<f64> {
        let mut values: Vec<f64> = self.cells.get(&key)?.iter().map(|(stats, _)| pick(stats)).collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    }

    pub fn markdown(&self, workloads: &[Workload], offers: &[Offer], header: &str) -> String {
        let mut text = header.to_owned();
        for (w, workload) in workloads.iter().enumerate() {
            if !self.cells.keys().any(|&(cell_workload, ..)| cell_workload == w) {
                continue;
            }
            writeln!(text, "\n## Workload {}: {}\n", workload.id, workload.title).unwrap();
            writeln!(text, "| server | load | req/s | × ceiling | p50 µs | × | p99 µs | × | p99.9 µs | × |").unwrap();
            writeln!(text, "|---|---|---|---|---|---|---|---|---|---|").unwrap();
            for (e, entry) in workload.entries.iter().enumerate() {
                for (o, offer) in offers.iter().enumerate() {
                    let Some(rounds) = self.cells.get(&(w, e, o)) else { continue };
                    let column = |pick: &dyn Fn(&Stats) -> f64, digits: usize| {
                        let mut values: Vec<f64> = rounds.iter().map(|(stats, _)| pick(stats)).collect();
                        let mut ratios: Vec<f64> = rounds
                            .iter()
                            .filter_map(|(stats, ceiling)| ceiling.map(|ceiling| pick(stats) / pick(&ceiling)))
                            .collect();
                        let ratio = if ratios.is_empty() { "–".to_owned() } else { spread(&mut ratios, 2) };
                        (spread(&mut values, digits), ratio)
                    };
                    let (rate, rate_ratio) = column(&|stats| stats.rate, 0);
                    let (p50, p50_ratio) = column(&|stats| micros(stats.p50), 0);
                    let (p99, p99_ratio) = column(&|stats| micros(stats.p99), 0);
                    let (p999, p999_ratio) = column(&|stats| micros(stats.p999), 0);
                    writeln!(
                        text,
                        "| {} | {} | {rate} | {rate_ratio} | {p50} | {p50_ratio} | {p99} | {p99_ratio} | {p999} | {p999_ratio} |",
                        entry.label,
                        offer.label()
                    )
                    .unwrap();
                }
            }
        }
        if !self.memory.is_empty() {
            writeln!(text, "\n## Workload 7: memory\n\n| what | server | over | KiB each |\n|---|---|---|---|")
                .unwrap();
            for growth in &self.memory {
                writeln!(text, "| {} | {} | {} | {:.2} |", growth.what, growth.peer, growth.count, growth.kib_per_unit)
                    .unwrap();
            }
        }
        text
    }
}
