//! The project's paths that `baton.toml` leaves unset, found the way BMad finds them.
//!
//! [`baton_store::locate`] reads the project's BMad config, else the folders BMad versions write
//! to by default, so a v6-alpha project with `docs/sprint-artifacts/sprint-status.yaml` works
//! without any setting. A path the file sets is never looked for, even one an untrusted project
//! may not use (it falls back to baton's default, as the warning says).

pub use crate::raw::PathsSet;
use crate::resolve::Config;
use baton_store::locate::{self, Layout};

impl Config {
    /// Fills each of `paths.sprint_status`, `paths.stories` and `paths.planning` that the file
    /// does not set with what [`locate::locate`] finds in the project. Returns the layout when
    /// it was consulted.
    pub fn locate_unset(&mut self) -> Option<Layout> {
        let set = self.paths_set;
        if set.all() {
            return None;
        }
        let layout = locate::locate(&self.root);
        if !set.sprint_status {
            self.sprint_status = layout
                .sprint_status
                .clone()
                .unwrap_or_else(|| layout.sprint_default.clone());
        }
        if !set.stories {
            self.stories = layout.stories.clone();
        }
        if !set.planning {
            self.planning = layout.planning.clone();
        }
        Some(layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_the_file_sets_is_kept_and_the_others_are_located() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let sprint = root.join("docs/sprint-artifacts/sprint-status.yaml");
        std::fs::create_dir_all(sprint.parent().unwrap()).unwrap();
        std::fs::write(&sprint, "development_status:\n  1-1-a: backlog\n").unwrap();
        std::fs::write(
            root.join(crate::FILE_NAME),
            "[paths]\nplanning = \"plans\"\n",
        )
        .unwrap();
        let mut cfg = Config::load_as(root, true).unwrap();
        assert_eq!(
            cfg.paths_set,
            PathsSet {
                planning: true,
                ..PathsSet::default()
            }
        );
        assert!(cfg.locate_unset().is_some());
        assert_eq!(cfg.sprint_status, sprint);
        assert_eq!(cfg.planning, root.join("plans"));
    }

    #[test]
    fn a_path_an_untrusted_project_may_not_use_falls_back_to_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join(crate::FILE_NAME),
            "[paths]\nsprint_status = \"/etc/sprint.yaml\"\n",
        )
        .unwrap();
        let mut cfg = Config::load_as(root, false).unwrap();
        assert!(cfg.paths_set.sprint_status);
        cfg.locate_unset();
        assert_eq!(cfg.sprint_status, root.join(crate::DEFAULT_SPRINT_STATUS));
    }
}
