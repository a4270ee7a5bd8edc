//! libvirt-ssh (placeholder; filled in by its own change).
