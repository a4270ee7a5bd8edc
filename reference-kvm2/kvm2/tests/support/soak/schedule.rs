//! Schedules: the seeded generator, and the one-line text form a failing
//! schedule is printed in and replayed from.

use super::*;

/// A seeded generator (SplitMix64): small, fast, and the same on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// What a step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Create(usize),
    Get(usize),
    Delete(usize),
    List,
    Restart,
}

/// One step: an operation and the fault armed before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub op: Op,
    pub fault: Option<FaultArm>,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Op::Create(i) => write!(f, "C{i}")?,
            Op::Get(i) => write!(f, "G{i}")?,
            Op::Delete(i) => write!(f, "D{i}")?,
            Op::List => f.write_str("L")?,
            Op::Restart => f.write_str("R")?,
        }
        if let Some(fault) = &self.fault {
            write!(f, "+{fault}")?;
        }
        Ok(())
    }
}

/// A schedule: its steps, written one line as `C0+busy@3 G0 D1+nodom:DomainLookupByName R L`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Schedule {
    pub steps: Vec<Step>,
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, s) in self.steps.iter().enumerate() {
            if n > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Schedule {
    type Err = String;

    fn from_str(line: &str) -> Result<Schedule, String> {
        let mut steps = Vec::new();
        for word in line.split_whitespace() {
            let (op, fault) = match word.split_once('+') {
                Some((o, f)) => (o, Some(f)),
                None => (word, None),
            };
            let index = |s: &str| -> Result<usize, String> {
                s.parse::<usize>()
                    .ok()
                    .filter(|i| *i < NAMES)
                    .ok_or_else(|| format!("bad name index in {word:?}"))
            };
            let op = match op.split_at_checked(1) {
                Some(("C", i)) => Op::Create(index(i)?),
                Some(("G", i)) => Op::Get(index(i)?),
                Some(("D", i)) => Op::Delete(index(i)?),
                Some(("L", "")) => Op::List,
                Some(("R", "")) => Op::Restart,
                _ => return Err(format!("bad step {word:?}")),
            };
            let fault = fault.map(|f| parse_fault(f, word)).transpose()?;
            steps.push(Step { op, fault });
        }
        Ok(Schedule { steps })
    }
}

fn parse_fault(f: &str, word: &str) -> Result<FaultArm, String> {
    let bad = || format!("bad fault in {word:?}");
    if f == "restart" {
        return Ok(FaultArm::DaemonRestart);
    }
    if let Some(ms) = f.strip_prefix("latency=") {
        return ms.parse().map(FaultArm::Latency).map_err(|_| bad());
    }
    if let Some(rest) = f.strip_prefix("vanish:") {
        let (part, i) = rest.split_once(':').ok_or_else(bad)?;
        let i: usize = i.parse().ok().filter(|i| *i < NAMES).ok_or_else(bad)?;
        return match part {
            "dom" => Ok(FaultArm::Vanish(Part::Domain, i)),
            "vol" => Ok(FaultArm::Vanish(Part::Volumes, i)),
            _ => Err(bad()),
        };
    }
    if let Some((kind, proc_name)) = f.split_once(':') {
        let p = Procedure::from_name(proc_name).ok_or_else(bad)?;
        return match kind {
            "nodom" => Ok(FaultArm::NoDomain(p)),
            "novol" => Ok(FaultArm::NoVolume(p)),
            _ => Err(bad()),
        };
    }
    let (kind, k) = f.split_once('@').ok_or_else(bad)?;
    let k: u64 = k.parse().ok().filter(|k| *k >= 1).ok_or_else(bad)?;
    Ok(match kind {
        "busy" => FaultArm::Busy(k),
        "syserr" => FaultArm::SystemError(k),
        "internal" => FaultArm::Internal(k),
        "denied" => FaultArm::Denied(k),
        "invalid" => FaultArm::InvalidArg(k),
        "hang" => FaultArm::Hang(k),
        "drop" => FaultArm::Drop(k),
        "lost" => FaultArm::LostReply(k),
        _ => return Err(bad()),
    })
}

/// The procedures a "missing" answer is plausible for, per operation.
fn gone_targets(op: Op) -> (&'static [&'static str], &'static [&'static str]) {
    match op {
        Op::Create(_) => (
            &[
                "DomainLookupByName",
                "DomainGetMetadata",
                "DomainGetState",
                "DomainCreateWithFlags",
                "DomainSetMetadata",
            ],
            &["StorageVolLookupByName", "StorageVolGetPath"],
        ),
        Op::Get(_) => (
            &[
                "DomainLookupByName",
                "DomainGetMetadata",
                "DomainGetState",
                "DomainInterfaceAddresses",
            ],
            &["StorageVolLookupByName"],
        ),
        Op::Delete(_) => (
            &[
                "DomainLookupByName",
                "DomainGetMetadata",
                "DomainDestroy",
                "DomainUndefineFlags",
            ],
            &["StorageVolLookupByName", "StorageVolDelete"],
        ),
        Op::List | Op::Restart => (
            &["DomainGetMetadata", "DomainGetState"],
            &["StorageVolLookupByName"],
        ),
    }
}

/// Roughly how many backend calls an operation makes, so a k-th-call fault
/// usually lands inside it (sometimes past its end: armed, not fired).
fn calls_of(op: Op) -> u64 {
    match op {
        Op::Create(_) => 18,
        Op::Get(_) => 6,
        Op::Delete(_) => 9,
        Op::List => 6,
        Op::Restart => 1,
    }
}

/// The schedule number `index` of the run seeded with `seed`.
pub fn generate(seed: u64, index: u64) -> Schedule {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let len = 1 + rng.below(MAX_STEPS as u64) as usize;
    let mut steps = Vec::with_capacity(len);
    for _ in 0..len {
        let name = rng.below(NAMES as u64) as usize;
        let op = match rng.below(11) {
            0..=2 => Op::Create(name),
            3..=5 => Op::Get(name),
            6..=7 => Op::Delete(name),
            8..=9 => Op::List,
            _ => Op::Restart,
        };
        let fault = if op == Op::Restart || rng.below(10) < 4 {
            None
        } else {
            let k = 1 + rng.below(calls_of(op));
            let (doms, vols) = gone_targets(op);
            let pick = |rng: &mut Rng, names: &[&str]| {
                Procedure::from_name(names[rng.below(names.len() as u64) as usize])
                    .expect("a procedure the fake knows")
            };
            let vanish = |rng: &mut Rng| {
                let part = if rng.below(2) == 0 {
                    Part::Domain
                } else {
                    Part::Volumes
                };
                let i = match op {
                    Op::Create(i) | Op::Get(i) | Op::Delete(i) => i,
                    Op::List | Op::Restart => rng.below(NAMES as u64) as usize,
                };
                FaultArm::Vanish(part, i)
            };
            Some(match rng.below(KINDS.len() as u64) {
                // A "missing" answer for an object that exists is a lie a Delete
                // would act on (it would remove the rest and leave the object);
                // libvirt never tells it. Delete meets missing parts for real.
                5 | 6 if matches!(op, Op::Delete(_)) => vanish(&mut rng),
                12 => vanish(&mut rng),
                0 => FaultArm::Busy(k),
                1 => FaultArm::SystemError(k),
                2 => FaultArm::Internal(k),
                3 => FaultArm::Denied(k),
                4 => FaultArm::InvalidArg(k),
                5 => FaultArm::NoDomain(pick(&mut rng, doms)),
                6 => FaultArm::NoVolume(pick(&mut rng, vols)),
                7 => FaultArm::Hang(k),
                8 => FaultArm::Drop(k),
                9 => FaultArm::LostReply(k),
                10 => FaultArm::DaemonRestart,
                _ => FaultArm::Latency(1 + rng.below(20)),
            })
        };
        steps.push(Step { op, fault });
    }
    Schedule { steps }
}
