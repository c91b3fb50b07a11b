//! Edits that keep bytes: [`Document::set`] and [`Document::remove`] rewrite only the block of
//! the one top-level key they change (a missing key is appended, a document without frontmatter
//! gets a new block), try the layouts that keep the old style first, and keep a candidate only
//! if the whole frontmatter reads back with that key changed and every other key as it was.

use std::ops::Range;

use serde::Serialize;

use super::layout::{Expect, Indent, layout, verify};
use super::lines::{comment_start, key_colon, line_ranges, strip_eol};
use super::split::bom_len;
use super::yaml::{AnyValue, entries, render, yaml_options};
use super::{Document, FrontmatterError};

/// How a new value is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    /// Flow style (`[a, b]`) when the old value was flow style, block style otherwise.
    Auto,
    /// Flow style for sequences when the key is new or was flow style.
    FlowIfNew,
}

impl Document {
    /// Sets the top-level `key` to `value`.
    ///
    /// Only that key's block (its `key:` line up to the next top-level key, minus trailing
    /// blank and column-0 comment lines) is rewritten; a missing key is appended at the end of
    /// the frontmatter, and a document without frontmatter gets a new block. Every other byte is
    /// kept. The result is re-parsed: if it would not read back with `value` under `key` and
    /// every other key unchanged, the document is left as it was and an error is returned.
    pub fn set<V: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &V,
    ) -> Result<(), FrontmatterError> {
        self.set_styled(key, value, Style::Auto)
    }

    /// Removes the top-level `key` and its block; returns whether it was present.
    pub fn remove(&mut self, key: &str) -> Result<bool, FrontmatterError> {
        let Some(idx) = self.keys.iter().position(|k| k.name == key) else {
            return Ok(false);
        };
        let old = self.old_entries(key)?;
        let block = self.block(idx, key)?;
        let yaml = self.frontmatter().unwrap_or_default();
        let new_yaml = format!("{}{}", &yaml[..block.start], &yaml[block.end..]);
        if let Err(reason) = verify(&new_yaml, &old, key, &Expect::Removed) {
            return Err(self.rejected(key, reason));
        }
        self.replace_yaml(key, &new_yaml)?;
        Ok(true)
    }

    /// The current top-level entries with structural values, for verifying an edit.
    pub(super) fn old_entries(
        &self,
        key: &str,
    ) -> Result<Vec<(String, AnyValue)>, FrontmatterError> {
        let Some(yaml) = self.frontmatter() else {
            return Ok(Vec::new());
        };
        entries::<AnyValue>(yaml)
            .map(|v| v.into_iter().map(|(k, v)| (k.value, v)).collect())
            .map_err(|e| {
                let (_, _, message) = render(&e, 1);
                self.rejected(
                    key,
                    format!("the current frontmatter cannot be compared: {message}"),
                )
            })
    }

    /// The byte range, within the YAML, of the block of the key at `idx`.
    pub(super) fn block(&self, idx: usize, key: &str) -> Result<Range<usize>, FrontmatterError> {
        let yaml = self.frontmatter().unwrap_or_default();
        let lines = line_ranges(yaml);
        let not_block = || {
            self.rejected(
                key,
                "the frontmatter is not a block mapping with one key per line".to_owned(),
            )
        };
        // YAML also breaks lines at a lone `\r`; the parser's line numbers would not match ours.
        if yaml.replace("\r\n", "").contains('\r') {
            return Err(self.rejected(
                key,
                "the frontmatter uses bare `\\r` line breaks".to_owned(),
            ));
        }
        let ordered = self.keys.windows(2).all(|w| w[0].line < w[1].line);
        let entry = self.keys.get(idx).ok_or_else(not_block)?;
        let start_line = entry.line.saturating_sub(1);
        let start = lines
            .get(start_line)
            .filter(|_| ordered && entry.column == 1)
            .ok_or_else(not_block)?;
        if key_colon(strip_eol(&yaml[start.clone()])).is_none() {
            return Err(self.rejected(
                key,
                "its key line is not a plain `key: value` line".to_owned(),
            ));
        }
        let mut end_line = self
            .keys
            .get(idx + 1)
            .map_or(lines.len(), |k| k.line.saturating_sub(1))
            .min(lines.len());
        while end_line > start_line + 1 {
            let Some(range) = lines.get(end_line - 1) else {
                break;
            };
            let line = strip_eol(&yaml[range.clone()]);
            if line.trim().is_empty() || line.starts_with('#') {
                end_line -= 1;
            } else {
                break;
            }
        }
        let end = lines
            .get(end_line)
            .map_or(yaml.len(), |r| r.start)
            .max(start.end);
        Ok(start.start..end)
    }

    pub(super) fn set_styled<V: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &V,
        style: Style,
    ) -> Result<(), FrontmatterError> {
        let ser_err = |message: String| FrontmatterError::Serialize {
            path: self.path.clone(),
            key: key.to_owned(),
            message,
        };
        let block_text = serde_saphyr::to_string(&value).map_err(|e| ser_err(e.to_string()))?;
        let expected: AnyValue =
            serde_saphyr::from_str_with_options(&block_text, yaml_options())
                .map_err(|e| ser_err(format!("the serialized value does not read back: {e}")))?;
        let flow_text = if matches!(expected, AnyValue::Seq(_)) {
            serde_saphyr::to_string(&serde_saphyr::FlowSeq(value)).ok()
        } else {
            None
        };
        let json_text = serde_json::to_string(value).ok();

        let old = self.old_entries(key)?;
        let eol = self.eol();
        let yaml = self.frontmatter().unwrap_or_default().to_owned();
        let idx = self.keys.iter().position(|k| k.name == key);

        // Where the new block goes, how the key is spelled, and what the old line carried.
        let (range, key_text, comment, was_flow) = match idx {
            Some(idx) => {
                let range = self.block(idx, key)?;
                let first = strip_eol(yaml[range.clone()].lines().next().unwrap_or_default());
                let colon = key_colon(first).unwrap_or(0);
                let key_text = first[..colon].to_owned();
                let value_part = &first[colon + 1..];
                let single_line = yaml[range.clone()].trim_end().lines().count() == 1;
                let was_flow = value_part.trim_start().starts_with('[');
                let comment = comment_start(value_part)
                    .filter(|_| single_line)
                    .filter(|&c| {
                        // Keep the comment only if cutting it leaves the same value.
                        let without = format!("{}:{}\n", key_text, &value_part[..c]);
                        let old_value = old.iter().find(|(k, _)| k == key).map(|(_, v)| v);
                        entries::<AnyValue>(&without)
                            .ok()
                            .and_then(|e| e.into_iter().next())
                            .is_some_and(|(_, v)| Some(&v) == old_value)
                    })
                    .map(|c| value_part[c..].to_owned());
                (range, key_text, comment, was_flow)
            }
            None => {
                let key_text = serde_saphyr::to_string(&key)
                    .ok()
                    .map(|s| s.trim_end_matches('\n').to_owned())
                    .filter(|s| !s.is_empty() && !s.contains('\n'))
                    .or_else(|| serde_json::to_string(key).ok())
                    .ok_or_else(|| ser_err("the key cannot be written".to_owned()))?;
                let mut at = yaml.len();
                // Append after the last non-blank line so trailing blank lines stay trailing.
                for r in line_ranges(&yaml).iter().rev() {
                    if yaml[r.clone()].trim().is_empty() {
                        at = r.start;
                    } else {
                        break;
                    }
                }
                let was_flow = style == Style::FlowIfNew;
                (at..at, key_text, None, was_flow)
            }
        };

        let mut candidates: Vec<String> = Vec::new();
        let mut push = |c: Option<String>| {
            if let Some(c) = c
                && !candidates.contains(&c)
            {
                candidates.push(c);
            }
        };
        let comment = comment.as_deref();
        if was_flow && let Some(flow) = &flow_text {
            push(layout(
                &key_text,
                flow,
                &expected,
                eol,
                comment,
                Indent::Keep,
            ));
            push(layout(&key_text, flow, &expected, eol, None, Indent::Keep));
        }
        for indent in [Indent::Keep, Indent::Extra] {
            push(layout(
                &key_text,
                &block_text,
                &expected,
                eol,
                comment,
                indent,
            ));
            push(layout(&key_text, &block_text, &expected, eol, None, indent));
        }
        if let Some(json) = &json_text {
            push(layout(
                &key_text,
                json,
                &AnyValue::Null,
                eol,
                comment,
                Indent::Keep,
            ));
            push(layout(
                &key_text,
                json,
                &AnyValue::Null,
                eol,
                None,
                Indent::Keep,
            ));
        }

        let mut last_reason = String::from("no way to write the value was found");
        for candidate in &candidates {
            let mut new_yaml = String::with_capacity(yaml.len() + candidate.len() + 2);
            new_yaml.push_str(&yaml[..range.start]);
            if range.start == yaml.len() && !yaml.is_empty() && !yaml.ends_with('\n') {
                new_yaml.push_str(eol);
            }
            new_yaml.push_str(candidate);
            new_yaml.push_str(&yaml[range.end..]);
            match verify(&new_yaml, &old, key, &Expect::Set(&expected)) {
                Ok(()) => return self.replace_yaml(key, &new_yaml),
                Err(reason) => last_reason = reason,
            }
        }
        Err(self.rejected(key, last_reason))
    }

    /// Swaps in new frontmatter YAML (creating the fences if needed) and re-indexes.
    pub(super) fn replace_yaml(
        &mut self,
        key: &str,
        new_yaml: &str,
    ) -> Result<(), FrontmatterError> {
        let text = match &self.front {
            Some(f) => format!(
                "{}{}{}",
                &self.text[..f.yaml.start],
                new_yaml,
                &self.text[f.yaml.end..]
            ),
            None => {
                let bom = bom_len(&self.text);
                let eol = self.eol();
                format!(
                    "{}---{eol}{new_yaml}---{eol}{}",
                    &self.text[..bom],
                    &self.text[bom..]
                )
            }
        };
        let doc = Document::parse(self.path.clone(), text)
            .map_err(|e| self.rejected(key, format!("the edited document does not parse: {e}")))?;
        *self = doc;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn doc(text: &str) -> Document {
        Document::parse("doc.md", text).unwrap()
    }

    #[test]
    fn set_keeps_body_with_fences_and_no_trailing_newline() {
        let body = "# Doc\n---\nnot: frontmatter\n---\n...\nlast line without newline";
        let text = format!("---\nstatus: draft\n---\n{body}");
        let mut d = doc(&text);
        d.set("status", "done").unwrap();
        assert_eq!(d.body(), body);
        assert_eq!(d.to_string(), format!("---\nstatus: done\n---\n{body}"));
        d.set("newKey", &vec!["a", "b"]).unwrap();
        assert_eq!(d.body(), body);
        assert!(d.to_string().ends_with(body));
    }

    #[test]
    fn set_keeps_comments_and_other_keys_byte_for_byte() {
        let text = "---\n# Leading comment\nname: 'Some Name'   # quoted on purpose\nstepsCompleted:\n  - 1\n  - 2\n# about inputDocuments\ninputDocuments: [] # none yet\nnested:\n  deep: {a: 1}\n\n# trailing comment\n---\nBody\n";
        let mut d = doc(text);
        d.set("stepsCompleted", &vec![1, 2, 3]).unwrap();
        let expected = "---\n# Leading comment\nname: 'Some Name'   # quoted on purpose\nstepsCompleted:\n  - 1\n  - 2\n  - 3\n# about inputDocuments\ninputDocuments: [] # none yet\nnested:\n  deep: {a: 1}\n\n# trailing comment\n---\nBody\n";
        assert_eq!(d.to_string(), expected);
        d.set("inputDocuments", &vec!["prd.md"]).unwrap();
        assert!(
            d.to_string()
                .contains("\ninputDocuments: [prd.md] # none yet\n"),
            "flow style and trailing comment kept: {}",
            d
        );
        assert_eq!(
            d.get::<Vec<String>>("inputDocuments").unwrap(),
            Some(vec!["prd.md".to_owned()])
        );
        d.set("name", "Other").unwrap();
        assert!(
            d.to_string()
                .contains("\nname: Other   # quoted on purpose\n"),
            "{d}"
        );
        assert!(
            d.to_string()
                .contains("nested:\n  deep: {a: 1}\n\n# trailing comment\n---\nBody\n")
        );
        assert_eq!(
            d.keys(),
            vec!["name", "stepsCompleted", "inputDocuments", "nested"]
        );
    }

    #[test]
    fn set_last_key_keeps_trailing_blank_and_comment_lines() {
        let mut d = doc("---\na: 1\nb:\n  - x\n\n# end\n---\nB");
        d.set("b", "done").unwrap();
        assert_eq!(d.to_string(), "---\na: 1\nb: done\n\n# end\n---\nB");
    }

    #[test]
    fn set_appends_missing_key_at_end_of_frontmatter() {
        let mut d = doc("---\na: 1\n# note\n\n---\nbody\n");
        d.set("lastStep", &4u32).unwrap();
        assert_eq!(
            d.to_string(),
            "---\na: 1\n# note\nlastStep: 4\n\n---\nbody\n"
        );
        d.set("weird key: yes", "v").unwrap();
        assert_eq!(
            d.get::<String>("weird key: yes").unwrap().as_deref(),
            Some("v")
        );
    }

    #[test]
    fn set_creates_frontmatter_on_plain_document() {
        let mut d = doc("# Story 1.2: Thing\n\nStatus: ready-for-dev\n");
        d.set("baseline_commit", "abc123").unwrap();
        assert_eq!(
            d.to_string(),
            "---\nbaseline_commit: abc123\n---\n# Story 1.2: Thing\n\nStatus: ready-for-dev\n"
        );
        let mut d = doc("\u{feff}body");
        d.set("k", &true).unwrap();
        assert_eq!(d.to_string(), "\u{feff}---\nk: true\n---\nbody");
        let mut d = doc("");
        d.set("k", "v").unwrap();
        assert_eq!(d.to_string(), "---\nk: v\n---\n");
    }

    #[test]
    fn crlf_documents_stay_crlf() {
        let text = "---\r\nname: x\r\nstepsCompleted: [1]\r\n---\r\nline one\r\nline two\r\n";
        let mut d = doc(text);
        assert_eq!(d.get::<String>("name").unwrap().as_deref(), Some("x"));
        assert!(d.push_step_completed(2).unwrap());
        d.set("inputDocuments", &vec!["a.md", "b.md"]).unwrap();
        assert_eq!(
            d.to_string(),
            "---\r\nname: x\r\nstepsCompleted: [1, 2]\r\ninputDocuments:\r\n  - a.md\r\n  - b.md\r\n---\r\nline one\r\nline two\r\n"
        );
        let mut d = doc("plain\r\ntext\r\n");
        d.set("k", "v").unwrap();
        assert_eq!(d.to_string(), "---\r\nk: v\r\n---\r\nplain\r\ntext\r\n");
    }

    #[test]
    fn multiline_and_tricky_strings_round_trip() {
        let mut d = doc("---\na: 1\nnote: old\nz: 2\n---\n");
        for value in [
            "line one\nline two",
            "ends with newline\n",
            "  leading spaces\nx",
            "yes",
            "null",
            "0123",
            "# not a comment",
            "a: b",
            "quote ' and \" both",
            "",
            "tab\there",
            "unicode \u{2028} sep \u{85}",
        ] {
            d.set("note", value).unwrap();
            assert_eq!(d.get::<String>("note").unwrap().as_deref(), Some(value));
            assert_eq!(d.get::<u32>("a").unwrap(), Some(1));
            assert_eq!(d.get::<u32>("z").unwrap(), Some(2));
            assert_eq!(d.keys(), vec!["a", "note", "z"]);
        }
    }

    #[test]
    fn set_refuses_edits_that_break_other_keys() {
        let text = "---\na: &anchor 1\nb: *anchor\n---\nbody\n";
        let mut d = doc(text);
        let err = d.set("a", &2).unwrap_err();
        assert!(
            matches!(err, FrontmatterError::EditRejected { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("doc.md"));
        assert_eq!(
            d.to_string(),
            text,
            "document untouched after a refused edit"
        );
        let text = "---\n{a: 1, b: 2}\n---\n";
        let mut d = doc(text);
        assert_eq!(d.keys(), vec!["a", "b"]);
        assert!(d.set("a", &3).is_err());
        assert_eq!(d.to_string(), text);
    }

    #[test]
    fn remove_deletes_only_that_block() {
        let mut d = doc("---\na: 1\nb:\n  - x\n  - y\n# about c\nc: 3\n---\nbody");
        assert!(d.remove("b").unwrap());
        assert_eq!(d.to_string(), "---\na: 1\n# about c\nc: 3\n---\nbody");
        assert!(!d.remove("missing").unwrap());
        assert!(d.remove("a").unwrap());
        assert!(d.remove("c").unwrap());
        assert_eq!(d.to_string(), "---\n# about c\n---\nbody");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parse_never_panics_on_yamlish_garbage(garbage in "[a-z:\\-\\[\\]{}&*!|>'\"# \n]{0,80}") {
            if let Ok(mut d) = Document::parse("p.md", format!("---\n{garbage}\n---\nbody")) {
                let _ = d.set("k", "v");
                let _ = d.remove("a");
                let _ = d.push_step_completed(1);
            }
        }

        #[test]
        fn set_leaves_body_identical(body in any::<String>(), value in any::<String>(), n in 0u32..1000) {
            let text = format!("---\n# c\nstepsCompleted: [1]\nname: x\n---\n{body}");
            let mut d = Document::parse("p.md", text).unwrap();
            d.set("name", &value).unwrap();
            prop_assert_eq!(d.body(), body.as_str());
            d.set("added", &n).unwrap();
            prop_assert_eq!(d.body(), body.as_str());
            prop_assert_eq!(d.get::<String>("name").unwrap(), Some(value));
            prop_assert!(d.to_string().ends_with(&body));
            prop_assert!(d.to_string().starts_with("---\n# c\nstepsCompleted: [1]\nname: "));
        }

        #[test]
        fn set_on_plain_body_keeps_it(body in any::<String>()) {
            prop_assume!(!body.starts_with("---\n") && !body.starts_with("---\r\n") && !body.starts_with('\u{feff}'));
            let mut d = Document::parse("p.md", body.clone()).unwrap();
            d.set("k", &vec![1, 2]).unwrap();
            prop_assert_eq!(d.body(), body.as_str());
        }
    }
}
