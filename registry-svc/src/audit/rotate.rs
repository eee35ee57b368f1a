//! The audit log's file (`--audit-log-path`), rotated as kube-apiserver's is: upstream hands the
//! path and `--audit-log-maxsize`, `--audit-log-maxbackup`, `--audit-log-maxage` to
//! lumberjack (`gopkg.in/natefinch/lumberjack.v2`), and this file does what it does, so that
//! the log shippers and clean-up scripts written for kube-apiserver's backups find ours:
//!
//! - A write that would take the file past its size moves it aside first, to
//!   `NAME-TIMESTAMP.EXT` in the same directory (`audit.log` becomes
//!   `audit-2026-11-29T03-10-00.123.log`; a name with no extension just gets the suffix),
//!   the timestamp the rotation's time in UTC with milliseconds, and a new file is started
//!   under the original name.
//! - After a rotation, backups (the files of the directory named `NAME-TIMESTAMP.EXT`; any
//!   other file is left alone) older than the maximum age, by the timestamp in their name,
//!   are deleted, then all but the newest maximum count.
//! - An existing log is appended to, its size counting towards the limit.
//! - `-` is stdout, never rotated.
//!
//! Where we differ, deliberately:
//!
//! - A line longer than the size limit is written (to a file of its own) rather than refused
//!   as lumberjack refuses it: an audit event is worth more than the limit's exactness.
//! - Two rotations in one millisecond (or a backup name already taken) never overwrite a
//!   backup: the later takes the next free millisecond, so names stay unique and ordered.
//! - A file that appears under the log's name during a rotation is appended to, never
//!   truncated, and a failed deletion of an old backup is logged (lumberjack drops its error).
//! - The directory is pruned once at open as well, as lumberjack does at its first write.
//!
//! Audit events hold request bodies (Secrets at `Request` level and up), so a log is created
//! with mode 0600 and its directory with 0700, as upstream's `ensureLogFile`; a rotation keeps
//! the mode the log had, as lumberjack does, so an administrator's choice (a group allowed to
//! read for a log shipper) survives it.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, BufWriter, Stdout, Write},
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

/// Lumberjack's default size, in megabytes, when none is given (see [`Rotating::open`]).
pub const DEFAULT_MAX_SIZE_MB: u64 = 100;

/// A megabyte, as lumberjack counts it.
const MEGABYTE: u64 = 1024 * 1024;

/// A day in milliseconds (lumberjack's day is 24 hours, whatever the calendar says).
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// The mode of a new log: only its owner may read what it holds.
#[cfg(unix)]
const LOG_MODE: u32 = 0o600;

/// Where audit lines go: stdout (`-`) or a file rotated by size, age and count.
#[derive(Debug)]
pub struct Rotating {
    out: Out,
}

/// The two kinds of output.
#[derive(Debug)]
enum Out {
    Stdout(BufWriter<Stdout>),
    File(LogFile),
}

/// A rotated log file and its backups' rules.
#[derive(Debug)]
struct LogFile {
    /// The log's path, the name it always has while written.
    path: PathBuf,
    /// Its directory, where the backups are.
    dir: PathBuf,
    /// A backup's name before its timestamp: the log's name less its extension, and `-`.
    prefix: String,
    /// A backup's name after its timestamp: the log's extension (with its dot), or "".
    ext: String,
    /// The open file; None after a rotation failed half-way (the next write reopens it).
    writer: Option<BufWriter<File>>,
    /// Bytes in the file, counting those still buffered.
    size: u64,
    /// The size past which it is rotated.
    max_bytes: u64,
    /// Backups kept (0: all).
    max_backup: usize,
    /// Days a backup is kept (0: forever).
    max_age_days: u64,
    /// The newest backup's timestamp, so that the next one's is later.
    last_backup_ms: i64,
}

impl Rotating {
    /// The log at `path`, `-` being stdout. `max_size_mb` is the size at which it is rotated;
    /// 0 is lumberjack's default of [`DEFAULT_MAX_SIZE_MB`], as kube-apiserver's
    /// `--audit-log-maxsize=0` (its default) gives lumberjack a 0 that lumberjack reads as its
    /// default: rotating at 100 MB is what kube-apiserver does, and a log that grows without
    /// bound until the disk is full is the worse surprise. `max_backup` 0 keeps every backup;
    /// `max_age_days` 0 keeps backups whatever their age.
    pub fn open(
        path: &Path,
        max_size_mb: u64,
        max_backup: usize,
        max_age_days: u64,
    ) -> io::Result<Rotating> {
        if path == Path::new("-") {
            return Ok(Rotating {
                out: Out::Stdout(BufWriter::new(io::stdout())),
            });
        }
        let mb = if max_size_mb == 0 {
            DEFAULT_MAX_SIZE_MB
        } else {
            max_size_mb
        };
        Self::open_file(path, mb.saturating_mul(MEGABYTE), max_backup, max_age_days)
    }

    /// The log at `path` rotated past `max_bytes` (tests give a few bytes).
    fn open_file(
        path: &Path,
        max_bytes: u64,
        max_backup: usize,
        max_age_days: u64,
    ) -> io::Result<Rotating> {
        let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the audit log's path must end in a file name, in UTF-8",
            )
        })?;
        // Go's `filepath.Ext`: from the last dot of the name ("" without one).
        let (stem, ext) = match name.rfind('.') {
            Some(dot) => name.split_at(dot),
            None => (name, ""),
        };
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        create_dir(&dir)?;
        let mut log = LogFile {
            path: path.to_path_buf(),
            dir,
            prefix: format!("{stem}-"),
            ext: ext.to_string(),
            writer: None,
            size: 0,
            max_bytes,
            max_backup,
            max_age_days,
            last_backup_ms: 0,
        };
        log.open_append()?;
        log.prune(now_ms());
        Ok(Rotating {
            out: Out::File(log),
        })
    }

    /// Writes `line` (a complete line, its `\n` included), rotating first when it would take
    /// the file past its size. Nothing is flushed: the caller flushes once per batch.
    pub fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        match &mut self.out {
            Out::Stdout(out) => out.write_all(line),
            Out::File(log) => log.write_line(line),
        }
    }

    /// Flushes buffered output.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Out::Stdout(out) => out.flush(),
            Out::File(log) => log.writer.as_mut().map_or(Ok(()), Write::flush),
        }
    }
}

impl LogFile {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.writer.is_none() {
            self.open_append()?;
        }
        let len = line.len() as u64;
        // A file that already holds something is rotated before the line would take it past
        // its size; an empty one takes even a line longer than the size (see the module doc).
        if self.size > 0 && self.size.saturating_add(len) > self.max_bytes {
            self.rotate()?;
        }
        let Some(writer) = self.writer.as_mut() else {
            return Err(io::Error::other("the audit log is not open"));
        };
        let written = writer.write_all(line);
        // Counted even when the write failed: some of it may be in the file, and counting
        // too much only rotates early.
        self.size = self.size.saturating_add(len);
        written
    }

    /// Opens the log for appending (creating it), its size what it holds.
    fn open_append(&mut self) -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(LOG_MODE);
        }
        self.open_with(&options)
    }

    fn open_with(&mut self, options: &OpenOptions) -> io::Result<()> {
        let file = options.open(&self.path)?;
        self.size = file.metadata()?.len();
        self.writer = Some(BufWriter::new(file));
        Ok(())
    }

    /// Moves the log aside to a backup, starts a new one, and prunes the backups.
    fn rotate(&mut self) -> io::Result<()> {
        if let Some(mut writer) = self.writer.take() {
            // What is buffered belongs to the file being moved aside.
            if let Err(e) = writer.flush() {
                self.writer = Some(writer);
                return Err(e);
            }
        }
        let now = now_ms();
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        // `metadata`, not `symlink_metadata`: a log that is a link has its target's mode.
        match fs::metadata(&self.path) {
            Ok(meta) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
                    options.mode(meta.permissions().mode() & 0o777);
                }
                #[cfg(not(unix))]
                let _ = meta;
                let backup = self.backup_path(now)?;
                fs::rename(&self.path, &backup)?;
            }
            // Removed under us: there is nothing to move aside.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    options.mode(LOG_MODE);
                }
            }
            Err(e) => return Err(e),
        }
        self.open_with(&options)?;
        self.prune(now);
        Ok(())
    }

    /// A free backup name for a rotation at `now_ms`, later than the last one's.
    fn backup_path(&mut self, now_ms: i64) -> io::Result<PathBuf> {
        let mut ms = now_ms.max(self.last_backup_ms.saturating_add(1));
        // Bounded: a directory would need this many backups in a row to exhaust it.
        for _ in 0..10_000 {
            let path = self
                .dir
                .join(format!("{}{}{}", self.prefix, timestamp(ms), self.ext));
            if fs::symlink_metadata(&path).is_err() {
                self.last_backup_ms = ms;
                return Ok(path);
            }
            ms = ms.saturating_add(1);
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("no free backup name for {}", self.path.display()),
        ))
    }

    /// The time in a backup's file name, in milliseconds since the epoch; None for any other
    /// file (lumberjack's `timeFromName`).
    fn backup_time(&self, name: &str) -> Option<i64> {
        parse_timestamp(name.strip_prefix(&self.prefix)?.strip_suffix(&self.ext)?)
    }

    /// Deletes the backups older than the maximum age, then all but the newest maximum count
    /// (lumberjack's `millRunOnce`). Failures are logged: the line was written, and a backup
    /// that could not be deleted is tried again at the next rotation.
    fn prune(&self, now_ms: i64) {
        if self.max_backup == 0 && self.max_age_days == 0 {
            return;
        }
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot list the audit log's backups");
                return;
            }
        };
        let mut backups: Vec<(i64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
            .filter_map(|e| {
                let time = self.backup_time(e.file_name().to_str()?)?;
                Some((time, e.path()))
            })
            .collect();
        // Newest first.
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let mut doomed = Vec::new();
        if self.max_age_days > 0 {
            let days = i64::try_from(self.max_age_days).unwrap_or(i64::MAX);
            let cutoff = now_ms.saturating_sub(days.saturating_mul(DAY_MS));
            let kept = backups.iter().take_while(|(t, _)| *t >= cutoff).count();
            doomed.extend(backups.drain(kept..));
        }
        if self.max_backup > 0 && backups.len() > self.max_backup {
            doomed.extend(backups.drain(self.max_backup..));
        }
        for (_, path) in doomed {
            if let Err(e) = fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot delete an old audit log backup");
            }
        }
    }
}

/// Creates `dir` and its parents, each new one with mode 0700 on Unix.
fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Now, in milliseconds since the epoch.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `ms` since the epoch in lumberjack's backup format, UTC: `2006-01-02T15-04-05.000`.
fn timestamp(ms: i64) -> String {
    let (seconds, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    // `2006-01-02T15:04:05Z` with the colons made dashes (a colon is no file name's on
    // Windows) and the milliseconds after.
    let rfc3339 = kubestore_apimachinery::time::format(seconds, 0);
    let base = rfc3339.trim_end_matches('Z').replace(':', "-");
    format!("{base}.{millis:03}")
}

/// The milliseconds since the epoch of a [`timestamp`], which must have exactly its shape (as
/// Go's `time.Parse` of the layout wants).
fn parse_timestamp(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 23 {
        return None;
    }
    let shaped = b.iter().enumerate().all(|(i, c)| match i {
        4 | 7 | 13 | 16 => *c == b'-',
        10 => *c == b'T',
        19 => *c == b'.',
        _ => c.is_ascii_digit(),
    });
    if !shaped {
        return None;
    }
    // Back to RFC 3339, whose parser checks the ranges (month 13, hour 25).
    let rfc3339 = format!("{}:{}:{}Z", &text[..13], &text[14..16], &text[17..]);
    let (seconds, nanos) = kubestore_apimachinery::time::parse(&rfc3339)?;
    Some(seconds.saturating_mul(1000) + i64::from(nanos / 1_000_000))
}

#[cfg(test)]
#[path = "rotate_tests.rs"]
mod tests;
