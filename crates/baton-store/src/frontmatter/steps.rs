//! `stepsCompleted`, the step-file progress of BMad planning documents (BMAD-FORMAT.md §4 and
//! R8): [`StepRef`] (a step number or a step-file name, the two dialects), reading the list and
//! appending a step in place, in the list's own style and quoting.

use std::fmt;

use serde::Serialize;
use serde::de::{self, Deserializer, Visitor};

use super::edit::Style;
use super::layout::{Expect, verify};
use super::lines::{comment_start, key_colon, strip_eol};
use super::yaml::{AnyValue, yaml_options};
use super::{Document, FrontmatterError, STEPS_COMPLETED};

/// One entry of `stepsCompleted`: a step number or a step-file name (the two dialects of §4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StepRef {
    /// A step number, as in `stepsCompleted: [1, 2, 3]`.
    Int(u32),
    /// A step-file name, as in `stepsCompleted: ["step-01-init.md"]`.
    Name(String),
}

impl fmt::Display for StepRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepRef::Int(n) => write!(f, "{n}"),
            StepRef::Name(s) => f.write_str(s),
        }
    }
}

impl From<u32> for StepRef {
    fn from(n: u32) -> Self {
        StepRef::Int(n)
    }
}

impl From<&str> for StepRef {
    fn from(s: &str) -> Self {
        StepRef::Name(s.to_owned())
    }
}

impl From<String> for StepRef {
    fn from(s: String) -> Self {
        StepRef::Name(s)
    }
}

impl Serialize for StepRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StepRef::Int(n) => serializer.serialize_u32(*n),
            StepRef::Name(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> de::Deserialize<'de> for StepRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StepRef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a step number or a step file name")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<StepRef, E> {
                u32::try_from(v)
                    .map(StepRef::Int)
                    .map_err(|_| E::custom(format!("step number {v} is too large")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<StepRef, E> {
                u32::try_from(v)
                    .map(StepRef::Int)
                    .map_err(|_| E::custom(format!("step number {v} is out of range")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<StepRef, E> {
                if v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v) {
                    // Checked above: integral and in range.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    Ok(StepRef::Int(v as u32))
                } else {
                    Err(E::custom(format!("{v} is not a step number")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepRef, E> {
                Ok(StepRef::Name(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<StepRef, E> {
                Ok(StepRef::Name(v))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl Document {
    /// The `stepsCompleted` list (empty when absent or null), in either dialect.
    pub fn steps_completed(&self) -> Result<Vec<StepRef>, FrontmatterError> {
        Ok(self
            .get::<Option<Vec<StepRef>>>(STEPS_COMPLETED)?
            .flatten()
            .unwrap_or_default())
    }

    /// Appends `step` to `stepsCompleted` unless it is already there; returns whether it changed.
    ///
    /// Lists may mix step numbers and step-file names (BMad writes both), so any step is
    /// accepted. The list keeps its style: a one-line flow list (`[1, 'step-02.md']`) or a block
    /// list (`- …` lines) gets the new item appended in place, quoted the way its other names
    /// are quoted, and nothing else in the frontmatter changes. Other layouts are rewritten
    /// whole by [`Document::set`]'s rules. A missing key is created in flow style
    /// (`stepsCompleted: [1]`), as BMad templates write it.
    pub fn push_step_completed(
        &mut self,
        step: impl Into<StepRef>,
    ) -> Result<bool, FrontmatterError> {
        let step = step.into();
        let mut steps = self.steps_completed()?;
        if steps.contains(&step) {
            return Ok(false);
        }
        steps.push(step.clone());
        if self.append_step_in_place(&step, &steps)? {
            return Ok(true);
        }
        self.set_styled(STEPS_COMPLETED, &steps, Style::FlowIfNew)?;
        Ok(true)
    }

    /// Appends `step` to an existing one-line flow or block `stepsCompleted` list by inserting
    /// text; returns false (nothing changed) when the list has another layout or the result
    /// would not read back as `steps`.
    fn append_step_in_place(
        &mut self,
        step: &StepRef,
        steps: &[StepRef],
    ) -> Result<bool, FrontmatterError> {
        let key = STEPS_COMPLETED;
        let Some(idx) = self.keys.iter().position(|k| k.name == key) else {
            return Ok(false);
        };
        let Ok(range) = self.block(idx, key) else {
            return Ok(false);
        };
        let yaml = self.frontmatter().unwrap_or_default().to_owned();
        let block = &yaml[range.clone()];
        let eol = self.eol();
        let first = strip_eol(block.lines().next().unwrap_or_default());
        let Some(colon) = key_colon(first) else {
            return Ok(false);
        };
        let value_part = &first[colon + 1..];
        let value = match comment_start(value_part) {
            Some(c) => &value_part[..c],
            None => value_part,
        };
        let quote = quote_style(block);
        let item = render_step(step, quote);
        let trimmed = value.trim();
        let new_block = if trimmed.starts_with('[') && trimmed.ends_with(']') {
            // One-line flow list: insert before the closing bracket.
            let close = range.start + colon + 1 + value.rfind(']').unwrap_or(0);
            let inner = trimmed[1..trimmed.len() - 1].trim();
            let before = &yaml[range.start..close];
            let sep = if inner.is_empty() {
                ""
            } else if inner.contains(", ") || !inner.contains(',') {
                ", "
            } else {
                ","
            };
            let before = if inner.is_empty() {
                before.to_owned()
            } else {
                before.trim_end().to_owned()
            };
            format!("{before}{sep}{item}{}", &yaml[close..range.end])
        } else if trimmed.is_empty() {
            // Block list: copy the last item's indentation and dash.
            let lines: Vec<&str> = block.split_inclusive('\n').collect();
            let Some(last) = lines.iter().rposition(|l| l.trim_start().starts_with("- ")) else {
                return Ok(false);
            };
            let line = strip_eol(lines[last]);
            let dash = line.len() - line.trim_start().len();
            let prefix = &line[..dash + 2];
            let mut out: String = lines[..=last].concat();
            if !out.ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(prefix);
            out.push_str(&item);
            out.push_str(eol);
            out.push_str(&lines[last + 1..].concat());
            out
        } else {
            return Ok(false);
        };
        let mut new_yaml = yaml.clone();
        new_yaml.replace_range(range, &new_block);
        let old = self.old_entries(key)?;
        let Ok(rendered) = serde_saphyr::to_string(&steps) else {
            return Ok(false);
        };
        let Ok(expected) =
            serde_saphyr::from_str_with_options::<AnyValue>(&rendered, yaml_options())
        else {
            return Ok(false);
        };
        if verify(&new_yaml, &old, key, &Expect::Set(&expected)).is_err() {
            return Ok(false);
        }
        self.replace_yaml(key, &new_yaml)?;
        Ok(true)
    }
}

/// The quote character the step-file names of a list use: the first quoted item's, else none.
fn quote_style(block: &str) -> Option<char> {
    let bytes = block.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if (b == b'\'' || b == b'"') && i > 0 && matches!(bytes[i - 1], b'[' | b' ' | b',') {
            return Some(b as char);
        }
    }
    None
}

/// A step as a YAML list item: numbers bare, names in `quote` when the list quotes them (or
/// when a bare name would not read back as a string).
fn render_step(step: &StepRef, quote: Option<char>) -> String {
    let name = match step {
        StepRef::Int(n) => return n.to_string(),
        StepRef::Name(s) => s,
    };
    let plain_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && name.parse::<f64>().is_err()
        && !matches!(
            name.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "~"
        );
    match quote {
        Some('\'') => format!("'{}'", name.replace('\'', "''")),
        Some(_) => serde_json::to_string(name).unwrap_or_else(|_| format!("\"{name}\"")),
        None if plain_ok => name.clone(),
        None => serde_json::to_string(name).unwrap_or_else(|_| format!("\"{name}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        Document::parse("doc.md", text).unwrap()
    }

    #[test]
    fn steps_completed_int_dialect() {
        let mut d = doc("---\nstepsCompleted: [1, 2]\nworkflowType: architecture\n---\n# Arch\n");
        assert_eq!(
            d.steps_completed().unwrap(),
            vec![StepRef::Int(1), StepRef::Int(2)]
        );
        assert!(d.push_step_completed(3).unwrap());
        assert!(!d.push_step_completed(3).unwrap(), "already there");
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted: [1, 2, 3]\nworkflowType: architecture\n---\n# Arch\n"
        );
        // BMad mixes numbers and step-file names; both are accepted.
        assert!(d.push_step_completed("step-04-x.md").unwrap());
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted: [1, 2, 3, step-04-x.md]\nworkflowType: architecture\n---\n# Arch\n"
        );
    }

    #[test]
    fn steps_completed_name_dialect_in_block_style() {
        let mut d =
            doc("---\nstepsCompleted:\n  - 'step-01-init.md'\n  - step-02-discovery.md\n---\nx");
        assert_eq!(
            d.steps_completed().unwrap(),
            vec![
                StepRef::Name("step-01-init.md".into()),
                StepRef::Name("step-02-discovery.md".into())
            ]
        );
        assert!(d.push_step_completed("step-03-success.md").unwrap());
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted:\n  - 'step-01-init.md'\n  - step-02-discovery.md\n  - 'step-03-success.md'\n---\nx"
        );
        assert!(d.push_step_completed(4).unwrap());
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted:\n  - 'step-01-init.md'\n  - step-02-discovery.md\n  - 'step-03-success.md'\n  - 4\n---\nx"
        );
    }

    #[test]
    fn steps_completed_keeps_quoting_comments_and_other_keys() {
        let text = "---\nstepsCompleted: [\"step-01-init.md\", \"step-02-discovery.md\"]  # progress\ninputDocuments: ['a.md']\ndate: '2026-01-02'\n---\n# PRD\n";
        let mut d = doc(text);
        assert!(d.push_step_completed("step-03-success.md").unwrap());
        assert_eq!(
            d.to_string(),
            text.replace(
                "\"step-02-discovery.md\"]",
                "\"step-02-discovery.md\", \"step-03-success.md\"]"
            )
        );
        let block = "---\ntitle: x\nstepsCompleted:\n    - 1\n    - \"step-02-vision.md\"\n    # trailing\nlastStep: 2\n---\nbody";
        let mut d = doc(block);
        assert!(d.push_step_completed(3).unwrap());
        assert_eq!(
            d.to_string(),
            block.replace(
                "\"step-02-vision.md\"\n",
                "\"step-02-vision.md\"\n    - 3\n"
            )
        );
        assert_eq!(
            d.steps_completed().unwrap(),
            vec![
                StepRef::Int(1),
                StepRef::Name("step-02-vision.md".into()),
                StepRef::Int(3)
            ]
        );
    }

    #[test]
    fn steps_completed_mixed_or_missing() {
        let mut d = doc("---\nstepsCompleted: [1, 'step-02.md']\n---\n");
        assert_eq!(d.steps_completed().unwrap().len(), 2);
        assert!(d.push_step_completed(3).unwrap());
        assert!(d.push_step_completed("step-04.md").unwrap());
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted: [1, 'step-02.md', 3, 'step-04.md']\n---\n"
        );
        let mut d = doc("---\ntitle: t\n---\nbody\n");
        assert!(d.push_step_completed("step-e-01-discovery").unwrap());
        assert_eq!(
            d.to_string(),
            "---\ntitle: t\nstepsCompleted: [step-e-01-discovery]\n---\nbody\n"
        );
        let mut d = doc("---\nstepsCompleted: []\n---\n");
        assert!(d.push_step_completed(1).unwrap());
        assert_eq!(d.to_string(), "---\nstepsCompleted: [1]\n---\n");
        let d = doc("---\nstepsCompleted: 7\n---\n");
        assert!(matches!(
            d.steps_completed(),
            Err(FrontmatterError::Value { .. })
        ));
    }
}
