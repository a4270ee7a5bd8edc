//! End-to-end tests of `dial` against the in-process test server.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use libvirt_ssh::server::{
    ChannelTarget, KeyKind, TestServer, TestServerOptions, generate_client_key,
};
use libvirt_ssh::{SshError, SshErrorKind, SshTarget, dial};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SOCKET: &str = "/run/libvirt/libvirt-sock";

async fn within<F: Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("test took longer than 60 s");
}

fn target(port: u16, key_file: &Path, known_hosts_file: &Path) -> SshTarget {
    SshTarget {
        host: "127.0.0.1".into(),
        port,
        user: "tester".into(),
        key_file: key_file.to_owned(),
        known_hosts_file: known_hosts_file.to_owned(),
        socket_path: SOCKET.into(),
        handshake_timeout: Duration::from_secs(20),
        insecure_accept_any_host_key: false,
    }
}

fn write(dir: &TempDir, name: &str, contents: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn known_hosts(dir: &TempDir, server: &TestServer) -> PathBuf {
    write(
        dir,
        "known_hosts",
        &format!("{}\n", server.known_hosts_line()),
    )
}

async fn assert_echo(target: &SshTarget) {
    let mut stream = dial(target).await.expect("dial");
    let payload = b"\x00\x00\x00\x1chello over direct-streamlocal";
    stream.write_all(payload).await.unwrap();
    stream.flush().await.unwrap();
    let mut back = vec![0u8; payload.len()];
    stream.read_exact(&mut back).await.unwrap();
    assert_eq!(&back[..], &payload[..]);
}

async fn dial_err(target: &SshTarget) -> SshError {
    match dial(target).await {
        Ok(_) => panic!("dial to {target:?} unexpectedly succeeded"),
        Err(e) => e,
    }
}

/// The error's Display and Debug must not quote the key file.
fn assert_no_key_material(err: &SshError, key_file: &Path) {
    let text = format!("{err} {err:?} {:?}", std::error::Error::source(err));
    let Ok(contents) = std::fs::read_to_string(key_file) else {
        return;
    };
    for line in contents.lines() {
        let line = line.trim();
        if line.len() >= 12 && !line.starts_with("-----") {
            assert!(
                !text.contains(line),
                "error text contains key file bytes: {text}"
            );
        }
    }
}

fn check(err: &SshError, kind: SshErrorKind, permanent: bool, key_file: &Path) {
    assert_eq!(err.kind(), kind, "{err} / {err:?}");
    assert_eq!(err.is_permanent(), permanent, "{err:?}");
    assert_eq!(err.is_transient(), !permanent, "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("ssh to tester@127.0.0.1:"), "{msg}");
    assert_no_key_material(err, key_file);
}

#[tokio::test]
async fn ed25519_echo_with_plain_known_hosts() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = known_hosts(&dir, &server);
        assert_echo(&target(server.port(), &key, &kh)).await;
        assert_eq!(server.requested_socket_paths(), vec![SOCKET.to_string()]);
    })
    .await;
}

#[tokio::test]
async fn rsa_key_echo() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Rsa);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = known_hosts(&dir, &server);
        assert_echo(&target(server.port(), &key, &kh)).await;
    })
    .await;
}

#[tokio::test]
async fn hashed_known_hosts_entry_is_accepted() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let line = server.hashed_known_hosts_line();
        assert!(line.starts_with("|1|"), "{line}");
        assert!(!line.contains("127.0.0.1"), "{line}");
        // An unrelated entry first: matching must go past it.
        let (_, unrelated) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let kh = write(
            &dir,
            "known_hosts",
            &format!(
                "# comment\nother.example {}\n{line}\n",
                unrelated.to_openssh().unwrap()
            ),
        );
        assert_echo(&target(server.port(), &key, &kh)).await;
    })
    .await;
}

#[tokio::test]
async fn unknown_host_key_is_rejected_permanently() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        // The right key, but recorded for another port: the host is unknown.
        let line = server
            .known_hosts_line()
            .replace(&format!("]:{} ", server.port()), "]:1 ");
        let kh = write(&dir, "known_hosts", &format!("{line}\n"));
        let err = dial_err(&target(server.port(), &key, &kh)).await;
        check(&err, SshErrorKind::HostKeyRejected, true, &key);
        let msg = err.to_string();
        assert!(
            msg.contains(&format!(
                "{} is not in the known_hosts file {}",
                offered(&server),
                kh.display()
            )),
            "{msg}"
        );
        assert!(
            msg.contains(&format!(
                "`ssh-keyscan -p {} 127.0.0.1 >> {}`",
                server.port(),
                kh.display()
            )),
            "{msg}"
        );
        assert!(msg.contains("fingerprint"), "{msg}");
        // An empty file is the same.
        let kh = write(&dir, "known_hosts_empty", "");
        let err = dial_err(&target(server.port(), &key, &kh)).await;
        check(&err, SshErrorKind::HostKeyRejected, true, &key);
        assert!(err.to_string().contains(&kh.display().to_string()), "{err}");
    })
    .await;
}

/// The server's host key as a rejection names it: algorithm and SHA-256
/// fingerprint.
fn offered(server: &TestServer) -> String {
    let line = server.known_hosts_line();
    let openssh = line.split_once(' ').expect("pattern and key").1;
    let key = russh::keys::PublicKey::from_openssh(openssh).expect("host key");
    format!(
        "host key {} {}",
        key.algorithm(),
        key.fingerprint(russh::keys::HashAlg::Sha256)
    )
}

/// The command an unknown host key's error gives, run as the operator would
/// (when OpenSSH's `ssh-keyscan` is installed), records the key: the next dial
/// succeeds. A path with a space is quoted.
#[tokio::test]
async fn the_recorded_fix_for_an_unknown_host_key_works() {
    within(async {
        if std::process::Command::new("ssh-keyscan")
            .arg("-h")
            .output()
            .is_err()
        {
            eprintln!("SKIPPED: ssh-keyscan is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = write(&dir, "known hosts", "");
        let t = target(server.port(), &key, &kh);
        let msg = dial_err(&t).await.to_string();
        let command = msg
            .rsplit_once("record it with `")
            .and_then(|(_, rest)| rest.strip_suffix('`'))
            .unwrap_or_else(|| panic!("no command in {msg}"));
        assert!(
            command.ends_with(&format!("'{}'", kh.display())),
            "{command}"
        );
        let out = tokio::process::Command::new("sh")
            .args(["-c", command])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{command}: {out:?}");
        assert_echo(&t).await;
    })
    .await;
}

#[tokio::test]
async fn mismatched_host_key_is_rejected() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let (_, other) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = write(
            &dir,
            "known_hosts",
            &format!(
                "[127.0.0.1]:{} {}\n",
                server.port(),
                other.to_openssh().unwrap()
            ),
        );
        let err = dial_err(&target(server.port(), &key, &kh)).await;
        check(&err, SshErrorKind::HostKeyRejected, true, &key);
        let msg = err.to_string();
        assert!(
            msg.contains(&format!(
                "{} differs from the one recorded for [127.0.0.1]:{} at line 1 of the \
                 known_hosts file {}",
                offered(&server),
                server.port(),
                kh.display()
            )),
            "{msg}"
        );
        assert!(
            msg.contains(&format!(
                "`ssh-keygen -R '[127.0.0.1]:{port}' -f {file} && ssh-keyscan -p {port} \
                 127.0.0.1 >> {file}`",
                port = server.port(),
                file = kh.display()
            )),
            "{msg}"
        );
    })
    .await;
}

#[tokio::test]
async fn insecure_mode_accepts_any_host_key() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = write(&dir, "known_hosts", "");
        let mut t = target(server.port(), &key, &kh);
        t.insecure_accept_any_host_key = true;
        assert_echo(&t).await;
        // Even without a known_hosts file.
        t.known_hosts_file = dir.path().join("absent");
        assert_echo(&t).await;
    })
    .await;
}

#[tokio::test]
async fn unauthorised_client_key_fails_auth() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (_, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let (stranger, _) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = known_hosts(&dir, &server);
        let err = dial_err(&target(server.port(), &stranger, &kh)).await;
        check(&err, SshErrorKind::AuthFailed, true, &stranger);
        let (rsa_stranger, _) = generate_client_key(dir.path(), KeyKind::Rsa);
        let err = dial_err(&target(server.port(), &rsa_stranger, &kh)).await;
        check(&err, SshErrorKind::AuthFailed, true, &rsa_stranger);
    })
    .await;
}

#[tokio::test]
async fn missing_files_are_transient() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = known_hosts(&dir, &server);
        let missing = dir.path().join("not-there");

        let err = dial_err(&target(server.port(), &missing, &kh)).await;
        check(&err, SshErrorKind::CredentialsUnavailable, false, &key);
        assert!(err.to_string().contains("key file"), "{err}");

        let err = dial_err(&target(server.port(), &key, &missing)).await;
        check(&err, SshErrorKind::CredentialsUnavailable, false, &key);
        assert!(err.to_string().contains("known_hosts"), "{err}");

        // The secret appears: the next dial works.
        std::fs::copy(&kh, &missing).unwrap();
        assert_echo(&target(server.port(), &key, &missing)).await;
    })
    .await;
}

#[tokio::test]
async fn garbage_key_file_is_bad_key() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (_, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = known_hosts(&dir, &server);
        let garbage = write(
            &dir,
            "garbage",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LWdhcmJhZ2UtYnl0ZXMtMTIzNDU2Nzg5MA==\n-----END OPENSSH PRIVATE KEY-----\n",
        );
        let err = dial_err(&target(server.port(), &garbage, &kh)).await;
        check(&err, SshErrorKind::BadKey, true, &garbage);
        let text = write(&dir, "text", "this is not a key at all, 0123456789abcdef\n");
        let err = dial_err(&target(server.port(), &text, &kh)).await;
        check(&err, SshErrorKind::BadKey, true, &text);
    })
    .await;
}

#[tokio::test]
async fn closed_port_is_unreachable_fast() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, _) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let kh = write(&dir, "known_hosts", "");
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let start = Instant::now();
        let err = dial_err(&target(port, &key, &kh)).await;
        check(&err, SshErrorKind::Unreachable, false, &key);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    })
    .await;
}

#[tokio::test]
async fn silent_server_times_out_within_the_handshake_timeout() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, _) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let kh = write(&dir, "known_hosts", "");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let holder = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let (s, _) = listener.accept().await.unwrap();
                held.push(s);
            }
        });
        let mut t = target(port, &key, &kh);
        t.handshake_timeout = Duration::from_millis(500);
        let start = Instant::now();
        let err = dial_err(&t).await;
        let took = start.elapsed();
        holder.abort();
        check(&err, SshErrorKind::Timeout, false, &key);
        assert!(
            took >= Duration::from_millis(450) && took < Duration::from_secs(3),
            "{took:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn key_rotation_takes_effect_on_the_next_dial() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (old_key, old_public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![old_public])).await;
        let kh = known_hosts(&dir, &server);
        // The target always names the same file; rotation replaces its contents.
        let key_path = dir.path().join("id_current");
        std::fs::copy(&old_key, &key_path).unwrap();
        let t = target(server.port(), &key_path, &kh);
        assert_echo(&t).await;

        let (new_key, new_public) = generate_client_key(dir.path(), KeyKind::Rsa);
        server.set_authorized(vec![new_public]);
        // Old key still in the file: refused.
        let err = dial_err(&t).await;
        check(&err, SshErrorKind::AuthFailed, true, &key_path);
        // New key written: the same target works.
        std::fs::copy(&new_key, &key_path).unwrap();
        assert_echo(&t).await;
        // And the old key, used directly, stays refused.
        let err = dial_err(&target(server.port(), &old_key, &kh)).await;
        check(&err, SshErrorKind::AuthFailed, true, &old_key);
    })
    .await;
}

#[tokio::test]
async fn a_foreign_host_key_is_rejected_until_the_server_presents_its_own_again() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = known_hosts(&dir, &server);
        let t = target(server.port(), &key, &kh);
        // A connection open before the change stays usable.
        let mut open = dial(&t).await.expect("dial");
        server.present_foreign_host_key(true);
        let err = dial_err(&t).await;
        check(&err, SshErrorKind::HostKeyRejected, true, &key);
        assert!(err.to_string().contains("differs"), "{err}");
        open.write_all(b"still").await.unwrap();
        let mut back = [0u8; 5];
        open.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"still");
        server.present_foreign_host_key(false);
        assert_echo(&t).await;
    })
    .await;
}

#[tokio::test]
async fn an_authorized_keys_file_is_read_on_every_attempt() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![])).await;
        let kh = known_hosts(&dir, &server);
        let t = target(server.port(), &key, &kh);
        let ak = dir.path().join("authorized_keys");
        server.authorize_file(&ak);
        // No file yet: no key.
        check(&dial_err(&t).await, SshErrorKind::AuthFailed, true, &key);
        let line = public.to_openssh().unwrap();
        std::fs::write(&ak, format!("# comment\n\n{line} someone@somewhere\n")).unwrap();
        assert_echo(&t).await;
        std::fs::write(&ak, "").unwrap();
        check(&dial_err(&t).await, SshErrorKind::AuthFailed, true, &key);
    })
    .await;
}

#[tokio::test]
async fn forwards_to_a_unix_socket_and_reports_a_dead_one() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let sock = dir.path().join("daemon.sock");
        let unix = tokio::net::UnixListener::bind(&sock).unwrap();
        let daemon = tokio::spawn(async move {
            loop {
                let (mut s, _) = unix.accept().await.unwrap();
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        let server = TestServer::start(TestServerOptions {
            authorized: vec![public],
            channel: ChannelTarget::ForwardRequested,
        })
        .await;
        let kh = known_hosts(&dir, &server);
        let mut t = target(server.port(), &key, &kh);
        t.socket_path = sock.to_str().unwrap().into();
        assert_echo(&t).await;

        t.socket_path = dir.path().join("nobody.sock").to_str().unwrap().into();
        let err = dial_err(&t).await;
        check(&err, SshErrorKind::Unreachable, false, &key);
        daemon.abort();
    })
    .await;
}

#[tokio::test]
async fn stopped_server_refuses_new_dials() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let mut server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = known_hosts(&dir, &server);
        let t = target(server.port(), &key, &kh);
        assert_echo(&t).await;
        server.stop();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let err = dial_err(&t).await;
        check(&err, SshErrorKind::Unreachable, false, &key);
    })
    .await;
}

#[tokio::test]
async fn hashed_line_is_understood_by_openssh() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let server = TestServer::start(TestServerOptions::echo(vec![])).await;
        let kh = write(
            &dir,
            "known_hosts",
            &format!("{}\n", server.hashed_known_hosts_line()),
        );
        let pattern = format!("[127.0.0.1]:{}", server.port());
        let out = match std::process::Command::new("ssh-keygen")
            .args(["-F", &pattern, "-f"])
            .arg(&kh)
            .output()
        {
            Ok(out) => out,
            Err(e) => {
                eprintln!("skipping the OpenSSH cross-check: ssh-keygen cannot run ({e})");
                return;
            }
        };
        assert!(
            out.status.success(),
            "ssh-keygen -F did not find {pattern}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
    .await;
}

#[test]
fn stream_is_a_sendable_byte_stream() {
    fn assert_io<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static>() {}
    assert_io::<libvirt_ssh::SshStream>();
    fn assert_error<T: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<SshError>();
}

#[tokio::test]
async fn aes_gcm_is_negotiated_and_vectored_writes_arrive_whole() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions::echo(vec![public])).await;
        let kh = known_hosts(&dir, &server);
        let mut stream = dial(&target(server.port(), &key, &kh)).await.expect("dial");
        assert_eq!(stream.cipher(), "aes256-gcm@openssh.com");
        // Packets as the libvirt client writes them: a short header, then a
        // large payload, in one vectored write each.
        let mut sent = Vec::new();
        for round in 0..3u8 {
            let head = [round; 28];
            let body: Vec<u8> = (0..100_000).map(|i| (i % 251) as u8 ^ round).collect();
            let (mut h, mut b) = (&head[..], &body[..]);
            while !h.is_empty() || !b.is_empty() {
                let slices = [std::io::IoSlice::new(h), std::io::IoSlice::new(b)];
                let n = stream.write_vectored(&slices).await.unwrap();
                assert!(n > 0);
                let from_head = n.min(h.len());
                h = &h[from_head..];
                b = &b[n - from_head..];
            }
            sent.extend_from_slice(&head);
            sent.extend_from_slice(&body);
        }
        stream.flush().await.unwrap();
        let mut back = vec![0u8; sent.len()];
        stream.read_exact(&mut back).await.unwrap();
        assert!(back == sent, "the echo differs from what was written");
    })
    .await;
}
