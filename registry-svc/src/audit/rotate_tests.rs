//! Tests of `audit::rotate`.
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A directory of its own under the system's temporary directory, removed when dropped
/// (even by a failed test).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "registry-svc-rotate-{}-{}-{nanos}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).expect("a temporary directory");
        Self(dir)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The names of the directory's files, sorted.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.0)
            .expect("the directory")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .into_string()
                    .expect("a UTF-8 name")
            })
            .collect();
        names.sort();
        names
    }

    /// The backups of `audit.log`, oldest first (their timestamps sort as they read).
    fn backups(&self) -> Vec<String> {
        self.names()
            .into_iter()
            .filter(|n| n.starts_with("audit-") && n.ends_with(".log"))
            .filter(|n| parse_timestamp(&n["audit-".len()..n.len() - ".log".len()]).is_some())
            .collect()
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.join(name)).expect("a readable file")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn timestamps_are_lumberjacks() {
    assert_eq!(timestamp(1_795_921_800_123), "2026-11-29T03-10-00.123");
    assert_eq!(timestamp(0), "1970-01-01T00-00-00.000");
    assert_eq!(
        parse_timestamp("2026-11-29T03-10-00.123"),
        Some(1_795_921_800_123)
    );
    assert_eq!(
        parse_timestamp("2019-01-01T00-00-00.000"),
        Some(1_546_300_800_000)
    );
    for bad in [
        "",
        "2026-11-29T03-10-00",
        "2026-11-29T03:10:00.123",
        "2026-13-29T03-10-00.123",
        "2026-11-29T03-10-00.1234",
        "2026-11-29T03-10-00.12a",
    ] {
        assert_eq!(parse_timestamp(bad), None, "{bad}");
    }
}

#[test]
fn rotation_by_size_moves_the_log_to_a_timestamped_backup() {
    let dir = TempDir::new();
    let mut log = Rotating::open_file(&dir.join("audit.log"), 10, 0, 0).expect("open");
    log.write_line(b"aaaa\n").expect("write");
    log.write_line(b"bbbb\n")
        .expect("write: exactly the size, no rotation");
    log.flush().expect("flush");
    assert!(dir.backups().is_empty());
    let before = now_ms();
    log.write_line(b"cccc\n").expect("write past the size");
    log.flush().expect("flush");
    let backups = dir.backups();
    assert_eq!(backups.len(), 1, "{:?}", dir.names());
    assert_eq!(dir.read(&backups[0]), "aaaa\nbbbb\n");
    assert_eq!(
        dir.read("audit.log"),
        "cccc\n",
        "the new file holds the next line"
    );
    let stamp = &backups[0]["audit-".len()..backups[0].len() - ".log".len()];
    let at = parse_timestamp(stamp).expect("a timestamp");
    assert!(
        (before - 1000..before + 60_000).contains(&at),
        "{stamp} is the rotation's time"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |name: &str| {
            fs::metadata(dir.join(name))
                .expect("metadata")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("audit.log"), 0o600, "audit logs hold secrets");
        assert_eq!(mode(&backups[0]), 0o600);
    }
}

#[test]
fn a_name_without_extension_gets_the_bare_timestamp() {
    let dir = TempDir::new();
    let mut log = Rotating::open_file(&dir.join("audit"), 4, 0, 0).expect("open");
    log.write_line(b"one\n").expect("write");
    log.write_line(b"two\n").expect("write");
    log.flush().expect("flush");
    let names = dir.names();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(names[0], "audit");
    let stamp = names[1].strip_prefix("audit-").expect("a backup");
    assert!(parse_timestamp(stamp).is_some(), "{}", names[1]);
    assert_eq!(dir.read(&names[1]), "one\n");
    assert_eq!(dir.read("audit"), "two\n");
}

#[test]
fn max_backup_keeps_the_newest() {
    let dir = TempDir::new();
    // Not backups of audit.log: never counted, never deleted.
    fs::write(dir.join("other.txt"), "x").expect("write");
    fs::write(dir.join("audit-latest.log"), "x").expect("write");
    let mut log = Rotating::open_file(&dir.join("audit.log"), 3, 2, 0).expect("open");
    for line in ["l0\n", "l1\n", "l2\n", "l3\n", "l4\n"] {
        log.write_line(line.as_bytes()).expect("write");
    }
    log.flush().expect("flush");
    let backups = dir.backups();
    let contents: Vec<String> = backups.iter().map(|b| dir.read(b)).collect();
    assert_eq!(contents, ["l2\n", "l3\n"], "{backups:?}");
    assert_eq!(dir.read("audit.log"), "l4\n");
    assert_eq!(dir.read("other.txt"), "x");
    assert_eq!(dir.read("audit-latest.log"), "x");
}

#[test]
fn max_age_deletes_backups_by_the_time_in_their_name() {
    let dir = TempDir::new();
    let mut log = Rotating::open_file(&dir.join("audit.log"), 3, 0, 1).expect("open");
    // Written now, named years ago: its name is what counts.
    let old = "audit-2019-01-01T00-00-00.000.log";
    fs::write(dir.join(old), "old\n").expect("write");
    let recent = format!("audit-{}.log", timestamp(now_ms() - DAY_MS / 2));
    fs::write(dir.join(&recent), "recent\n").expect("write");
    log.write_line(b"l0\n").expect("write");
    log.write_line(b"l1\n").expect("write");
    log.flush().expect("flush");
    let backups = dir.backups();
    assert!(!backups.iter().any(|b| b == old), "{backups:?}");
    assert_eq!(
        backups.len(),
        2,
        "half a day old, and the new one: {backups:?}"
    );
    assert!(backups.contains(&recent));
    assert_eq!(dir.read("audit.log"), "l1\n");

    // Pruned at open too.
    drop(log);
    fs::write(dir.join(old), "old\n").expect("write");
    let _log = Rotating::open_file(&dir.join("audit.log"), 3, 0, 1).expect("open");
    assert!(!dir.join(old).exists());
}

#[test]
fn an_existing_log_is_appended_to_and_its_size_counts() {
    let dir = TempDir::new();
    fs::write(dir.join("audit.log"), "old\n").expect("write");
    let mut log = Rotating::open_file(&dir.join("audit.log"), 100, 0, 0).expect("open");
    log.write_line(b"new\n").expect("write");
    log.flush().expect("flush");
    assert_eq!(dir.read("audit.log"), "old\nnew\n");
    drop(log);

    let mut log = Rotating::open_file(&dir.join("audit.log"), 10, 0, 0).expect("open");
    log.write_line(b"next\n").expect("write: 8 + 5 > 10");
    log.flush().expect("flush");
    let backups = dir.backups();
    assert_eq!(backups.len(), 1);
    assert_eq!(dir.read(&backups[0]), "old\nnew\n");
    assert_eq!(dir.read("audit.log"), "next\n");
}

#[test]
fn a_line_longer_than_the_size_gets_a_file_of_its_own() {
    let dir = TempDir::new();
    let mut log = Rotating::open_file(&dir.join("audit.log"), 4, 0, 0).expect("open");
    log.write_line(b"a very long line\n")
        .expect("written to the empty file, not refused");
    log.write_line(b"b\n").expect("write");
    log.write_line(b"another long one\n").expect("write");
    log.flush().expect("flush");
    let contents: Vec<String> = dir.backups().iter().map(|b| dir.read(b)).collect();
    assert_eq!(contents, ["a very long line\n", "b\n"]);
    assert_eq!(dir.read("audit.log"), "another long one\n");
}

#[test]
fn a_zero_size_is_lumberjacks_default() {
    let dir = TempDir::new();
    let log = Rotating::open(&dir.join("audit.log"), 0, 0, 0).expect("open");
    match &log.out {
        Out::File(f) => assert_eq!(f.max_bytes, DEFAULT_MAX_SIZE_MB * MEGABYTE),
        Out::Stdout(_) => panic!("a file"),
    }
    let log = Rotating::open(&dir.join("audit.log"), 7, 0, 0).expect("open");
    match &log.out {
        Out::File(f) => assert_eq!(f.max_bytes, 7 * MEGABYTE),
        Out::Stdout(_) => panic!("a file"),
    }
}

#[test]
fn missing_directories_are_created() {
    let dir = TempDir::new();
    let path = dir.join("a/b/audit.log");
    let mut log = Rotating::open(&path, 1, 0, 0).expect("open");
    log.write_line(b"x\n").expect("write");
    log.flush().expect("flush");
    assert_eq!(dir.read("a/b/audit.log"), "x\n");
}

#[test]
fn a_dash_is_stdout() {
    let mut log = Rotating::open(Path::new("-"), 1, 1, 1).expect("stdout");
    assert!(matches!(log.out, Out::Stdout(_)));
    log.write_line(b"{\"kind\":\"Event\",\"note\":\"the audit log's stdout test\"}\n")
        .expect("write");
    log.flush().expect("flush");
}
