use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// What a raw HTTP/1.1 client read up to the end of the connection.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn length(&self) -> Option<u64> {
        self.header("content-length").map(|v| v.parse().unwrap())
    }
}

async fn request(addr: SocketAddr, method: &str, path: &str) -> Response {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).await.unwrap();
    parse(&all)
}

fn parse(all: &[u8]) -> Response {
    let end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let head = std::str::from_utf8(&all[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    Response {
        status,
        headers,
        body: all[end + 4..].to_vec(),
    }
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

#[tokio::test]
async fn serves_registered_bytes_with_their_length_and_counts_requests() {
    let server = ImageServer::start().await.unwrap();
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert_eq!(
        server.url_for("a.img"),
        format!("http://{}/a.img", server.addr())
    );
    server.add("/a.img", data(200_000));
    let r = request(server.addr(), "GET", "/a.img?x=1").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.length(), Some(200_000));
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.body, data(200_000));
    request(server.addr(), "GET", "/a.img").await;
    assert_eq!(server.requests("/a.img"), 2);
    assert_eq!(server.requests("a.img"), 2, "paths are normalised");
    assert_eq!(server.requests("/other"), 0);
}

#[tokio::test]
async fn streams_a_file_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.img");
    std::fs::write(&file, data(3 << 20)).unwrap();
    let server = ImageServer::start().await.unwrap();
    server.add_file("/big.img", &file);
    let r = request(server.addr(), "GET", "/big.img").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.length(), Some(3 << 20));
    assert_eq!(r.body, data(3 << 20));
    // Read on every request: a changed file is served as it is now.
    std::fs::write(&file, b"short").unwrap();
    let r = request(server.addr(), "GET", "/big.img").await;
    assert_eq!(r.length(), Some(5));
    assert_eq!(r.body, b"short");
}

#[tokio::test]
async fn no_length_mode_ends_the_body_by_closing() {
    let server = ImageServer::start().await.unwrap();
    server.add("/n.img", data(100_000));
    server.set_mode("/n.img", Mode::NoLength);
    let r = request(server.addr(), "GET", "/n.img").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.length(), None);
    assert_eq!(r.header("transfer-encoding"), None);
    assert_eq!(r.body, data(100_000));
}

#[tokio::test]
async fn not_found_and_unavailable_modes_and_unknown_paths() {
    let server = ImageServer::start().await.unwrap();
    server.add("/gone.img", data(10));
    server.set_mode("/gone.img", Mode::NotFound);
    server.set_mode("/busy.img", Mode::Unavailable);
    assert_eq!(request(server.addr(), "GET", "/gone.img").await.status, 404);
    let busy = request(server.addr(), "GET", "/busy.img").await;
    assert_eq!(busy.status, 503);
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert_eq!(request(server.addr(), "GET", "/nothing").await.status, 404);
    assert_eq!(server.requests("/nothing"), 1);
    server.set_mode("/gone.img", Mode::Normal);
    let back = request(server.addr(), "GET", "/gone.img").await;
    assert_eq!((back.status, back.body), (200, data(10)));
    server.remove("/gone.img");
    assert_eq!(request(server.addr(), "GET", "/gone.img").await.status, 404);
    assert_eq!(server.requests("/gone.img"), 3);
}

/// Slow mode paces a body from memory and one streamed from a file alike.
#[rstest::rstest]
#[case::from_memory(false)]
#[case::from_a_file(true)]
#[tokio::test]
async fn slow_mode_pauses_between_chunks(#[case] from_file: bool) {
    let dir = tempfile::tempdir().unwrap();
    let server = ImageServer::start().await.unwrap();
    if from_file {
        let file = dir.path().join("s.img");
        std::fs::write(&file, data(5_000)).unwrap();
        server.add_file("/s.img", &file);
    } else {
        server.add("/s.img", data(5_000));
    }
    server.set_mode(
        "/s.img",
        Mode::Slow {
            chunk: 1_000,
            delay: Duration::from_millis(40),
        },
    );
    let t = Instant::now();
    let r = request(server.addr(), "GET", "/s.img").await;
    let took = t.elapsed();
    assert_eq!(r.length(), Some(5_000));
    assert_eq!(r.body, data(5_000));
    // Four pauses between five chunks.
    assert!(took >= Duration::from_millis(160), "{took:?}");
}

#[tokio::test]
async fn cut_mode_announces_the_whole_length_and_sends_part() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.img");
    std::fs::write(&file, data(300_000)).unwrap();
    let server = ImageServer::start().await.unwrap();
    server.add("/c.img", data(300_000));
    server.set_mode("/c.img", Mode::Cut { after: 123_456 });
    server.add_file("/cf.img", &file);
    server.set_mode("/cf.img", Mode::Cut { after: 70_000 });
    let r = request(server.addr(), "GET", "/c.img").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.length(), Some(300_000));
    assert_eq!(r.body, data(123_456));
    let r = request(server.addr(), "GET", "/cf.img").await;
    assert_eq!(r.length(), Some(300_000));
    assert_eq!(r.body, data(70_000));
}

#[tokio::test]
async fn head_gets_the_head_only_and_other_methods_are_refused() {
    let server = ImageServer::start().await.unwrap();
    server.add("/h.img", data(1_000));
    let r = request(server.addr(), "HEAD", "/h.img").await;
    assert_eq!((r.status, r.length()), (200, Some(1_000)));
    assert!(r.body.is_empty());
    let r = request(server.addr(), "POST", "/h.img").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
}

#[tokio::test]
async fn a_directory_serves_its_files_and_nothing_outside_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("images");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.img"), data(1_000)).unwrap();
    std::fs::write(dir.join("sub/b.img"), data(10)).unwrap();
    std::fs::write(root.path().join("secret"), b"no").unwrap();
    let server = ImageServer::start_with(Options {
        dir: Some(dir.clone()),
        ..Options::default()
    })
    .await
    .unwrap();
    let r = request(server.addr(), "GET", "/a.img").await;
    assert_eq!(
        (r.status, r.length(), r.body),
        (200, Some(1_000), data(1_000))
    );
    assert_eq!(
        request(server.addr(), "GET", "/sub/b.img").await.body,
        data(10)
    );
    for bad in ["/../secret", "/sub/../../secret", "/", "/sub", "/missing"] {
        assert_eq!(
            request(server.addr(), "GET", bad).await.status,
            404,
            "{bad}"
        );
    }
    // A registered path wins over the directory.
    server.set_mode("/a.img", Mode::Unavailable);
    assert_eq!(request(server.addr(), "GET", "/a.img").await.status, 503);
}

#[tokio::test]
async fn a_malformed_request_is_answered_400() {
    let server = ImageServer::start().await.unwrap();
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    s.write_all(b"nonsense\r\n\r\n").await.unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).await.unwrap();
    assert_eq!(parse(&all).status, 400);
}

#[tokio::test]
async fn dropping_the_server_releases_the_port_and_cuts_responses_in_flight() {
    let server = ImageServer::start().await.unwrap();
    let addr = server.addr();
    server.add("/s.img", data(10_000));
    server.set_mode(
        "/s.img",
        Mode::Slow {
            chunk: 100,
            delay: Duration::from_millis(50),
        },
    );
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /s.img HTTP/1.1\r\n\r\n").await.unwrap();
    let mut first = [0u8; 64];
    let _ = s.read(&mut first).await.unwrap();
    let t = Instant::now();
    drop(server);
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest))
        .await
        .expect("the response is cut at once");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert!(rest.len() < 10_000);
    // The listener is gone.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn shutdown_lets_responses_in_flight_finish_and_refuses_new_ones() {
    let server = ImageServer::start().await.unwrap();
    let addr = server.addr();
    server.add("/s.img", data(1_000));
    server.set_mode(
        "/s.img",
        Mode::Slow {
            chunk: 250,
            delay: Duration::from_millis(30),
        },
    );
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /s.img HTTP/1.1\r\n\r\n").await.unwrap();
    // Let the server accept and start answering.
    let mut all = vec![0u8; 16];
    s.read_exact(&mut all).await.unwrap();
    let done = tokio::spawn(server.shutdown());
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).await.unwrap();
    all.extend_from_slice(&rest);
    assert_eq!(parse(&all).body, data(1_000));
    done.await.unwrap();
    assert!(TcpStream::connect(addr).await.is_err());
}
