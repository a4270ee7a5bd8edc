//! What a guest finds to boot from when it starts.
//!
//! QEMU starts a domain whatever its disks hold, but firmware that finds no
//! bytes on the boot disk boots nothing: no guest agent ever answers, the
//! guest never asks for a DHCP lease and never shows in the host's ARP table.
//! The fake is no kinder. A guest boots when its boot disk chain holds data:
//! the first hard disk (`device='disk'`) of its definition, a volume, and the
//! volumes below it through their backing files down to the base image. A
//! volume holds data once an upload wrote at least one byte into it; a volume
//! that was only created (whatever capacity or allocation it was created
//! with) or only received an empty upload holds none. A domain without a hard
//! disk boots nothing either.

use crate::state::State;
use crate::xml::ParsedDomain;

/// libvirt's limit on the length of a backing chain; a start refuses longer
/// chains before the guest runs (see `State::check_files`).
const MAX_CHAIN: usize = 200;

impl State {
    /// Whether a guest defined by `parsed` finds data on its boot disk
    /// chain, as a start sees the host's volumes now.
    pub(crate) fn boot_chain_holds_data(&self, parsed: &ParsedDomain) -> bool {
        let mut next = parsed.boot_disk.as_deref();
        for _ in 0..MAX_CHAIN {
            let Some(path) = next else { return false };
            let Some(v) = self.volume_at(path) else {
                return false;
            };
            if v.content.size() > 0 {
                return true;
            }
            next = v.backing_path.as_deref();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::VolumeContent;
    use crate::state::HostConfig;
    use crate::xml::parse_domain;

    const DIR: &str = "/var/lib/libvirt/images";

    fn host() -> State {
        let mut st = State::new(HostConfig::default());
        st.add_pool("default", DIR, 10 << 30);
        st
    }

    fn volume(st: &mut State, name: &str, backing: Option<&str>) {
        let pool = st.pool_lookup_by_name("default").unwrap();
        let backing = backing
            .map(|b| format!("<backingStore><path>{DIR}/{b}</path></backingStore>"))
            .unwrap_or_default();
        let xml = format!(
            "<volume><name>{name}</name><capacity>1048576</capacity>\
             <target><format type='qcow2'/></target>{backing}</volume>"
        );
        st.vol_create(&pool, &xml, 0).unwrap();
    }

    fn fill(st: &mut State, name: &str, content: VolumeContent) {
        st.pools
            .get_mut("default")
            .unwrap()
            .volumes
            .get_mut(name)
            .unwrap()
            .content = content;
    }

    fn domain(disks: &str) -> ParsedDomain {
        parse_domain(&format!(
            "<domain type='kvm'><name>g</name><memory>1024</memory><devices>{disks}</devices></domain>"
        ))
        .unwrap()
    }

    fn disk(device: &str, file: &str) -> String {
        format!("<disk type='file' device='{device}'><source file='{DIR}/{file}'/></disk>")
    }

    #[test]
    fn an_overlay_boots_from_the_data_of_its_base() {
        let mut st = host();
        volume(&mut st, "base", None);
        volume(&mut st, "overlay", Some("base"));
        let d = domain(&disk("disk", "overlay"));
        assert!(!st.boot_chain_holds_data(&d), "nothing uploaded yet");
        fill(&mut st, "base", VolumeContent::Bytes(Vec::new()));
        assert!(!st.boot_chain_holds_data(&d), "an empty upload is no data");
        fill(&mut st, "base", VolumeContent::Bytes(b"QFI\xfb".to_vec()));
        assert!(st.boot_chain_holds_data(&d));
        let large = VolumeContent::Digest {
            size: 2 << 20,
            sha256: [1; 32],
        };
        fill(&mut st, "base", large);
        assert!(
            st.boot_chain_holds_data(&d),
            "a large upload counts by size"
        );
    }

    #[test]
    fn the_boot_disk_is_the_first_hard_disk() {
        let mut st = host();
        volume(&mut st, "seed", None);
        volume(&mut st, "empty", None);
        fill(&mut st, "seed", VolumeContent::Bytes(b"cidata".to_vec()));
        let cdrom_first = domain(&format!(
            "{}{}",
            disk("cdrom", "seed"),
            disk("disk", "empty")
        ));
        assert!(
            !st.boot_chain_holds_data(&cdrom_first),
            "a seed ISO boots nothing"
        );
        let disk_first = domain(&format!(
            "{}{}",
            disk("disk", "seed"),
            disk("disk", "empty")
        ));
        assert!(st.boot_chain_holds_data(&disk_first));
        let untyped = domain(&format!(
            "<disk type='file'><source file='{DIR}/seed'/></disk>"
        ));
        assert!(
            st.boot_chain_holds_data(&untyped),
            "a disk is a hard disk by default"
        );
        assert!(
            !st.boot_chain_holds_data(&domain("")),
            "no disk, nothing to boot"
        );
    }
}
