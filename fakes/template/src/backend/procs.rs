//! The procedures the provider calls, each through the seam ([`SimBackend::invoke`]).

use std::net::IpAddr;

use conformance::fixture::Power;
use tokio::time::Instant;

use super::{
    BackendError, ConnId, InstanceInfo, Listed, Mark, Proc, Record, SimBackend, VolumeKind,
    add_volume, digest, disk_volume, remove_volume, seed_volume,
};

impl SimBackend {
    /// Finds an instance.
    pub async fn lookup(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
    ) -> Result<InstanceInfo, BackendError> {
        self.invoke(c, site, Proc::Lookup, |w| {
            let s = &w.sites[site];
            let r = s
                .instances
                .get(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            let embedded = r.embedded.as_ref().map(|(_, seed)| digest(seed));
            let info = InstanceInfo {
                power: r.power,
                disk: embedded.is_some()
                    || s.container && s.volumes.contains_key(&disk_volume(name)),
                seed: embedded.or_else(|| {
                    s.container
                        .then(|| s.volumes.get(&seed_volume(name)).map(|v| v.digest))
                        .flatten()
                }),
                booted: false,
                defined_at: r.defined_at,
                removing: r.removing.is_some(),
            };
            w.progress(site, name);
            let booted = w.sites[site].instances.get(name).is_some_and(|r| r.booted);
            Ok(InstanceInfo { booted, ..info })
        })
        .await
    }

    /// Creates an instance record with its mark, powered off.
    pub async fn define(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
        mark: Mark,
    ) -> Result<(), BackendError> {
        self.define_record(c, site, name, mark, None).await
    }

    /// Creates an instance record with its mark, its disk of `parts.0` bytes and its
    /// seed holding `parts.1` inside it, powered off (`secondary-resources=none`).
    pub async fn define_whole(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
        mark: Mark,
        parts: (u64, &[u8]),
    ) -> Result<(), BackendError> {
        let embedded = (parts.0, parts.1.to_vec());
        self.define_record(c, site, name, mark, Some(embedded))
            .await
    }

    async fn define_record(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
        mark: Mark,
        embedded: Option<(u64, Vec<u8>)>,
    ) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::Define, |w| {
            let ip = w.allocate_ip();
            let s = w.sites.get_mut(site).expect("checked by the seam");
            if s.instances.contains_key(name) {
                return Err(BackendError::Exists(format!("instance {name}")));
            }
            if let Some((disk, seed)) = &embedded {
                let (free, needed) = (s.free(), disk + seed.len() as u64);
                if needed > free {
                    return Err(BackendError::NoSpace {
                        what: format!("volume store at {site}"),
                        available: free,
                        needed,
                    });
                }
            }
            // A backend that keeps marks in names only has nowhere to put this one.
            let mark = (!w.name_marks).then_some(mark);
            let s = w.sites.get_mut(site).expect("checked by the seam");
            s.instances.insert(
                name.to_owned(),
                Record {
                    mark,
                    defined_at: std::time::SystemTime::now(),
                    embedded,
                    removing: None,
                    power: Power::Stopped,
                    started: None,
                    booted: false,
                    ip,
                    addresses: None,
                    lookup_fails: false,
                    unreadable: false,
                },
            );
            Ok(())
        })
        .await
    }

    /// Creates `name`'s disk of `size` bytes from the base image.
    pub async fn create_disk(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
        size: u64,
    ) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::CreateDisk, |w| {
            let s = w.sites.get_mut(site).expect("checked by the seam");
            add_volume(
                s,
                site,
                &disk_volume(name),
                name,
                VolumeKind::Disk,
                size,
                Vec::new(),
            )
        })
        .await
    }

    /// Creates the seed volume `volume` of `name` holding `bytes`.
    pub async fn create_seed(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
        volume: &str,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        let data = bytes.to_vec();
        self.invoke(c, site, Proc::CreateSeed, move |w| {
            let s = w.sites.get_mut(site).expect("checked by the seam");
            let size = data.len() as u64;
            add_volume(s, site, volume, name, VolumeKind::Seed, size, data)
        })
        .await
    }

    /// Powers `name` on.
    pub async fn start(&self, c: ConnId, site: &str, name: &str) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::Start, |w| {
            let s = w.sites.get_mut(site).expect("checked by the seam");
            let has_parts = s.instances.get(name).is_some_and(|r| r.embedded.is_some())
                || s.container
                    && s.volumes.contains_key(&disk_volume(name))
                    && s.volumes.contains_key(&seed_volume(name));
            let r = s
                .instances
                .get_mut(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if !has_parts {
                return Err(BackendError::NoObject(format!("a volume of {name}")));
            }
            if r.power == Power::Running {
                return Err(BackendError::Running(name.to_owned()));
            }
            r.power = Power::Running;
            r.started = Some(Instant::now());
            r.booted = false;
            Ok(())
        })
        .await
    }

    /// The addresses `name` reports: none until it booted.
    pub async fn addresses(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
    ) -> Result<Vec<IpAddr>, BackendError> {
        self.invoke(c, site, Proc::Addresses, |w| {
            w.progress(site, name);
            let r = w.sites[site]
                .instances
                .get(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if r.lookup_fails {
                return Err(BackendError::Busy(format!(
                    "address lookup of {name} failed"
                )));
            }
            Ok(match (&r.addresses, r.booted) {
                (Some(a), _) => a.clone(),
                (None, true) => vec![IpAddr::V4(r.ip)],
                (None, false) => Vec::new(),
            })
        })
        .await
    }

    /// Powers `name` off; an instance that is not running is refused.
    pub async fn stop(&self, c: ConnId, site: &str, name: &str) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::Stop, |w| {
            let r = w
                .sites
                .get_mut(site)
                .expect("checked by the seam")
                .instances
                .get_mut(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if r.power == Power::Stopped {
                return Err(BackendError::Denied(format!("{name} is not running")));
            }
            r.power = Power::Stopped;
            r.booted = false;
            Ok(())
        })
        .await
    }

    /// Removes `name`'s record (and with cascading its volumes); a running instance is
    /// refused. With a deferred undefine the call is accepted at once and the record
    /// stays, powered off, until the delay passed.
    pub async fn undefine(&self, c: ConnId, site: &str, name: &str) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::Undefine, |w| {
            let delay = w.undefine_delay;
            let s = w.sites.get_mut(site).expect("checked by the seam");
            let r = s
                .instances
                .get_mut(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if r.power != Power::Stopped {
                return Err(BackendError::Busy(format!("{name} must be stopped first")));
            }
            match delay {
                None => w.remove_instance(site, name),
                Some(d) => {
                    r.removing.get_or_insert(Instant::now() + d);
                }
            }
            Ok(())
        })
        .await
    }

    /// Removes the disk of `name`.
    pub async fn delete_disk(&self, c: ConnId, site: &str, name: &str) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::DeleteDisk, |w| {
            remove_volume(
                w.sites.get_mut(site).expect("checked by the seam"),
                site,
                &disk_volume(name),
            )
        })
        .await
    }

    /// Removes the seed volume `volume`.
    pub async fn delete_seed(
        &self,
        c: ConnId,
        site: &str,
        volume: &str,
    ) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::DeleteSeed, |w| {
            remove_volume(
                w.sites.get_mut(site).expect("checked by the seam"),
                site,
                volume,
            )
        })
        .await
    }

    /// Lists every instance at the site, by name.
    pub async fn list(&self, c: ConnId, site: &str) -> Result<Vec<Listed>, BackendError> {
        self.invoke(c, site, Proc::List, |w| {
            Ok(w.sites[site]
                .instances
                .iter()
                .map(|(name, r)| Listed {
                    name: name.clone(),
                    power: r.power,
                    defined_at: r.defined_at,
                })
                .collect())
        })
        .await
    }

    /// Reads `name`'s mark: `None` when it carries none.
    pub async fn read_mark(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
    ) -> Result<Option<Mark>, BackendError> {
        self.invoke(c, site, Proc::ReadMark, |w| {
            let r = w.sites[site]
                .instances
                .get(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if r.unreadable {
                return Err(BackendError::Unreadable(format!("instance {name}")));
            }
            Ok(r.mark.clone())
        })
        .await
    }

    /// Free bytes in the site's volume store.
    pub async fn capacity(&self, c: ConnId, site: &str) -> Result<u64, BackendError> {
        self.invoke(c, site, Proc::Capacity, |w| {
            let s = &w.sites[site];
            if !s.container {
                return Err(BackendError::NoContainer(site.to_owned()));
            }
            Ok(s.free())
        })
        .await
    }

    /// Answers with the number of instances at the site.
    pub async fn ping(&self, c: ConnId, site: &str) -> Result<usize, BackendError> {
        self.invoke(c, site, Proc::Ping, |w| Ok(w.sites[site].instances.len()))
            .await
    }

    // The out-of-band side, used by the fixture's hooks.
}
