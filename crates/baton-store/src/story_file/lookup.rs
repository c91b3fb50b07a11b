//! Finding a story's file without listing the stories folder on every step.
//!
//! [`super::find`] lists the stories folder and its subfolders each time it is asked for a story
//! that has no file directly in the folder, and a sprint asks on every status change of such a
//! story: with thousands of story files in the folder, that listing is most of a step's CPU.
//! [`StoryIndex`] gives the same answer as `find` at the cost of a few `stat`s. It remembers only
//! each folder's subfolders, never files: the candidate file (`dir/{key}.md`, then the same name
//! in each subfolder, level by level) is looked at on every lookup, so a file added, removed or
//! moved between two lookups is seen at once. A folder's remembered subfolders are used while the
//! folder's identity (device, inode, link count, mtime, ctime) is the one it had when it was
//! listed, which any entry added, removed or renamed in it changes; and a folder whose link
//! count says it has no subfolders (2, on file systems that count them: ext2/3/4, XFS, tmpfs) is
//! not listed at all, so baton's own rewrites of story files, which change the folder's mtime,
//! cost no listing in BMad's usual flat layout.
//!
//! Timestamps have a granularity (a clock tick), so a change made in the same tick as a listing
//! could leave the folder's mtime as it was listed. A listing is therefore remembered only when
//! the folder's mtime was at least [`SETTLED`] older than the moment before it was listed (the
//! rule git uses for its index): any later change then gets a newer mtime.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

/// How old a folder's mtime must be for its listing to be remembered.
const SETTLED: Duration = Duration::from_secs(2);

/// How many folders' listings are remembered before they are all forgotten (a bound for a
/// process that looks in many projects).
const MAX_FOLDERS: usize = 256;

/// A folder's identity: anything added, removed or renamed in it changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    nlink: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            nlink: meta.nlink(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

#[derive(Debug)]
struct Listing {
    stamp: Stamp,
    subdirs: Vec<PathBuf>,
}

#[derive(Debug, Default)]
struct Cache {
    listings: HashMap<PathBuf, Listing>,
    /// Per device: whether a folder's link count is 2 + its number of subfolders.
    counts_links: HashMap<u64, bool>,
    /// Folders listed (tests count them).
    reads: usize,
}

/// Finds story files like [`super::find`], remembering folders' subfolders between lookups (see
/// the module documentation). Shareable between threads; [`StoryIndex::shared`] is the
/// process's own.
#[derive(Debug, Default)]
pub struct StoryIndex {
    cache: Mutex<Cache>,
}

impl StoryIndex {
    /// An empty index.
    pub fn new() -> StoryIndex {
        StoryIndex::default()
    }

    /// The process-wide index that [`find_indexed`] and the ledger use.
    pub fn shared() -> &'static StoryIndex {
        static SHARED: OnceLock<StoryIndex> = OnceLock::new();
        SHARED.get_or_init(StoryIndex::new)
    }

    /// The story file of `key` in `dir`: the same answer as [`super::find`].
    pub fn find(&self, dir: &Path, key: &str) -> Option<PathBuf> {
        let name = format!("{key}.md");
        let direct = dir.join(&name);
        if direct.is_file() {
            return Some(direct);
        }
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let mut level = vec![dir.to_path_buf()];
        for _ in 0..3 {
            let mut next = Vec::new();
            for d in &level {
                next.extend(cache.subdirs(d));
            }
            if let Some(found) = next.iter().map(|d| d.join(&name)).find(|c| c.is_file()) {
                return Some(found);
            }
            level = next;
        }
        None
    }

    /// How many folders this index has listed.
    #[cfg(test)]
    fn reads(&self) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reads
    }
}

/// The story file of `key` in `dir` (as [`super::find`]) through the process-wide
/// [`StoryIndex`]: a few `stat`s instead of a listing of the stories folder.
pub fn find_indexed(dir: &Path, key: &str) -> Option<PathBuf> {
    StoryIndex::shared().find(dir, key)
}

impl Cache {
    /// The subfolders of `dir` that [`super::find`] descends into (not hidden, sorted).
    fn subdirs(&mut self, dir: &Path) -> Vec<PathBuf> {
        let before = SystemTime::now();
        let Ok(meta) = fs::metadata(dir) else {
            self.listings.remove(dir);
            return Vec::new();
        };
        let stamp = Stamp::of(&meta);
        if let Some(listing) = self.listings.get(dir)
            && listing.stamp == stamp
        {
            return listing.subdirs.clone();
        }
        if stamp.nlink == 2 && self.counts_links(dir, stamp.dev) {
            self.listings.remove(dir);
            return Vec::new();
        }
        self.reads += 1;
        let Ok(read) = fs::read_dir(dir) else {
            self.listings.remove(dir);
            return Vec::new();
        };
        let mut subdirs: Vec<PathBuf> = read
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .collect();
        subdirs.sort();
        let settled = meta
            .modified()
            .ok()
            .and_then(|m| before.duration_since(m).ok())
            .is_some_and(|age| age >= SETTLED);
        if settled {
            if self.listings.len() >= MAX_FOLDERS {
                self.listings.clear();
            }
            self.listings.insert(
                dir.to_path_buf(),
                Listing {
                    stamp,
                    subdirs: subdirs.clone(),
                },
            );
        } else {
            self.listings.remove(dir);
        }
        subdirs
    }

    /// Whether folders on `dir`'s device have a link count of 2 plus their number of subfolders.
    fn counts_links(&mut self, dir: &Path, dev: u64) -> bool {
        if let Some(&known) = self.counts_links.get(&dev) {
            return known;
        }
        let known = link_counting_fs(dir);
        self.counts_links.insert(dev, known);
        known
    }
}

/// Whether `dir` is on a file system known to count a folder's subfolders in its link count.
#[cfg(target_os = "linux")]
fn link_counting_fs(dir: &Path) -> bool {
    const EXT: i128 = 0xEF53;
    const XFS: i128 = 0x5846_5342;
    const TMPFS: i128 = 0x0102_1994;
    rustix::fs::statfs(dir).is_ok_and(|s| [EXT, XFS, TMPFS].contains(&i128::from(s.f_type)))
}

/// Elsewhere, no file system is assumed to.
#[cfg(not(target_os = "linux"))]
fn link_counting_fs(_dir: &Path) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets `dir`'s mtime a minute back, as a folder nobody wrote lately.
    fn age(dir: &Path) {
        let old = SystemTime::now() - Duration::from_secs(60);
        fs::File::open(dir).unwrap().set_modified(old).unwrap();
    }

    fn tree() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for d in [
            "epic-1",
            "epic-2/stories",
            "epic-2/stories/deep/deeper",
            ".hidden",
        ] {
            fs::create_dir_all(r.join(d)).unwrap();
        }
        fs::write(r.join("1-1-top.md"), "Status: done\n").unwrap();
        fs::write(r.join("epic-1/1-2-one.md"), "Status: done\n").unwrap();
        fs::write(r.join("epic-2/stories/2-1-two.md"), "Status: done\n").unwrap();
        fs::write(r.join("epic-2/stories/deep/2-2-deep.md"), "x").unwrap();
        fs::write(r.join("epic-2/stories/deep/deeper/2-3-too-deep.md"), "x").unwrap();
        fs::write(r.join(".hidden/2-4-hidden.md"), "x").unwrap();
        fs::create_dir_all(r.join("epic-1/2-5-a-folder.md")).unwrap();
        root
    }

    const KEYS: [&str; 7] = [
        "1-1-top",
        "1-2-one",
        "2-1-two",
        "2-2-deep",
        "2-3-too-deep",
        "2-4-hidden",
        "2-5-a-folder",
    ];

    #[test]
    fn answers_as_find_does() {
        let root = tree();
        let index = StoryIndex::new();
        for _ in 0..2 {
            for key in KEYS {
                assert_eq!(
                    index.find(root.path(), key),
                    super::super::find(root.path(), key),
                    "{key}"
                );
            }
        }
        assert_eq!(
            index.find(root.path(), "2-2-deep"),
            Some(root.path().join("epic-2/stories/deep/2-2-deep.md"))
        );
        assert_eq!(index.find(root.path(), "2-3-too-deep"), None);
        assert_eq!(index.find(&root.path().join("missing"), "1-1-top"), None);
    }

    /// Walks every folder `find` descends into, to age them all.
    fn age_all(root: &Path) {
        for d in [
            "",
            "epic-1",
            "epic-2",
            "epic-2/stories",
            "epic-2/stories/deep",
        ] {
            age(&root.join(d));
        }
    }

    #[test]
    fn a_settled_tree_is_not_listed_again() {
        let root = tree();
        age_all(root.path());
        let index = StoryIndex::new();
        assert_eq!(index.find(root.path(), "9-9-none"), None);
        let first = index.reads();
        assert_eq!(index.find(root.path(), "9-9-none"), None);
        assert!(index.find(root.path(), "2-2-deep").is_some());
        assert_eq!(index.reads(), first, "nothing listed again");
    }

    #[test]
    fn files_added_or_moved_between_lookups_are_found() {
        let root = tree();
        let r = root.path();
        age_all(r);
        let index = StoryIndex::new();
        assert_eq!(index.find(r, "3-1-new"), None);
        // Added to a folder that was listed: the candidate is looked at every time.
        fs::write(r.join("epic-1/3-1-new.md"), "x").unwrap();
        assert_eq!(index.find(r, "3-1-new"), Some(r.join("epic-1/3-1-new.md")));
        // Moved to another folder.
        fs::rename(r.join("epic-1/3-1-new.md"), r.join("epic-2/3-1-new.md")).unwrap();
        assert_eq!(index.find(r, "3-1-new"), Some(r.join("epic-2/3-1-new.md")));
        // Moved into a folder made after the listing, under a settled parent.
        age(&r.join("epic-2"));
        assert_eq!(index.find(r, "3-1-new"), Some(r.join("epic-2/3-1-new.md")));
        fs::create_dir(r.join("epic-3")).unwrap();
        fs::rename(r.join("epic-2/3-1-new.md"), r.join("epic-3/3-1-new.md")).unwrap();
        assert_eq!(index.find(r, "3-1-new"), Some(r.join("epic-3/3-1-new.md")));
        // A folder renamed: its new name is listed.
        age(r);
        assert!(index.find(r, "3-1-new").is_some());
        fs::rename(r.join("epic-3"), r.join("epic-0")).unwrap();
        assert_eq!(index.find(r, "3-1-new"), Some(r.join("epic-0/3-1-new.md")));
        // Removed.
        fs::remove_file(r.join("epic-0/3-1-new.md")).unwrap();
        assert_eq!(index.find(r, "3-1-new"), None);
    }

    #[test]
    fn a_folder_changed_lately_is_listed_again() {
        let root = tree();
        let index = StoryIndex::new();
        assert_eq!(index.find(root.path(), "9-9-none"), None);
        let first = index.reads();
        assert_eq!(index.find(root.path(), "9-9-none"), None);
        assert!(
            index.reads() > first,
            "a folder written in the last {SETTLED:?} may change within its mtime's tick"
        );
    }

    #[test]
    fn a_flat_folder_is_not_listed_where_links_count_folders() {
        let root = tempfile::tempdir().unwrap();
        for i in 0..50 {
            fs::write(root.path().join(format!("1-{i}-s.md")), "x").unwrap();
        }
        let index = StoryIndex::new();
        assert_eq!(
            index.find(root.path(), "1-3-s"),
            Some(root.path().join("1-3-s.md"))
        );
        assert_eq!(index.find(root.path(), "1-99-none"), None);
        if link_counting_fs(root.path()) {
            assert_eq!(index.reads(), 0, "no subfolder, so nothing to list");
        } else {
            assert_eq!(index.reads(), 1);
        }
        // A subfolder made since is found.
        fs::create_dir(root.path().join("epic-1")).unwrap();
        fs::write(root.path().join("epic-1/1-99-none.md"), "x").unwrap();
        assert_eq!(
            index.find(root.path(), "1-99-none"),
            Some(root.path().join("epic-1/1-99-none.md"))
        );
    }
}
