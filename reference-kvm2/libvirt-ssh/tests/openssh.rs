//! `dial` against OpenSSH's sshd on a loopback port, with a unix echo socket standing
//! in for libvirt. Skips (and says why) when /usr/sbin/sshd is missing or the tests
//! do not run as root.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use libvirt_ssh::server::{KeyKind, generate_client_key};
use libvirt_ssh::{SshErrorKind, SshTarget, dial};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SSHD: &str = "/usr/sbin/sshd";

struct Sshd {
    child: Child,
    port: u16,
    host_public: String,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn skip_reason() -> Option<String> {
    if !Path::new(SSHD).exists() {
        return Some(format!(
            "{SSHD} is not installed (apt-get install openssh-server)"
        ));
    }
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("sshd with a private configuration needs root".into());
    }
    None
}

fn chmod_600(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Starts sshd with `extra` appended to its configuration.
async fn start_sshd(dir: &Path, authorized: &[&PathBuf], extra: &str) -> Sshd {
    let (host_key, host_public) = generate_client_key(dir, KeyKind::Ed25519);
    chmod_600(&host_key);
    let mut keys = String::new();
    for key in authorized {
        let public = russh::keys::load_secret_key(key, None)
            .unwrap()
            .public_key()
            .to_openssh()
            .unwrap();
        keys.push_str(&public);
        keys.push('\n');
    }
    let authorized_keys = dir.join("authorized_keys");
    std::fs::write(&authorized_keys, keys).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
             PidFile {}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nAllowStreamLocalForwarding yes\n\
             PermitRootLogin prohibit-password\nLogLevel ERROR\n{extra}",
            host_key.display(),
            authorized_keys.display(),
            dir.join("sshd.pid").display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    let child = Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "sshd did not start listening");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Sshd {
        child,
        port,
        host_public: host_public.to_openssh().unwrap(),
    }
}

fn echo_socket(dir: &Path) -> (PathBuf, tokio::task::JoinHandle<()>) {
    let sock = dir.join("echo.sock");
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    (sock, task)
}

fn target(sshd: &Sshd, key: &Path, known_hosts: &Path, sock: &Path) -> SshTarget {
    SshTarget {
        host: "127.0.0.1".into(),
        port: sshd.port,
        user: "root".into(),
        key_file: key.to_owned(),
        known_hosts_file: known_hosts.to_owned(),
        socket_path: sock.to_str().unwrap().into(),
        handshake_timeout: Duration::from_secs(20),
        insecure_accept_any_host_key: false,
    }
}

async fn echo(target: &SshTarget, len: usize) {
    let mut stream = dial(target).await.expect("dial sshd");
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let (mut r, mut w) = tokio::io::split(&mut stream);
    let send = data.clone();
    let writer = async move { w.write_all(&send).await.unwrap() };
    let mut back = vec![0u8; len];
    let reader = async { r.read_exact(&mut back).await.unwrap() };
    tokio::join!(writer, reader);
    assert!(back == data, "echo through sshd corrupted the data");
}

#[tokio::test]
async fn dial_through_openssh_sshd() {
    if let Some(why) = skip_reason() {
        eprintln!("skipping the OpenSSH sshd test: {why}");
        return;
    }
    tokio::time::timeout(Duration::from_secs(120), async {
        let dir = tempfile::tempdir().unwrap();
        let (ed, _) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let (rsa, _) = generate_client_key(dir.path(), KeyKind::Rsa);
        let (stranger, _) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let sshd = start_sshd(dir.path(), &[&ed, &rsa], "").await;
        let (sock, echo_task) = echo_socket(dir.path());

        let plain = dir.path().join("known_hosts");
        std::fs::write(
            &plain,
            format!("[127.0.0.1]:{} {}\n", sshd.port, sshd.host_public),
        )
        .unwrap();
        echo(&target(&sshd, &ed, &plain, &sock), 64).await;
        // Several MiB both ways at once.
        echo(&target(&sshd, &rsa, &plain, &sock), 4 << 20).await;

        // A known_hosts file hashed by OpenSSH itself.
        let hashed = dir.path().join("known_hosts_hashed");
        std::fs::copy(&plain, &hashed).unwrap();
        let status = Command::new("ssh-keygen")
            .args(["-q", "-H", "-f"])
            .arg(&hashed)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => {
                let text = std::fs::read_to_string(&hashed).unwrap();
                assert!(text.starts_with("|1|"), "{text}");
                echo(&target(&sshd, &ed, &hashed, &sock), 64).await;
            }
            other => eprintln!("skipping the ssh-keygen -H case: {other:?}"),
        }

        let err = match dial(&target(&sshd, &stranger, &plain, &sock)).await {
            Ok(_) => panic!("sshd accepted an unauthorised key"),
            Err(e) => e,
        };
        assert_eq!(err.kind(), SshErrorKind::AuthFailed, "{err:?}");

        let missing = dir.path().join("no-daemon.sock");
        let err = match dial(&target(&sshd, &ed, &plain, &missing)).await {
            Ok(_) => panic!("sshd opened a channel to a missing socket"),
            Err(e) => e,
        };
        assert_eq!(err.kind(), SshErrorKind::Unreachable, "{err:?}");
        echo_task.abort();
    })
    .await
    .expect("sshd test took longer than 120 s");
}

#[tokio::test]
async fn openssh_negotiates_aes_gcm_first_and_falls_back_to_chacha20() {
    if let Some(why) = skip_reason() {
        eprintln!("skipping the OpenSSH cipher test: {why}");
        return;
    }
    tokio::time::timeout(Duration::from_secs(120), async {
        for (ciphers, want) in [
            ("", "aes256-gcm@openssh.com"),
            (
                "Ciphers chacha20-poly1305@openssh.com,aes128-gcm@openssh.com\n",
                "aes128-gcm@openssh.com",
            ),
            (
                "Ciphers chacha20-poly1305@openssh.com,aes256-ctr\n",
                "chacha20-poly1305@openssh.com",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let (ed, _) = generate_client_key(dir.path(), KeyKind::Ed25519);
            let sshd = start_sshd(dir.path(), &[&ed], ciphers).await;
            let (sock, echo_task) = echo_socket(dir.path());
            let known = dir.path().join("known_hosts");
            std::fs::write(
                &known,
                format!("[127.0.0.1]:{} {}\n", sshd.port, sshd.host_public),
            )
            .unwrap();
            let t = target(&sshd, &ed, &known, &sock);
            let stream = dial(&t).await.expect("dial sshd");
            assert_eq!(stream.cipher(), want, "server offering {ciphers:?}");
            drop(stream);
            echo(&t, 1 << 20).await;
            echo_task.abort();
        }
    })
    .await
    .expect("sshd cipher test took longer than 120 s");
}
