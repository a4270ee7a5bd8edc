//! The oracle: each step's answer against the kinds the contract allows for the
//! fault that fired, and each success against the fake's own inventory.

use super::*;

impl Run<'_> {
    /// The oracle for one step.
    pub(super) fn judge(
        &mut self,
        at: &str,
        step: &Step,
        class: Option<Class>,
        lingering: bool,
        result: StepResult,
    ) {
        let transient_ok = lingering || matches!(class, Some(Class::Transient));
        let permanent_ok = matches!(class, Some(Class::Permanent));
        let gone = matches!(class, Some(Class::Gone));
        // An error code answered to one metadata read makes a listing skip that
        // domain (LST-UNREADABLE), so one instance may be missing from it.
        let error_fired = class.is_some()
            && step.fault.as_ref().is_some_and(FaultArm::is_error)
            && !matches!(class, Some(Class::Benign));
        let mut wrong = Vec::new();
        let mut false_claims = Vec::new();
        let check_err = |e: &Error, op: ContractOp, false_claims: &mut Vec<String>| {
            if e.provider() != PROVIDER || e.op() != op {
                false_claims.push(format!(
                    "{at}: error names provider {:?} and operation {}, not {PROVIDER:?} and {op}",
                    e.provider(),
                    e.op()
                ));
            }
        };
        match result {
            StepResult::Create(r) => {
                let Op::Create(i) = step.op else {
                    unreachable!()
                };
                let name = &self.names[i];
                match r {
                    Ok(id) => {
                        if id != kvm2::id::format_id(HOST, name) {
                            false_claims.push(format!("{at}: Create returned ID {id}"));
                        }
                        match self.fake().domain(name) {
                            None => false_claims.push(format!("{at}: Create succeeded, no domain")),
                            Some(d) => {
                                if d.state != DomainState::Running {
                                    false_claims.push(format!(
                                        "{at}: Create succeeded, domain is {:?}",
                                        d.state
                                    ));
                                }
                                match mark_of(&d) {
                                    Some(m)
                                        if m.tag == self.tag && m.uid == format!("uid-{name}") => {}
                                    m => false_claims.push(format!(
                                        "{at}: Create succeeded, domain mark is {m:?}"
                                    )),
                                }
                            }
                        }
                        let vols: Vec<String> = self
                            .fake()
                            .volumes(POOL)
                            .unwrap_or_default()
                            .into_iter()
                            .map(|v| v.handle.name)
                            .collect();
                        for v in [overlay_volume(name), seed_volume(name)] {
                            if !vols.contains(&v) && !self.volumes_removed[i] {
                                false_claims
                                    .push(format!("{at}: Create succeeded, volume {v} missing"));
                            }
                        }
                    }
                    Err(e) => {
                        check_err(&e, ContractOp::Create, &mut false_claims);
                        let ok = match e.kind() {
                            // Never NotFound from Create; a missing answer inside
                            // Create, or a part of the instance removed out of
                            // band, is Transient unless Create recovers
                            // (CRE-BACKEND-NOTFOUND).
                            ErrorKind::Transient => transient_ok || gone || self.volumes_removed[i],
                            ErrorKind::Permanent => permanent_ok,
                            ErrorKind::NotFound | ErrorKind::QuotaExceeded(_) => false,
                        };
                        if !ok {
                            wrong.push(format!("{at}: Create failed {}: {}", kind_name(&e), e));
                        }
                    }
                }
            }
            StepResult::Get(r) => {
                let Op::Get(i) = step.op else { unreachable!() };
                let name = &self.names[i];
                let present = self.fake().domain(name).and_then(|d| mark_of(&d)).is_some();
                match r {
                    Ok(inst) => {
                        let want_id = kvm2::id::format_id(HOST, name);
                        if inst.id != want_id
                            || &inst.name != name
                            || inst.tag != self.tag
                            || inst.uid != format!("uid-{name}")
                        {
                            false_claims.push(format!("{at}: Get returned {inst:?}"));
                        }
                        if !present {
                            false_claims.push(format!("{at}: Get succeeded, no domain"));
                        }
                        if inst.state == conformance::State::Running && inst.ipv4.is_none() {
                            false_claims.push(format!("{at}: Running without an address"));
                        }
                    }
                    Err(e) => {
                        check_err(&e, ContractOp::Get, &mut false_claims);
                        let ok = match e.kind() {
                            // NotFound only when the host holds no such instance,
                            // or the backend said so (GET-BUSY: never for a busy
                            // or unreachable backend).
                            ErrorKind::NotFound => !present || gone,
                            ErrorKind::Transient => transient_ok,
                            ErrorKind::Permanent => permanent_ok,
                            ErrorKind::QuotaExceeded(_) => false,
                        };
                        if !ok {
                            let truth = if present { "present" } else { "absent" };
                            wrong.push(format!(
                                "{at}: Get failed {} with the instance {truth}: {}",
                                kind_name(&e),
                                e
                            ));
                        }
                    }
                }
            }
            StepResult::Delete(r) => {
                let Op::Delete(i) = step.op else {
                    unreachable!()
                };
                let name = self.names[i].clone();
                match r {
                    Ok(()) => {
                        // A backend that says a part is missing is believed
                        // (DEL-PARTIAL); the cleanup's Deletes settle it.
                        let left = self.remains_of(&name);
                        if !gone && !left.is_empty() {
                            false_claims
                                .push(format!("{at}: Delete succeeded, the host holds {left:?}"));
                        }
                        if left.is_empty() {
                            self.volumes_removed[i] = false;
                        }
                    }
                    Err(e) => {
                        check_err(&e, ContractOp::Delete, &mut false_claims);
                        // Delete never returns NotFound (DEL-IDEMPOTENT) and
                        // tolerates missing parts (DEL-PARTIAL).
                        let ok = match e.kind() {
                            ErrorKind::Transient => transient_ok,
                            ErrorKind::Permanent => permanent_ok,
                            ErrorKind::NotFound | ErrorKind::QuotaExceeded(_) => false,
                        };
                        if !ok {
                            wrong.push(format!("{at}: Delete failed {}: {}", kind_name(&e), e));
                        }
                    }
                }
            }
            StepResult::List(r) => match r {
                Ok(l) => {
                    let truth = self.truth_listed();
                    let listed: BTreeSet<String> =
                        l.instances.iter().map(|x| x.name.clone()).collect();
                    if listed.len() != l.instances.len() {
                        false_claims.push(format!("{at}: a name listed twice: {:?}", l.instances));
                    }
                    if !l.unreachable.is_empty() {
                        false_claims.push(format!(
                            "{at}: unreachable named with list-partial=fail-whole: {:?}",
                            l.unreachable
                        ));
                    }
                    for x in &l.instances {
                        if x.tag != self.tag
                            || x.uid != format!("uid-{}", x.name)
                            || x.id != kvm2::id::format_id(HOST, &x.name)
                        {
                            false_claims.push(format!("{at}: listed {x:?}"));
                        }
                    }
                    let extra: Vec<_> = listed.difference(&truth).collect();
                    let missing: Vec<_> = truth.difference(&listed).collect();
                    let missing_ok = if error_fired { 1 } else { 0 };
                    if !extra.is_empty() || missing.len() > missing_ok {
                        false_claims
                            .push(format!("{at}: listed {listed:?}, the host holds {truth:?}"));
                    }
                }
                Err(e) => {
                    check_err(&e, ContractOp::ListByTag, &mut false_claims);
                    let ok = match e.kind() {
                        ErrorKind::Transient => transient_ok,
                        ErrorKind::Permanent => permanent_ok,
                        ErrorKind::NotFound | ErrorKind::QuotaExceeded(_) => false,
                    };
                    if !ok {
                        wrong.push(format!("{at}: ListByTag failed {}: {}", kind_name(&e), e));
                    }
                }
            },
            StepResult::Restarted => {}
        }
        self.out.wrong_kinds.extend(wrong);
        self.out.false_claims.extend(false_claims);
    }
}
