//! libvirt-rpc (placeholder; filled in by its own change).
