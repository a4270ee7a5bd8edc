//! libvirt-fake (placeholder; filled in by its own change).
