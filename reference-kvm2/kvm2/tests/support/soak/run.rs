//! Running one schedule on a lane: each step with its fault, the out-of-band
//! removals, and the clean-up after the last step.

use super::*;

pub(super) struct Run<'a> {
    pub(super) lane: &'a mut Lane,
    pub(super) tag: String,
    pub(super) names: Vec<String>,
    pub(super) out: &'a mut Outcome,
    /// A daemon restart whose dead connection the provider may still hold: until
    /// it dials again, Transient is allowed (the dial count at the restart, and
    /// when it was).
    pub(super) restart_pending: Option<(u64, Instant)>,
    /// A call hangs on the provider's connection (it holds a slot there until the
    /// connection goes).
    pub(super) hung: bool,
    /// Names whose volumes were removed out of band under their domain, until a
    /// Delete of the name succeeds: a Create then finds the marked domain and
    /// either returns it when it runs (its guest keeps its disks open, so the
    /// volume check after Create does not apply) or fails Transient starting it
    /// (CRE-BACKEND-NOTFOUND allows that).
    pub(super) volumes_removed: [bool; NAMES],
}

pub(super) fn kind_name(e: &Error) -> &'static str {
    e.kind().name()
}

/// The mark a domain carries in kvm2's namespace (live first, then persistent).
pub(super) fn mark_of(d: &DomainSnapshot) -> Option<Mark> {
    d.live_metadata
        .iter()
        .flatten()
        .chain(d.config_metadata.iter())
        .find(|m| m.uri == DEFAULT_NAMESPACE)
        .and_then(|m| parse_mark(&m.xml).ok())
}

impl Run<'_> {
    pub(super) fn fake(&self) -> &FakeLibvirt {
        &self.lane.fake
    }

    /// What of `name` the host holds: its domain, volumes and NVRAM file.
    pub(super) fn remains_of(&self, name: &str) -> Vec<String> {
        let mut left = Vec::new();
        if self.fake().domain(name).is_some() {
            left.push(format!("domain {name}"));
        }
        for v in self.fake().volumes(POOL).unwrap_or_default() {
            if volume_owner(&v.handle.name).is_some_and(|(o, _)| o == name) {
                left.push(format!("volume {}", v.handle.name));
            }
        }
        for f in self.fake().nvram_files() {
            if f.rsplit('/').next() == Some(&format!("{name}_VARS.fd")) {
                left.push(format!("nvram {f}"));
            }
        }
        left
    }

    /// The schedule's instances the host holds with the schedule's tag.
    pub(super) fn truth_listed(&self) -> BTreeSet<String> {
        self.names
            .iter()
            .filter(|n| {
                self.fake()
                    .domain(n)
                    .and_then(|d| mark_of(&d))
                    .is_some_and(|m| m.tag == self.tag)
            })
            .cloned()
            .collect()
    }

    fn request(&self, i: usize) -> CreateRequest {
        let name = &self.names[i];
        CreateRequest {
            name: name.clone(),
            uid: format!("uid-{name}"),
            tag: self.tag.clone(),
            placement: ZONE.into(),
            image: None,
            cloud_init: CloudInit::new(format!("#cloud-config\nhostname: {name}\n")),
        }
    }

    pub(super) async fn step(&mut self, n: usize, step: &Step) {
        self.out.steps += 1;
        let fake = self.fake().clone();
        let mut vanished = false;
        if let Some(FaultArm::Vanish(part, i)) = &step.fault {
            vanished = self.vanish(*part, *i).await;
        }
        fake.trace().clear_calls();
        let dials_before = fake.trace().dial_count();
        let mut handle: Option<FaultHandle> = None;
        if let Some(f) = &step.fault {
            *self.out.armed.entry(f.kind()).or_default() += 1;
            match f {
                FaultArm::DaemonRestart => {
                    fake.restart_daemon();
                    self.restart_pending = Some((dials_before, Instant::now()));
                }
                FaultArm::Latency(ms) => fake.set_latency(Duration::from_millis(*ms)),
                FaultArm::Vanish(..) => {}
                other => {
                    handle = Some(
                        fake.faults()
                            .add(other.rule().expect("every other fault has a rule")),
                    )
                }
            }
        }
        // A restarted daemon lingers on the provider's old connection until its
        // keepalive gives up and the provider dials again: while it may, any step
        // may fail Transient, whatever else was armed; but not for longer than
        // the keepalive needs to notice, with a wide margin.
        let lingering = self
            .restart_pending
            .is_some_and(|(_, at)| at.elapsed() < RESTART_NOTICED);
        let ids = self.lane.ids(&self.names);
        let p = self.lane.provider.clone();
        let ctx = Ctx::with_timeout(STEP_DEADLINE);
        let result: StepResult = match step.op {
            Op::Create(i) => {
                let req = self.request(i);
                StepResult::Create(p.create(&ctx, &req).await)
            }
            Op::Get(i) => StepResult::Get(p.get(&ctx, &ids[i]).await),
            Op::Delete(i) => StepResult::Delete(p.delete(&ctx, &ids[i]).await),
            Op::List => StepResult::List(p.list_by_tag(&ctx, &self.tag).await),
            Op::Restart => {
                self.lane.provider = new_provider(&self.lane.config, &self.lane.dialer);
                self.hung = false;
                StepResult::Restarted
            }
        };
        fake.faults().clear();
        fake.set_latency(Duration::ZERO);
        let calls = fake.trace().calls().len();
        let fired = match (&step.fault, &handle) {
            (Some(FaultArm::Vanish(..)), _) => vanished,
            (Some(_), Some(h)) => h.fired(),
            (Some(_), None) => calls > 0,
            (None, _) => false,
        };
        if let (true, Some(f)) = (fired, &step.fault) {
            *self.out.fired.entry(f.kind()).or_default() += 1;
            if matches!(f, FaultArm::Hang(_)) {
                self.hung = true;
            }
        }
        if self
            .restart_pending
            .is_some_and(|(dials, _)| fake.trace().dial_count() > dials)
        {
            self.restart_pending = None;
        }
        let class = match &step.fault {
            Some(f) if fired => Some(f.class()),
            _ => None,
        };
        let at = format!("step {n} {step}");
        self.judge(&at, step, class, lingering, result);
    }

    /// Removes part of instance `i` out of band; whether there was anything to remove.
    async fn vanish(&mut self, part: Part, i: usize) -> bool {
        let name = self.names[i].clone();
        let fake = self.fake().clone();
        match part {
            Part::Domain => {
                if fake.domain(&name).is_none() {
                    return false;
                }
                let c = fake.connect().expect("a side connection to the fake");
                c.auth_list().await.expect("auth list");
                c.open(Some("qemu:///system"), 0).await.expect("open");
                let d = c
                    .domain_lookup_by_name(&name)
                    .await
                    .expect("the domain to remove");
                let _ = c.domain_destroy(&d).await;
                c.domain_undefine_flags(&d, libvirt_wire::DOMAIN_UNDEFINE_NVRAM)
                    .await
                    .expect("undefine out of band");
                c.close();
                true
            }
            Part::Volumes => {
                let mut any = false;
                for v in [overlay_volume(&name), seed_volume(&name)] {
                    any |= fake.remove_volume(POOL, &v);
                }
                if any && fake.domain(&name).is_some() {
                    self.volumes_removed[i] = true;
                }
                any
            }
        }
    }

    /// Clears every fault, deletes every name (a few tries each), then takes the
    /// host's inventory: it must hold no domain, no NVRAM file and no volume but
    /// the image cache's, and no pool or directory beyond the seeded ones.
    pub(super) async fn cleanup(&mut self) {
        let fake = self.fake().clone();
        fake.faults().clear();
        fake.set_latency(Duration::ZERO);
        if self.hung {
            // Hung calls hold their connection's slots until it goes: a fresh
            // provider (its old connections close with it) releases them.
            self.lane.provider = new_provider(&self.lane.config, &self.lane.dialer);
            self.hung = false;
        }
        let ids = self.lane.ids(&self.names);
        for id in &ids {
            let mut last = None;
            for _ in 0..CLEANUP_TRIES {
                let ctx = Ctx::with_timeout(STEP_DEADLINE);
                match self.lane.provider.delete(&ctx, id).await {
                    Ok(()) => {
                        last = None;
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            if let Some(e) = last {
                self.out.leaks.push(format!(
                    "cleanup Delete of {id} failed {CLEANUP_TRIES} times, last {}: {e}",
                    kind_name(&e)
                ));
            }
        }
        let img = &self.lane.config.images[0];
        let cache = [image_volume(img), image_marker(img)];
        let mut left = Vec::new();
        for d in fake.domains() {
            left.push(format!("domain {}", d.handle.name));
        }
        for v in fake.volumes(POOL).unwrap_or_default() {
            if !cache.contains(&v.handle.name) {
                left.push(format!("volume {}", v.handle.name));
            }
        }
        for f in fake.nvram_files() {
            left.push(format!("nvram {f}"));
        }
        if fake.pools() != [POOL.to_owned()] {
            left.push(format!("pools {:?}", fake.pools()));
        }
        let dirs = fake.leftover_directories();
        if dirs != self.lane.baseline_dirs {
            left.push(format!("directories {dirs:?}"));
        }
        let vols: Vec<String> = fake
            .volumes(POOL)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.handle.name)
            .collect();
        for c in &cache {
            if !vols.contains(c) {
                left.push(format!("the image cache lost {c}"));
            }
        }
        if !left.is_empty() {
            self.out
                .leaks
                .push(format!("after the cleanup the host holds {left:?}"));
            // Scrub, so the next schedule on this lane starts clean.
            for d in fake.domains() {
                fake.remove_domain(&d.handle.name);
            }
            for v in fake.volumes(POOL).unwrap_or_default() {
                if !cache.contains(&v.handle.name) {
                    fake.remove_volume(POOL, &v.handle.name);
                }
            }
        }
        if let Err(e) = fake.check_invariants() {
            self.out.leaks.push(format!("fake invariants broken: {e}"));
        }
    }
}

pub(super) enum StepResult {
    Create(conformance::Result<ProviderId>),
    Get(conformance::Result<conformance::Instance>),
    Delete(conformance::Result<()>),
    List(conformance::Result<conformance::Listing>),
    Restarted,
}
