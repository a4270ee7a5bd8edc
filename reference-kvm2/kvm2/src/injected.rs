//! What an injected fault that answers a call looks like on the wire: the one
//! libvirt error each reply-shaped [`FaultKind`] stands for, shared by the fake
//! fixture (which hands it to the in-memory libvirt) and the real-host fixture
//! (whose chaos layer answers the call with it).

use conformance::fixture::FaultKind;
use libvirt_fake::VirError;

/// The libvirt error `kind` stands for on procedure `procedure` (a name such as
/// `StorageVolLookupByName`; a domain call when unknown), with the message text
/// libvirt gives it; `None` for the kinds that do not answer (hang, delay, drop).
pub(crate) fn libvirt_error(kind: &FaultKind, procedure: &str) -> Option<VirError> {
    use libvirt_fake::{code, domain};
    let (c, d, detail) = match kind {
        // What a busy QEMU driver answers.
        FaultKind::Transient => (
            code::OPERATION_TIMEOUT,
            domain::QEMU,
            "cannot acquire state change lock",
        ),
        FaultKind::Permanent => (
            code::ACCESS_DENIED,
            domain::NONE,
            "'manage' denied by the access driver",
        ),
        FaultKind::NotFound if procedure.starts_with("StorageVol") => (
            code::NO_STORAGE_VOL,
            domain::STORAGE,
            "no storage vol with matching name",
        ),
        FaultKind::NotFound if procedure.starts_with("StoragePool") => (
            code::NO_STORAGE_POOL,
            domain::STORAGE,
            "no storage pool with matching name",
        ),
        FaultKind::NotFound => (
            code::NO_DOMAIN,
            domain::QEMU,
            "no domain with matching name",
        ),
        FaultKind::Quota => (
            code::INTERNAL_ERROR,
            domain::STORAGE,
            "Not enough free space in pool",
        ),
        FaultKind::Hang | FaultKind::Delay(_) | FaultKind::Drop | FaultKind::LostReply => {
            return None;
        }
    };
    Some(VirError::new(c, d, detail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_names_the_object_the_call_looks_for() {
        let code_of = |p: &str| libvirt_error(&FaultKind::NotFound, p).unwrap().code;
        assert_eq!(
            code_of("StorageVolLookupByName"),
            libvirt_fake::code::NO_STORAGE_VOL
        );
        assert_eq!(
            code_of("StoragePoolGetInfo"),
            libvirt_fake::code::NO_STORAGE_POOL
        );
        assert_eq!(code_of("DomainLookupByName"), libvirt_fake::code::NO_DOMAIN);
        let e = libvirt_error(&FaultKind::Transient, "DomainCreate").unwrap();
        assert!(
            e.message.contains("cannot acquire state change lock"),
            "{}",
            e.message
        );
        assert!(libvirt_error(&FaultKind::Hang, "DomainCreate").is_none());
    }
}
