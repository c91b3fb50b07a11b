//! A hand editor saving the sprint file over and over while `baton set` runs again and again:
//! no hand edit may be lost. The editor saves as editors do (write a copy, rename it over the
//! file), each save keeping what it read and adding one numbered comment line; a hand edit is
//! lost exactly when baton replaces the file with a version read before that save.

use super::common::{Project, sprint};
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

const STORIES: usize = 6;
const SETS: usize = 40;

fn story(n: usize) -> String {
    format!("1-{n}-story-{n}")
}

/// One save: read, add `# hand edit N`, write a copy, rename it over the file. Returns false if
/// the file could not be read (it never is missing: every writer renames).
fn save(path: &Path, n: usize) -> bool {
    let Ok(text) = fs::read_to_string(path) else {
        return false;
    };
    let tmp = path.with_extension(format!("yaml.hand-{n}"));
    let edited = format!("{text}# hand edit {n}\n");
    fs::write(&tmp, edited).expect("write the editor's copy");
    fs::rename(&tmp, path).expect("rename the editor's copy");
    true
}

#[test]
fn a_concurrent_hand_editor_loses_no_edit_to_baton_set() {
    let mut body = String::from("  epic-1: in-progress\n");
    for n in 1..=STORIES {
        body.push_str(&format!("  {}: ready-for-dev\n", story(n)));
    }
    let p = Project::with_sprint(&sprint(&body));
    let path = p.sprint_path();
    let stop = Arc::new(AtomicBool::new(false));
    let editor = {
        let stop = stop.clone();
        let path = path.clone();
        std::thread::spawn(move || {
            let mut saved = 0;
            while !stop.load(Ordering::Relaxed) {
                if save(&path, saved + 1) {
                    saved += 1;
                }
                // A very fast hand: a save every 1 to 19 ms (a real one is far slower), at
                // irregular intervals so saves land at every point of baton's write.
                let pause = 1 + (saved as u64 * 7) % 19;
                std::thread::sleep(std::time::Duration::from_millis(pause));
            }
            saved
        })
    };
    let mut ok = 0;
    let mut failures = Vec::new();
    for i in 0..SETS {
        let key = story(i % STORIES + 1);
        let to = if (i / STORIES).is_multiple_of(2) {
            "in-progress"
        } else {
            "ready-for-dev"
        };
        let run = p.run(&["set", &key, to, "--force", "--note", &format!("set {i}")]);
        if run.code == Some(0) {
            ok += 1;
        } else {
            failures.push(run.describe());
        }
    }
    stop.store(true, Ordering::Relaxed);
    let saved = editor.join().expect("the editor thread");
    let text = p.read_sprint();
    let lost: Vec<usize> = (1..=saved)
        .filter(|n| !text.contains(&format!("# hand edit {n}\n")))
        .collect();
    assert!(saved > 0, "the editor never saved");
    assert!(
        lost.is_empty(),
        "{} of {saved} hand edits lost ({ok} `baton set` succeeded): {:?}",
        lost.len(),
        &lost[..lost.len().min(20)]
    );
    // Every `baton set` either wrote or gave up with the contention message, never anything
    // else, and most of them got through.
    for f in &failures {
        assert!(f.contains("kept changing"), "{f}");
    }
    assert!(ok > 0, "no `baton set` got through: {failures:?}");
}
