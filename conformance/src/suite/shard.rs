//! Shards: the selected rules split into N disjoint parts, the same on every machine
//! given the same selection, so that N processes (CI jobs, pods of an Indexed Job) each
//! run one part and `merge` folds their reports into the report of one run.
//!
//! With the durations of a previous run the parts are balanced by them (longest rule
//! first, each to the part with the least time so far); without, the rules are dealt
//! out in catalogue order, the i-th selected rule to part `i mod N`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One shard of a run, as the report records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// The shard's number, from 1.
    pub index: u32,
    /// How many shards the selection was split into.
    pub count: u32,
    /// How the rules were split: `catalogue order` or `previous durations`.
    pub balanced_by: String,
    /// The IDs of the rules this shard ran, in catalogue order.
    pub rules: Vec<String>,
}

impl ShardInfo {
    /// `K/N`, as `--shard` takes it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

/// Reads `K/N` (1 ≤ K ≤ N ≤ 1000); the error says what is wrong.
pub fn parse_shard(text: &str) -> Result<(u32, u32), String> {
    let (k, n) = text
        .trim()
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not K/N (such as 1/2)"))?;
    let k: u32 = k
        .trim()
        .parse()
        .map_err(|_| format!("{k:?} in {text:?} is not a shard number"))?;
    let n: u32 = n
        .trim()
        .parse()
        .map_err(|_| format!("{n:?} in {text:?} is not a number of shards"))?;
    if n == 0 || n > 1000 {
        return Err(format!("{n} shards is out of range: 1 to 1000"));
    }
    if k == 0 || k > n {
        return Err(format!("shard {k} of {n} is out of range: 1 to {n}"));
    }
    Ok((k, n))
}

/// Splits `ids` (in catalogue order) into `count` disjoint parts covering them all,
/// each in catalogue order. With `durations`, a longest-first greedy split balances
/// the parts' total time (a rule the map lacks counts as the mean of those it has);
/// without, the rules are dealt out in turn.
pub fn partition(
    ids: &[String],
    count: u32,
    durations: Option<&BTreeMap<String, Duration>>,
) -> Vec<Vec<String>> {
    let count = count.max(1) as usize;
    let mut parts: Vec<Vec<usize>> = vec![Vec::new(); count];
    match durations {
        None => {
            for i in 0..ids.len() {
                parts[i % count].push(i);
            }
        }
        Some(known) => {
            let have: Vec<Duration> = ids.iter().filter_map(|id| known.get(id).copied()).collect();
            let mean = if have.is_empty() {
                Duration::ZERO
            } else {
                have.iter().sum::<Duration>() / have.len() as u32
            };
            let cost = |i: usize| known.get(&ids[i]).copied().unwrap_or(mean);
            let mut order: Vec<usize> = (0..ids.len()).collect();
            // Longest first; ties in catalogue order, so every shard computes the same.
            order.sort_by(|&a, &b| cost(b).cmp(&cost(a)).then(a.cmp(&b)));
            let mut load = vec![Duration::ZERO; count];
            for i in order {
                let least = (0..count)
                    .min_by_key(|&p| (load[p], p))
                    .expect("at least one part");
                load[least] += cost(i);
                parts[least].push(i);
            }
        }
    }
    parts
        .into_iter()
        .map(|mut p| {
            p.sort_unstable();
            p.into_iter().map(|i| ids[i].clone()).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("R-{i:02}")).collect()
    }

    #[test]
    fn shards_parse_and_refuse_what_is_out_of_range() {
        assert_eq!(parse_shard("1/2"), Ok((1, 2)));
        assert_eq!(parse_shard(" 3 / 3 "), Ok((3, 3)));
        for bad in ["0/2", "3/2", "1/0", "2", "a/b", "1/1001"] {
            assert!(parse_shard(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn parts_are_disjoint_complete_and_deterministic() {
        let all = ids(23);
        let mut durations = BTreeMap::new();
        for (i, id) in all.iter().enumerate().step_by(2) {
            durations.insert(id.clone(), Duration::from_millis((i as u64 * 37) % 500));
        }
        for count in 1..=5 {
            for d in [None, Some(&durations)] {
                let parts = partition(&all, count, d);
                assert_eq!(parts.len(), count as usize);
                let mut seen: Vec<String> = parts.concat();
                seen.sort();
                assert_eq!(seen, all, "{count} parts cover every rule once");
                assert_eq!(parts, partition(&all, count, d), "the same every time");
                for p in &parts {
                    assert!(p.windows(2).all(|w| w[0] < w[1]), "catalogue order");
                }
            }
        }
    }

    #[test]
    fn durations_balance_the_parts() {
        let all = ids(6);
        let secs = [10, 1, 1, 1, 1, 6];
        let durations: BTreeMap<_, _> = all
            .iter()
            .zip(secs)
            .map(|(id, s)| (id.clone(), Duration::from_secs(s)))
            .collect();
        let parts = partition(&all, 2, Some(&durations));
        let total = |p: &Vec<String>| -> u64 { p.iter().map(|id| durations[id].as_secs()).sum() };
        assert_eq!(parts[0], vec!["R-00".to_owned()], "the longest alone");
        assert_eq!((total(&parts[0]), total(&parts[1])), (10, 10));
        let dealt = partition(&all, 2, None);
        assert_eq!(dealt[0], vec!["R-00", "R-02", "R-04"]);
    }
}
