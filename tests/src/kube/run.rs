//! Running a client as a process and reading what it printed: [`Cmd`] (bounded by
//! [`COMMAND_TIMEOUT`](super::COMMAND_TIMEOUT)), [`Run`] (exit code, standard output, standard
//! error split from kubectl's `-v=6` request log), [`Background`] (`kubectl get -w`), and
//! kubectl's tables as cells.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::SocketAddr,
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use super::COMMAND_TIMEOUT;

/// A process killed when dropped.
pub struct Child(pub(super) std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A client command to run.
pub struct Cmd {
    pub(super) cmd: Command,
    pub(super) label: String,
    pub(super) stdin: Option<String>,
}

impl Cmd {
    /// Sets an environment variable.
    pub fn env(mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(k, v);
        self
    }

    /// Feeds `text` on standard input (`-f -`).
    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.to_string());
        self
    }

    /// Runs it to the end (at most [`COMMAND_TIMEOUT`]).
    pub fn run(self) -> Run {
        self.run_within(COMMAND_TIMEOUT)
    }

    /// Runs it to the end, killing it after `limit` (`Run::timed_out`).
    pub fn run_within(mut self, limit: Duration) -> Run {
        let mut child = self
            .cmd
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: does not start: {e}", self.label));
        if let Some(text) = self.stdin.take()
            && let Some(mut i) = child.stdin.take()
        {
            let _ = i.write_all(text.as_bytes());
        }
        let out = reader(child.stdout.take().expect("stdout"));
        let err = reader(child.stderr.take().expect("stderr"));
        let until = Instant::now() + limit;
        let (code, timed_out) = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break (status.code(), false);
            }
            if Instant::now() >= until {
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let stdout = out.join().unwrap_or_default();
        let raw = err.join().unwrap_or_default();
        let (stderr, log) = split_klog(&raw);
        Run {
            label: self.label,
            code,
            timed_out,
            stdout,
            stderr,
            log,
        }
    }

    /// Starts it in the background: its output lines are collected as they come.
    pub fn spawn(mut self) -> Background {
        let mut child = self
            .cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: does not start: {e}", self.label));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let seen = lines.clone();
        let stdout = child.stdout.take().expect("stdout");
        let out = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                seen.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        let err = reader(child.stderr.take().expect("stderr"));
        Background {
            label: self.label,
            child: Some(child),
            lines,
            out: Some(out),
            err: Some(err),
        }
    }
}

fn reader(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = r.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    })
}

/// Whether `line` starts a klog entry (`I1126 07:20:59.160431   11382 file.go:632] ...`).
fn klog_header(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 22
        && matches!(b[0], b'I' | b'W' | b'E' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
        && b[8] == b':'
        && b[11] == b':'
        && b[14] == b'.'
}

/// Splits kubectl's standard error into what it prints for its user and its `-v` log. A log
/// entry may go on over several lines (`server response object: {` ... `}`, 1.29's `%s[{` ...
/// `}]`): it goes on while its brackets are open.
fn split_klog(raw: &str) -> (String, String) {
    let (mut user, mut log) = (String::new(), String::new());
    let depth = |t: &str| {
        t.chars()
            .map(|c| match c {
                '{' | '[' => 1i64,
                '}' | ']' => -1,
                _ => 0,
            })
            .sum::<i64>()
    };
    let mut open = 0i64;
    for line in raw.split_inclusive('\n') {
        let text = line.trim_end_matches('\n');
        if klog_header(text) {
            // The header's `file.go:NN]` is not the message's.
            let message = text.split_once("] ").map_or("", |(_, m)| m);
            open = depth(message).max(0);
            log.push_str(line);
        } else if open > 0 {
            open = (open + depth(text)).max(0);
            log.push_str(line);
        } else {
            user.push_str(line);
        }
    }
    (user, log)
}

/// A finished client command.
pub struct Run {
    /// What ran (for messages).
    pub label: String,
    /// Its exit code (None if killed).
    pub code: Option<i32>,
    /// Whether it ran past its limit and was killed.
    pub timed_out: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error, without kubectl's `-v` log.
    pub stderr: String,
    /// kubectl's `-v=6` log (the requests it made).
    pub log: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n== {} (exit {:?}{})\n-- stdout:\n{}\n-- stderr:\n{}\n-- log (-v=6):\n{}",
            self.label,
            self.code,
            if self.timed_out { ", TIMED OUT" } else { "" },
            self.stdout,
            self.stderr,
            self.log
        )
    }
}

impl Run {
    /// Asserts it exited 0.
    #[track_caller]
    pub fn ok(self) -> Self {
        assert_eq!(self.code, Some(0), "expected success:{self}");
        self
    }

    /// Whether it exited 0.
    pub fn succeeded(&self) -> bool {
        self.code == Some(0)
    }

    /// Asserts it exited non-zero (not killed).
    #[track_caller]
    pub fn fails(self) -> Self {
        assert!(
            !self.timed_out && self.code.is_some_and(|c| c != 0),
            "expected a failure:{self}"
        );
        self
    }

    /// Standard output, trimmed.
    pub fn out(&self) -> &str {
        self.stdout.trim_end()
    }

    /// Standard error without the log, trimmed.
    pub fn err(&self) -> &str {
        self.stderr.trim_end()
    }

    /// The log's requests: `VERB URL STATUS` (`GET http://.../api/v1/pods?limit=500 200 OK`),
    /// from kubectl's structured log lines (1.30 on) or its older `GET URL 200 OK in N
    /// milliseconds` lines.
    pub fn requests(&self) -> Vec<String> {
        self.log
            .lines()
            .filter_map(|l| {
                let (_, msg) = l.split_once("round_trippers.go:")?;
                let (_, msg) = msg.split_once("] ")?;
                if msg.starts_with("\"Response\"") {
                    let field = |k: &str| {
                        msg.split_once(&format!("{k}=\""))
                            .and_then(|(_, rest)| rest.split_once('"'))
                            .map(|(v, _)| v.to_string())
                            .unwrap_or_default()
                    };
                    Some(format!(
                        "{} {} {}",
                        field("verb"),
                        field("url"),
                        field("status")
                    ))
                } else {
                    let (request, _) = msg.rsplit_once(" in ")?;
                    Some(request.to_string())
                }
            })
            .collect()
    }

    /// Whether a request's `VERB URL STATUS` contains every one of `parts`.
    pub fn requested(&self, parts: &[&str]) -> bool {
        self.requests()
            .iter()
            .any(|r| parts.iter().all(|p| r.contains(p)))
    }
}

/// A client command running in the background (`kubectl get -w`); killed when dropped.
pub struct Background {
    label: String,
    child: Option<std::process::Child>,
    lines: Arc<Mutex<Vec<String>>>,
    out: Option<std::thread::JoinHandle<()>>,
    err: Option<std::thread::JoinHandle<String>>,
}

impl Background {
    /// The output lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits until it has printed `n` lines (at most `within`); the lines.
    #[track_caller]
    pub fn wait_lines(&mut self, n: usize, within: Duration) -> Vec<String> {
        let until = Instant::now() + within;
        loop {
            let lines = self.lines();
            if lines.len() >= n {
                return lines;
            }
            if Instant::now() >= until {
                let run = self.stop();
                panic!("{n} lines expected, {} came:{run}", lines.len());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether it is still running (has not exited by itself).
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Waits for it to exit by itself (at most `within`), else kills it; what it printed.
    pub fn wait(&mut self, within: Duration) -> Run {
        let until = Instant::now() + within;
        let mut code = None;
        let mut timed_out = true;
        if let Some(child) = self.child.as_mut() {
            while Instant::now() < until {
                if let Ok(Some(status)) = child.try_wait() {
                    code = status.code();
                    timed_out = false;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut run = self.stop();
        run.code = code;
        run.timed_out = timed_out;
        run
    }

    /// Kills it; what it printed.
    pub fn stop(&mut self) -> Run {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(t) = self.out.take() {
            let _ = t.join();
        }
        let raw = self
            .err
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let (stderr, log) = split_klog(&raw);
        let mut stdout = self.lines().join("\n");
        stdout.push('\n');
        Run {
            label: self.label.clone(),
            code: None,
            timed_out: false,
            stdout,
            stderr,
            log,
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The cells of a kubectl table line: columns are separated by at least two spaces (kubectl's
/// tab writer pads with three), cells may hold single spaces (`NOMINATED NODE`).
pub fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

/// Each line's cells, the AGE-like last `drop_last` cells left out (they change with time).
pub fn table(text: &str, drop_last: usize) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| {
            let mut c = cells(l);
            let keep = c.len().saturating_sub(drop_last);
            c.truncate(keep);
            c
        })
        .collect()
}

/// `["a", "b"]` as owned strings, for comparing with [`table`].
pub fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// A plain HTTP/1.1 GET of `path`: status and body (bodies of health endpoints and small
/// documents; chunked bodies are not decoded).
pub async fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out))
        .await
        .map_err(|_| std::io::Error::other("timed out"))??;
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// Polls `check` every 50 ms until it holds (at most `within`); panics with `what` otherwise.
#[track_caller]
pub fn eventually(within: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < until, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn klog_lines_are_split_from_what_kubectl_prints() {
        let raw = "I1126 07:20:08.629962   10036 round_trippers.go:632] \"Response\" verb=\"GET\" url=\"http://h/api?timeout=32s\" status=\"200 OK\" milliseconds=2\n\
                   I1126 07:21:08.078560   11910 helpers.go:247] server response object: {\n  \"kind\": \"Status\"\n}\n\
                   I1126 07:43:51.062835   29203 helpers.go:246] server response object: %s[{\n  \"details\": {\n    \"name\": \"x\"\n  }\n}]\n\
                   Error from server (NotFound): pods \"x\" not found\n";
        let (user, log) = split_klog(raw);
        assert_eq!(user, "Error from server (NotFound): pods \"x\" not found\n");
        assert_eq!(log.lines().count(), 9);
        let run = Run {
            label: String::new(),
            code: Some(1),
            timed_out: false,
            stdout: String::new(),
            stderr: user,
            log,
        };
        assert_eq!(run.requests(), ["GET http://h/api?timeout=32s 200 OK"]);
        let old = Run {
            log: "I1126 07:35:50.710693   17392 round_trippers.go:553] GET http://h/api?timeout=32s 200 OK in 2 milliseconds\n".into(),
            ..run
        };
        assert_eq!(old.requests(), ["GET http://h/api?timeout=32s 200 OK"]);
        assert_eq!(
            cells(
                "web    0/1     Pending   0          0s    <none>   node-1   <none>           <none>"
            ),
            [
                "web", "0/1", "Pending", "0", "0s", "<none>", "node-1", "<none>", "<none>"
            ]
        );
        assert_eq!(
            cells(
                "NAME   READY   STATUS    RESTARTS   AGE   IP       NODE     NOMINATED NODE   READINESS GATES"
            ),
            [
                "NAME",
                "READY",
                "STATUS",
                "RESTARTS",
                "AGE",
                "IP",
                "NODE",
                "NOMINATED NODE",
                "READINESS GATES"
            ]
        );
    }
}
