//! What the fixture does to the backend out of band: credentials, faults, reachability,
//! capacity, power, addresses, planting and inventory. None of it passes the seam.

use std::net::IpAddr;
use std::time::SystemTime;

use conformance::fixture::{BackendCall, FaultId, FaultSpec, Plant, Power, Reachability, Resource};
use tokio::time::Instant;

use super::{
    Injection, Mark, Record, SimBackend, VolumeKind, add_volume, disk_volume, instance_key,
    name_with_mark, record_mut, seed_volume, short_name, site_mut,
};

impl SimBackend {
    /// Replaces the token `site` accepts (the old one is revoked; open connections stay).
    pub fn set_token(&self, site: &str, token: String) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.token = token;
        Ok(())
    }

    /// Replaces the identity `site` presents (as when its host key changes; open
    /// connections stay).
    pub fn set_identity(&self, site: &str, identity: String) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.identity = identity;
        Ok(())
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<BackendCall> {
        self.inner
            .trace
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Connections opened to `site`.
    pub fn dials(&self, site: &str) -> u64 {
        self.world().sites.get(site).map_or(0, |s| s.dials)
    }

    /// Injects a fault.
    pub fn inject(&self, spec: FaultSpec) -> Result<FaultId, String> {
        if let Some(l) = &spec.location
            && !self.world().sites.contains_key(l)
        {
            return Err(format!("no site {l}"));
        }
        let mut f = self.faults();
        f.next += 1;
        let id = f.next;
        f.active.push(Injection {
            id,
            spec,
            seen: 0,
            spent: false,
        });
        Ok(FaultId(id))
    }

    /// Whether injection `id` fired.
    pub fn fired(&self, id: FaultId) -> bool {
        self.faults().fired.contains(&id.0)
    }

    /// Removes every injection and releases hung calls.
    pub fn clear_faults(&self) {
        self.faults().active.clear();
        self.inner.released.send_modify(|g| *g += 1);
    }

    /// Sets how `site` answers; anything but `Up` drops its open connections.
    pub fn set_reachability(&self, site: &str, r: Reachability) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.reach = r;
        if r != Reachability::Up {
            s.open.clear();
        }
        Ok(())
    }

    /// Sets the free capacity of `site` to `bytes` now (what is made afterwards takes
    /// from it); `None` goes back to capacity minus use.
    pub fn set_free(&self, site: &str, bytes: Option<u64>) -> Result<(), String> {
        let mut world = self.world();
        let s = site_mut(&mut world, site)?;
        s.free_override = bytes.map(|b| (b, s.used()));
        Ok(())
    }

    /// Holds or releases boots everywhere.
    pub fn hold_boot(&self, hold: bool) {
        self.world().boot_held = hold;
    }

    /// Forces the power state of `name`.
    pub fn set_power(&self, site: &str, name: &str, power: Power) -> Result<(), String> {
        let mut w = self.world();
        let r = record_mut(&mut w, site, name)?;
        match power {
            Power::Running if r.power == Power::Stopped => {
                r.started = Some(Instant::now());
                r.booted = false;
            }
            Power::Stopped => r.booted = false,
            _ => {}
        }
        r.power = power;
        Ok(())
    }

    /// Sets the addresses `name` reports.
    pub fn set_addresses(&self, site: &str, name: &str, addrs: Vec<IpAddr>) -> Result<(), String> {
        record_mut(&mut self.world(), site, name)?.addresses = Some(addrs);
        Ok(())
    }

    /// Makes the address lookup of `name` fail, or work again.
    pub fn fail_address_lookup(&self, site: &str, name: &str, fail: bool) -> Result<(), String> {
        record_mut(&mut self.world(), site, name)?.lookup_fails = fail;
        Ok(())
    }

    /// Every resource at `site`, instances first.
    pub fn resources(&self, site: &str) -> Result<Vec<Resource>, String> {
        let w = self.world();
        let s = w.sites.get(site).ok_or_else(|| format!("no site {site}"))?;
        let mut out: Vec<Resource> = s
            .instances
            .keys()
            .map(|n| Resource {
                instance: Some(short_name(n).to_owned()),
                kind: "instance".into(),
                primary: true,
                name: n.clone(),
            })
            .collect();
        if s.container {
            out.extend(s.volumes.iter().map(|(n, v)| Resource {
                instance: v.instance.clone(),
                kind: v.kind.as_str().into(),
                primary: false,
                name: n.clone(),
            }));
        }
        Ok(out)
    }

    /// The bytes of a volume (the seed holds the cloud-init payload).
    pub fn volume_bytes(&self, site: &str, volume: &str) -> Option<Vec<u8>> {
        self.world()
            .sites
            .get(site)?
            .volumes
            .get(volume)
            .map(|v| v.data.clone())
    }

    /// Plants `what` under `name`, as if someone else had made it.
    pub fn plant(&self, site: &str, name: &str, what: Plant) -> Result<(), String> {
        let mut w = self.world();
        let ip = w.allocate_ip();
        let name_marks = w.name_marks;
        let s = site_mut(&mut w, site)?;
        if instance_key(s, name).is_some() {
            return Err(format!("{name} already exists at {site}"));
        }
        let now = Some(SystemTime::now());
        let (mark, unreadable) = match what {
            Plant::Unmarked => (None, false),
            Plant::ForeignUid { tag, uid } => (
                Some(Mark {
                    tag,
                    uid,
                    created_at: now,
                }),
                false,
            ),
            Plant::EmptyUid { tag } => (
                Some(Mark {
                    tag,
                    uid: String::new(),
                    created_at: now,
                }),
                false,
            ),
            Plant::Unreadable { tag } => (
                Some(Mark {
                    tag,
                    uid: "unknown".into(),
                    created_at: now,
                }),
                true,
            ),
        };
        // A backend that keeps marks in names only: the mark becomes the name's prefix.
        let (key, mark) = match mark {
            Some(m) if name_marks => (name_with_mark(&m, name), None),
            m => (name.to_owned(), m),
        };
        s.instances.insert(
            key,
            Record {
                mark,
                defined_at: std::time::SystemTime::now(),
                embedded: None,
                removing: None,
                power: Power::Running,
                started: Some(Instant::now()),
                booted: true,
                ip,
                addresses: None,
                lookup_fails: false,
                unreadable,
            },
        );
        if s.container {
            add_volume(
                s,
                site,
                &disk_volume(name),
                name,
                VolumeKind::Disk,
                1 << 20,
                Vec::new(),
            )
            .map_err(|e| e.to_string())?;
            add_volume(
                s,
                site,
                &seed_volume(name),
                name,
                VolumeKind::Seed,
                9,
                b"#planted\n".to_vec(),
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// A fingerprint of `name` and its parts; `None` when nothing of that name exists.
    pub fn inspect(&self, site: &str, name: &str) -> Result<Option<String>, String> {
        let w = self.world();
        let s = w.sites.get(site).ok_or_else(|| format!("no site {site}"))?;
        let parts: Vec<String> = s
            .volumes
            .iter()
            .filter(|(_, v)| v.instance.as_deref() == Some(name))
            .map(|(n, v)| format!("{n}:{}:{}", v.size, v.digest))
            .collect();
        let rec = instance_key(s, name).and_then(|k| s.instances.get(&k));
        if rec.is_none() && parts.is_empty() {
            return Ok(None);
        }
        Ok(Some(format!(
            "{:?} parts {parts:?}",
            rec.map(|r| (&r.mark, r.power, r.booted, &r.addresses, r.unreadable))
        )))
    }

    /// Removes the secondary resources of `name`.
    pub fn remove_secondary(&self, site: &str, name: &str) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.volumes.retain(|_, v| v.instance.as_deref() != Some(name));
        Ok(())
    }

    /// Removes the record of `name`, leaving its parts.
    pub fn remove_primary(&self, site: &str, name: &str) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        if let Some(key) = instance_key(s, name) {
            s.instances.remove(&key);
        }
        Ok(())
    }

    /// Removes the volume store of `site` and everything in it.
    pub fn remove_container(&self, site: &str) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.container = false;
        s.volumes.clear();
        Ok(())
    }

    /// Brings back the volume store of `site` after
    /// [`remove_container`](SimBackend::remove_container), empty but for the base image.
    pub fn restore_container(&self, site: &str) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        if !s.container {
            s.container = true;
            s.add_base_image();
        }
        Ok(())
    }

    /// Removes everything named `name`.
    pub fn remove_all(&self, site: &str, name: &str) -> Result<(), String> {
        self.remove_primary(site, name)?;
        self.remove_secondary(site, name)
    }
}
