//! A static file server on loopback for tests that need a registry of
//! their own (a PEP 503 index, an npm registry): real HTTP, the files a
//! test wrote, and a log of what was asked.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Serves the files under `root` on a loopback port, recording each
/// request's path: a directory is served as its `index.html` (a PEP 503
/// page) or `index.json` (an npm packument). Runs until the test process
/// ends.
pub(super) fn serve(root: PathBuf) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            // The rest of the head.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
            log.lock().unwrap().push(path.clone());
            let path = path.split(['?', '#']).next().unwrap_or("/");
            let mut file = root.join(path.trim_start_matches('/'));
            if file.is_dir() {
                file = ["index.html", "index.json"]
                    .iter()
                    .map(|index| file.join(index))
                    .find(|index| index.is_file())
                    .unwrap_or(file);
            }
            let (status, body) = match std::fs::read(&file) {
                Ok(body) if !path.contains("..") => ("200 OK", body),
                _ => ("404 Not Found", b"not found".to_vec()),
            };
            let kind = match file.extension().and_then(|e| e.to_str()) {
                Some("json") => "application/json",
                Some("html") => "text/html",
                _ => "application/octet-stream",
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    (port, seen)
}
