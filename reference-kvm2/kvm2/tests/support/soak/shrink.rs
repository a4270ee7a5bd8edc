//! Shrinking a failing schedule to a smaller one that still fails.

use super::*;

/// Shrinks a failing schedule greedily: drop a step, or the fault of a step,
/// while the schedule still fails; at most `budget` runs. Returns the smallest
/// failing schedule found and its outcome (`None` when the original did not
/// fail again).
pub async fn shrink(
    lane: &mut Lane,
    schedule: &Schedule,
    budget: usize,
) -> Option<(Schedule, Outcome)> {
    let first = lane.run(schedule).await;
    if !first.failed() {
        return None;
    }
    let mut best = (schedule.clone(), first);
    let mut runs = 1;
    loop {
        let mut progressed = false;
        let mut candidates = Vec::new();
        for j in (0..best.0.steps.len()).rev() {
            let mut c = best.0.clone();
            c.steps.remove(j);
            candidates.push(c);
        }
        for j in 0..best.0.steps.len() {
            if best.0.steps[j].fault.is_some() {
                let mut c = best.0.clone();
                c.steps[j].fault = None;
                candidates.push(c);
            }
        }
        for c in candidates {
            if runs >= budget {
                return Some(best);
            }
            runs += 1;
            let o = lane.run(&c).await;
            if o.failed() {
                best = (c, o);
                progressed = true;
                break;
            }
        }
        if !progressed {
            return Some(best);
        }
    }
}
