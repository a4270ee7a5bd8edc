//! The cloud-init NoCloud seed: `user-data` byte for byte, `meta-data` with the
//! instance id and hostname, and `vendor-data` that installs the QEMU guest agent,
//! in an ISO labelled `cidata`.

use crate::iso9660::write_iso;

/// The volume label cloud-init looks for.
pub const SEED_LABEL: &str = "cidata";

/// The vendor-data shell script. A script, not cloud-config, so that it survives
/// cloud-init's merge with the user's cloud-config.
pub const AGENT_SCRIPT: &str = "#!/bin/sh
# kvm2 vendor data: the QEMU guest agent lets the host read the instance's address.
if ! command -v qemu-ga >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y qemu-guest-agent
  elif command -v dnf >/dev/null 2>&1; then
    dnf install -y qemu-guest-agent
  elif command -v apk >/dev/null 2>&1; then
    apk add qemu-guest-agent
  fi
fi
systemctl enable --now qemu-guest-agent 2>/dev/null || rc-service qemu-guest-agent start 2>/dev/null || true
";

const BOUNDARY: &str = "==kvm2-vendor-data==";

/// What goes into a seed.
#[derive(Clone, Copy, Debug)]
pub struct SeedData<'a> {
    /// `instance-id` in meta-data.
    pub instance_id: &'a str,
    /// `local-hostname` in meta-data.
    pub hostname: &'a str,
    /// The user's cloud-init data, written unchanged.
    pub user_data: &'a [u8],
    /// More vendor data to run after the agent script.
    pub extra_vendor_data: Option<&'a str>,
}

/// The meta-data document.
pub fn meta_data(d: &SeedData<'_>) -> String {
    format!(
        "instance-id: {}\nlocal-hostname: {}\n",
        d.instance_id, d.hostname
    )
}

fn content_type(part: &str) -> &'static str {
    if part.starts_with("#cloud-config") {
        "text/cloud-config"
    } else if part.starts_with("#!") {
        "text/x-shellscript"
    } else {
        "text/plain"
    }
}

/// The vendor-data document: the agent script, or a MIME multipart holding the
/// script and the extra vendor data.
pub fn vendor_data(extra: Option<&str>) -> String {
    match extra {
        None => AGENT_SCRIPT.to_owned(),
        Some(extra) => format!(
            "Content-Type: multipart/mixed; boundary=\"{BOUNDARY}\"\nMIME-Version: 1.0\n\n\
             --{BOUNDARY}\nContent-Type: text/x-shellscript; charset=\"utf-8\"\nContent-Disposition: attachment; filename=\"kvm2-guest-agent.sh\"\n\n{AGENT_SCRIPT}\n\
             --{BOUNDARY}\nContent-Type: {}; charset=\"utf-8\"\nContent-Disposition: attachment; filename=\"extra\"\n\n{extra}\n\
             --{BOUNDARY}--\n",
            content_type(extra)
        ),
    }
}

/// The seed ISO.
pub fn seed_iso(d: &SeedData<'_>) -> Vec<u8> {
    let meta = meta_data(d);
    let vendor = vendor_data(d.extra_vendor_data);
    write_iso(
        SEED_LABEL,
        &[
            ("meta-data", meta.as_bytes()),
            ("user-data", d.user_data),
            ("vendor-data", vendor.as_bytes()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const USER: &[u8] = b"#cloud-config\nusers:\n  - name: proxy\n    ssh_authorized_keys: [\"ssh-ed25519 AAAA x\"]\n\xc3\xa9\n";

    fn data() -> SeedData<'static> {
        SeedData {
            instance_id: "proxy-1",
            hostname: "proxy-1",
            user_data: USER,
            extra_vendor_data: None,
        }
    }

    #[test]
    fn vendor_data_is_a_shell_script_not_cloud_config() {
        let v = vendor_data(None);
        assert!(v.starts_with("#!/bin/sh\n"));
        assert!(v.contains("qemu-guest-agent"));
        assert!(!v.contains("#cloud-config"));
    }

    #[test]
    fn vendor_data_is_multipart_when_extra_is_given() {
        let v = vendor_data(Some("#cloud-config\npackages: [htop]\n"));
        assert!(v.starts_with("Content-Type: multipart/mixed"));
        assert!(v.contains("text/x-shellscript"));
        assert!(v.contains("text/cloud-config"));
        assert!(v.contains("packages: [htop]"));
        assert!(v.trim_end().ends_with(&format!("--{BOUNDARY}--")));
    }

    #[test]
    fn meta_data_names_instance_and_host() {
        assert_eq!(
            meta_data(&data()),
            "instance-id: proxy-1\nlocal-hostname: proxy-1\n"
        );
    }

    #[test]
    fn seed_is_reproducible() {
        assert_eq!(seed_iso(&data()), seed_iso(&data()));
    }

    fn tool(name: &str) -> bool {
        Command::new(name).arg("-version").output().is_ok()
    }

    /// Reads the seed back with xorriso: label, names and user-data byte for byte.
    #[test]
    fn seed_reads_back_with_xorriso() {
        if !tool("xorriso") {
            eprintln!("skipped: xorriso is not installed (CI installs it)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let iso = dir.path().join("seed.iso");
        std::fs::write(&iso, seed_iso(&data())).unwrap();
        let out = Command::new("xorriso")
            .args(["-indev", iso.to_str().unwrap(), "-ls", "/"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("Volume id    : 'cidata'"), "{text}");
        for n in ["meta-data", "user-data", "vendor-data"] {
            assert!(text.contains(n), "{n} missing: {text}");
        }
        let back = dir.path().join("user-data");
        let st = Command::new("xorriso")
            .args([
                "-osirrox",
                "on",
                "-indev",
                iso.to_str().unwrap(),
                "-extract",
                "/user-data",
                back.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        assert_eq!(std::fs::read(&back).unwrap(), USER);
    }
}
