//! tally: counts words and lines in text.
