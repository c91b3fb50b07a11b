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

/// Parses `text` with `options`.
pub(super) fn parse(text: &str, options: serde_saphyr::Options) -> Result<Root, serde_saphyr::Error> {
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

/// A mapping key, read as `serde_json::Value` reads one (`deserialize_str`).
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
        while let Some(key) = map.next_key_seed(Key)? {
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
        while let Some(key) = map.next_key_seed(Key)? {
            let value = map.next_value::<Value>()?;
            out.push((key, status_of(value)));
        }
        Ok(Dev::Entries(out))
    }
}
