//! Reading input files with a size bound: every file baton reads as input (`baton.toml`, agent
//! definitions, story files, frontmatter documents, the sprint file) goes through here, so a file
//! that is a symlink to `/dev/zero`, a FIFO, a device or simply huge ends in a clear error instead
//! of exhausting memory or blocking forever.
//!
//! The path is opened, the *opened* file is checked to be a regular file (so a swap between a
//! check and the open cannot slip a device in), and at most `limit + 1` bytes are read: more
//! than `limit` is an error, even if the metadata claimed the file was small.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

/// The bound for configuration and agent definitions: 1 MiB.
pub const CONFIG_LIMIT: u64 = 1024 * 1024;
/// The bound for documents baton reads and edits (sprint file, story files, frontmatter
/// documents): 64 MiB.
pub const DOCUMENT_LIMIT: u64 = 64 * 1024 * 1024;

/// Reads `path` as bytes, refusing anything but a regular file and more than `limit` bytes.
/// Errors are `io::Error`s whose message says what was wrong (`InvalidInput` for a file that is
/// not regular, `FileTooLarge` for one over the bound); `NotFound` passes through unchanged.
pub fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("larger than {limit} bytes, the most baton reads from such a file"),
        ));
    }
    Ok(bytes)
}

/// Reads `path` as UTF-8 text, with the checks of [`read`].
pub fn read_to_string(path: &Path, limit: u64) -> io::Result<String> {
    let bytes = read(path, limit)?;
    String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Opens `path` for reading and checks that what was opened is a regular file. Opening a FIFO
/// would block until a writer appears, so one is refused from its metadata first.
pub fn open_regular(path: &Path) -> io::Result<fs::File> {
    let meta = fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let file = fs::File::open(path)?;
    let opened = file.metadata()?;
    if !opened.is_file() {
        return Err(not_regular(&opened));
    }
    Ok(file)
}

fn not_regular(meta: &fs::Metadata) -> io::Error {
    let what = if meta.is_dir() {
        "a directory"
    } else {
        "not a regular file (a device, FIFO or socket)"
    };
    io::Error::new(io::ErrorKind::InvalidInput, format!("is {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_within_the_bound_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        fs::write(&p, "abc").unwrap();
        assert_eq!(read_to_string(&p, 3).unwrap(), "abc");
        let err = read_to_string(&p, 2).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("larger than 2 bytes"), "{err}");
    }

    #[test]
    fn devices_fifos_directories_and_links_to_them_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let null = dir.path().join("null.md");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        let sub = dir.path().join("sub.md");
        fs::create_dir(&sub).unwrap();
        let fifo = dir.path().join("fifo.md");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        let mut paths = vec![zero, null, sub];
        if made.is_ok_and(|s| s.success()) {
            paths.push(fifo);
        }
        for p in paths {
            let err = read(&p, CONFIG_LIMIT).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{}", p.display());
        }
        let missing = read(&dir.path().join("missing"), 1).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_link_to_a_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::write(&real, "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(read_to_string(&link, 10).unwrap(), "x");
    }
}
