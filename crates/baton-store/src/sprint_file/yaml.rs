//! What a real YAML parser reads in `development_status`, for the loader's cross-check.
//!
//! The whole file goes through serde-saphyr (first occurrence of a duplicated key wins), and
//! every value is built exactly as a `serde_json::Value` would be, so the typing of scalars
//! (numbers, booleans, null) and every error are those of a `Value` parse. Only the
//! `development_status` mapping itself is not collected into a map: its entries stream into a
//! list in file order, which spares a hash of every key and a copy of every status on a large
//! sprint.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// The `development_status` entries as YAML reads them: key and status text (`None` for a
/// value without a scalar status), in file order, first occurrence of each key.
pub(super) type YamlStatuses = Vec<(String, Option<String>)>;

/// The document's top level.
pub(super) enum Root {
    /// Empty, or `null`.
    Null,
    /// A scalar or a sequence.
    NotMapping,
    /// A mapping, with its `development_status` value if it has one.
    Map(Option<Dev>),
}

/// The value of `development_status`.
pub(super) enum Dev {
    /// `null` or empty.
    Null,
    /// A scalar or a sequence.
    NotMapping,
    /// A mapping.
    Entries(YamlStatuses),
}

/// `entries` as a map keyed by text reads them: keys that are distinct to YAML but equal as
/// text (`11` and `'11'`) become one entry, in the place of the first and with the status of the
/// last (how a `serde_json::Value` map keeps them). `None` when no two keys are equal as text.
pub(super) fn merge_text_duplicates(entries: &YamlStatuses) -> Option<YamlStatuses> {
    let mut at: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(entries.len());
    let mut merged: YamlStatuses = Vec::with_capacity(entries.len());
    for (key, status) in entries {
        match at.get(key.as_str()) {
            Some(&i) => {
                if let Some(slot) = merged.get_mut(i) {
                    slot.1.clone_from(status);
                }
            }
            None => {
                at.insert(key, merged.len());
                merged.push((key.clone(), status.clone()));
            }
        }
    }
    (merged.len() != entries.len()).then_some(merged)
}

/// Parses `text` with `options`.
pub(super) fn parse(
    text: &str,
    options: serde_saphyr::Options,
) -> Result<Root, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, options)
}

/// A scalar's text as `serde_json::Value` spells it; `None` for anything else.
fn scalar(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The status of one entry's value: a scalar, or a struct's `status:` scalar.
fn status_of(v: Value) -> Option<String> {
    match v {
        Value::Object(mut inner) => inner.swap_remove("status").and_then(scalar),
        other => scalar(other),
    }
}

/// The first key of a mapping, read as `serde_json::Value` reads it (`deserialize_str`; the
/// later ones it reads as a `String`, see [`next_key`]).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        Ok(s.to_owned())
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<String, E> {
        Ok(s)
    }
}

/// The next key of a mapping, read exactly as `serde_json::Value` reads it: the first through
/// `deserialize_str`, the others as a `String` (`deserialize_string`), which the YAML
/// deserializer treats alike except in the wording of some errors.
fn next_key<'de, A: MapAccess<'de>>(
    map: &mut A,
    first: &mut bool,
) -> Result<Option<String>, A::Error> {
    if std::mem::take(first) {
        map.next_key_seed(Key)
    } else {
        map.next_key::<String>()
    }
}

/// Consumes a sequence as `serde_json::Value` would (same checks, same errors).
fn drain<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Value>()?.is_some() {}
    Ok(())
}

/// Implements the scalar visits of a visitor whose scalars all mean `$other` (and a
/// non-finite float, which `Value` turns into null, `$null`).
macro_rules! scalars_are {
    ($other:expr, $null:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
            <Value as de::Deserialize>::deserialize(de::value::I128Deserializer::<E>::new(v))?;
            Ok($other)
        }
        fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
            <Value as de::Deserialize>::deserialize(de::value::U128Deserializer::<E>::new(v))?;
            Ok($other)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(if v.is_finite() { $other } else { $null })
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($null)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($null)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain(seq)?;
            Ok($other)
        }
    };
}

impl<'de> de::Deserialize<'de> for Root {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Root, D::Error> {
        d.deserialize_any(RootVisitor)
    }
}

struct RootVisitor;

impl<'de> Visitor<'de> for RootVisitor {
    type Value = Root;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    scalars_are!(Root::NotMapping, Root::Null);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Root, A::Error> {
        let mut dev = None;
        let mut first = true;
        while let Some(key) = next_key(&mut map, &mut first)? {
            if key == "development_status" && dev.is_none() {
                dev = Some(map.next_value::<Dev>()?);
            } else {
                map.next_value::<Value>()?;
            }
        }
        Ok(Root::Map(dev))
    }
}

impl<'de> de::Deserialize<'de> for Dev {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dev, D::Error> {
        d.deserialize_any(DevVisitor)
    }
}

struct DevVisitor;

impl<'de> Visitor<'de> for DevVisitor {
    type Value = Dev;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    scalars_are!(Dev::NotMapping, Dev::Null);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Dev, A::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        let mut first = true;
        while let Some(key) = next_key(&mut map, &mut first)? {
            let value = map.next_value::<Value>()?;
            out.push((key, status_of(value)));
        }
        Ok(Dev::Entries(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> serde_saphyr::Options {
        serde_saphyr::options! {
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::FirstWins,
        }
    }

    /// The reading this module replaces: the whole document as a `serde_json::Value`.
    fn through_value(text: &str) -> Result<String, String> {
        let value: Value =
            serde_saphyr::from_str_with_options(text, options()).map_err(|e| e.to_string())?;
        let root = match value {
            Value::Null => return Ok("null".into()),
            Value::Object(map) => map,
            _ => return Ok("not a mapping".into()),
        };
        Ok(match root.get("development_status") {
            None => "no development_status".into(),
            Some(Value::Null) => "[]".into(),
            Some(Value::Object(m)) => {
                let entries: YamlStatuses = m
                    .iter()
                    .map(|(k, v)| (k.clone(), status_of(v.clone())))
                    .collect();
                format!("{entries:?}")
            }
            Some(_) => "development_status not a mapping".into(),
        })
    }

    fn streamed(text: &str) -> Result<String, String> {
        Ok(match parse(text, options()).map_err(|e| e.to_string())? {
            Root::Null => "null".into(),
            Root::NotMapping => "not a mapping".into(),
            Root::Map(None) => "no development_status".into(),
            Root::Map(Some(Dev::Null)) => "[]".into(),
            Root::Map(Some(Dev::NotMapping)) => "development_status not a mapping".into(),
            Root::Map(Some(Dev::Entries(entries))) => {
                let merged = merge_text_duplicates(&entries);
                format!("{:?}", merged.unwrap_or(entries))
            }
        })
    }

    #[test]
    fn reads_what_a_value_reads() {
        let docs = [
            "",
            "~",
            "just text",
            "- a\n- b\n",
            "project: x\n",
            "development_status:\n",
            "development_status: []\n",
            "development_status: done\n",
            "development_status: {}\n",
            "development_status:\n  epic-1: backlog\n  1-1-a: done # c\n  '1-2-b': \"review\"\n",
            "development_status:\n  a: 1\n  b: 1.50\n  c: true\n  d: ~\n  e: 0x1F\n  f: .inf\n  g: 1e3\n",
            "development_status:\n  a: 123456789012345678901234567890\n",
            "development_status:\n  a: -9223372036854775809\n",
            "development_status:\n  a: {status: done, size: M}\n  b: {size: M}\n  c: [x]\n  d: {status: [x]}\n",
            "development_status:\n  a:\n    status: review\n    status: done\n",
            "development_status:\n  a: done\n  a: review\n  b: x\n",
            "development_status:\n  11: a\n  0xB: b\n  '11': c\n",
            "development_status:\n  ? [a, b]\n  : x\n",
            "development_status:\n  a: x\n  ? [a, b]\n  : x\n",
            "development_status:\n  ~: x\n  a: y\n",
            "development_status:\n  a: y\n  ~: x\n",
            "development_status:\n  a: &s done\n  b: *s\n  c: !!str 12\n",
            "base: &b {x: 1}\ndevelopment_status:\n  <<: *b\n  a: done\n",
            "development_status:\n  a: done\ndevelopment_status:\n  b: done\n",
            "other: {? [1]: 2}\ndevelopment_status:\n  a: done\n",
            "development_status:\n  a: [unclosed\n",
            "development_status:\n  a: b: c\n",
            "x: 1\nx: 2\n",
            "development_status:\n  a: !custom done\n",
        ];
        for doc in docs {
            assert_eq!(streamed(doc), through_value(doc), "{doc:?}");
        }
    }
}
