//! Where the entries of an edited sprint file have moved, without rewriting every span.
//!
//! An edit that lengthens or shortens one line moves every later byte. Instead of adding the
//! growth to the spans of all the entries after it (a pass over the whole sprint on every
//! edit), [`Shifts`] records it in a Fenwick tree over entry positions: adding a growth from an
//! entry onwards and reading the total growth that applies to one entry both cost `O(log n)`.
//! An entry's true byte offsets are its scanned offsets plus [`Shifts::at`] its position.

/// Accumulated byte growth per entry position (a Fenwick tree; empty until the first edit).
#[derive(Debug, Clone, Default)]
pub(crate) struct Shifts {
    /// 1-based tree over `len` entries (`tree[0]` unused); empty while no growth was recorded.
    tree: Vec<isize>,
}

impl Shifts {
    /// Adds `delta` bytes to the offsets of entries `from..len`.
    pub(crate) fn add_from(&mut self, len: usize, from: usize, delta: isize) {
        if delta == 0 || from >= len {
            return;
        }
        if self.tree.len() != len + 1 {
            self.tree = vec![0; len + 1];
        }
        let mut i = from + 1;
        while let Some(slot) = self.tree.get_mut(i) {
            *slot += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// The total growth recorded for the entry at `pos`.
    pub(crate) fn at(&self, pos: usize) -> isize {
        let mut i = (pos + 1).min(self.tree.len().saturating_sub(1));
        let mut sum = 0;
        while i > 0 {
            sum += self.tree.get(i).copied().unwrap_or(0);
            i &= i - 1;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_applies_from_its_entry_onwards_and_adds_up() {
        let mut s = Shifts::default();
        assert_eq!(s.at(3), 0, "nothing recorded yet");
        s.add_from(10, 4, 5);
        s.add_from(10, 2, -3);
        s.add_from(10, 9, 7);
        s.add_from(10, 10, 100); // past the end: ignored
        let got: Vec<isize> = (0..10).map(|i| s.at(i)).collect();
        assert_eq!(got, [0, 0, -3, -3, 2, 2, 2, 2, 2, 9]);
        // Matches the naive sum for every prefix of a longer random-ish sequence.
        let mut naive = vec![0isize; 37];
        let mut s = Shifts::default();
        for k in 0..200usize {
            let from = (k * 7919) % 37;
            let delta = (k as isize % 11) - 5;
            s.add_from(37, from, delta);
            for v in &mut naive[from..] {
                *v += delta;
            }
        }
        for (i, want) in naive.iter().enumerate() {
            assert_eq!(s.at(i), *want, "entry {i}");
        }
    }
}
