//! Names kvm2 gives the volumes it makes, so every part of an instance is found
//! again from the instance name alone.

use sha2::{Digest, Sha256};

use crate::config::ImageConfig;

/// The root overlay volume of instance `name`.
pub fn overlay_volume(name: &str) -> String {
    format!("{name}-root.qcow2")
}

/// The cloud-init seed volume of instance `name`.
pub fn seed_volume(name: &str) -> String {
    format!("{name}-seed.iso")
}

/// The instance a volume belongs to, if it is an overlay or a seed.
pub fn volume_owner(volume: &str) -> Option<(&str, &'static str)> {
    if let Some(n) = volume.strip_suffix("-root.qcow2") {
        return Some((n, "overlay"));
    }
    volume.strip_suffix("-seed.iso").map(|n| (n, "seed"))
}

fn image_key(img: &ImageConfig) -> String {
    let mut h = Sha256::new();
    h.update(img.url.as_bytes());
    h.update(b"\n");
    h.update(img.sha256.as_deref().unwrap_or("").as_bytes());
    h.finalize()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The cached base image volume of `img` (changes when its URL or digest does).
pub fn image_volume(img: &ImageConfig) -> String {
    format!("kvm2-base-{}-{}.qcow2", img.name, image_key(img))
}

/// The marker volume written once the image volume is complete.
pub fn image_marker(img: &ImageConfig) -> String {
    format!("kvm2-base-{}-{}.ready", img.name, image_key(img))
}
