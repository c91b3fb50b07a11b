//! Process groups: the children baton starts on a project's code run in a group of their own, so
//! a terminal's Ctrl-C reaches baton (which decides what it means) and a timeout or cancellation
//! kills the whole tree a command spawned, not just its first process.

use std::process::Stdio;

/// Kills the process group a child leads (Unix) when armed: on timeout, on cancellation, and when
/// dropped before the child was reaped. Disarm it once the child has exited and its output is
/// drained, so an unrelated group that reused the id is never signalled.
#[derive(Debug)]
pub struct GroupKiller {
    pgid: Option<u32>,
    armed: bool,
}

impl GroupKiller {
    /// A killer for the group led by `pgid` (a child spawned with `process_group(0)`).
    pub fn new(pgid: Option<u32>) -> GroupKiller {
        GroupKiller {
            pgid,
            armed: cfg!(unix),
        }
    }

    /// Stops watching: the group is gone.
    pub fn disarm(&mut self) {
        self.armed = false;
    }

    /// Sends SIGTERM to the whole group, asking it to stop; stays armed so a SIGKILL can follow
    /// after a grace period.
    pub fn terminate(&self) {
        if self.armed {
            self.signal("TERM");
        }
    }

    #[cfg_attr(not(unix), allow(unused_variables))]
    fn signal(&self, name: &str) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            // No libc here (and no unsafe): `kill(1)` signals the whole group. It returns at once.
            let _ = std::process::Command::new("kill")
                .args(["-s", name, "--", &format!("-{pgid}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Sends SIGKILL to the whole group, once.
    pub fn kill(&mut self) {
        if !self.armed {
            return;
        }
        self.signal("KILL");
        self.armed = false;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}
