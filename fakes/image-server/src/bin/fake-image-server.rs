//! `fake-image-server --listen 127.0.0.1:PORT --dir DIR`: serves the files of DIR
//! over HTTP/1.1 with a `Content-Length`, until interrupted. For the real-host
//! test script, which needs an image URL the provider can fetch.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use image_server::{ImageServer, Options};

const USAGE: &str = "usage: fake-image-server --listen ADDR:PORT --dir DIR";

fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut listen: Option<SocketAddr> = None;
    let mut dir: Option<PathBuf> = None;
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (a, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--listen" => {
                let v = value()?;
                listen = Some(
                    v.parse()
                        .map_err(|e| format!("--listen {v:?}: not an ADDR:PORT ({e})"))?,
                );
            }
            "--dir" => dir = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let dir = dir.ok_or_else(|| format!("--dir is required\n{USAGE}"))?;
    if !dir.is_dir() {
        return Err(format!("--dir {}: not a directory", dir.display()));
    }
    Ok(Options {
        listen: listen.unwrap_or(Options::default().listen),
        dir: Some(dir),
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let opts = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let dir = opts.dir.clone().unwrap_or_default();
    let server = match ImageServer::start_with(opts).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-image-server: cannot listen: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("serving {} at {}", dir.display(), server.url());
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown().await;
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn parses_listen_and_dir() {
        let dir = std::env::temp_dir();
        let o = parse(args(&format!(
            "--listen 127.0.0.1:8099 --dir {}",
            dir.display()
        )))
        .unwrap();
        assert_eq!(o.listen, "127.0.0.1:8099".parse().unwrap());
        assert_eq!(o.dir, Some(dir.clone()));
        let o = parse(args(&format!("--dir={}", dir.display()))).unwrap();
        assert_eq!(o.listen, Options::default().listen);
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(
            parse(args("--listen 127.0.0.1:1"))
                .unwrap_err()
                .contains("--dir")
        );
        assert!(
            parse(args("--listen nowhere --dir /"))
                .unwrap_err()
                .contains("ADDR:PORT")
        );
        assert!(
            parse(args("--dir /no/such/dir"))
                .unwrap_err()
                .contains("not a directory")
        );
        assert!(parse(args("--bogus")).unwrap_err().contains("unknown"));
        assert!(parse(args("--dir")).unwrap_err().contains("needs a value"));
    }
}
