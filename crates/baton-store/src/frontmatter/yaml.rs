//! Reading frontmatter YAML: the parser's options, the top-level entries with their positions,
//! one key's value picked out of the mapping, the structural value an edit is checked against,
//! and parser errors rendered with file line numbers.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess,
    Visitor,
};
use serde_saphyr::Spanned;

/// A structural YAML value, used to check that an edit reads back as intended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum AnyValue {
    Null,
    Bool(bool),
    Int(i128),
    Float(u64),
    Str(String),
    Bytes(Vec<u8>),
    Seq(Vec<AnyValue>),
    Map(Vec<(AnyValue, AnyValue)>),
}

impl<'de> de::Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<AnyValue, E> {
                Ok(AnyValue::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<AnyValue, E> {
                Ok(AnyValue::Int(i128::from(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<AnyValue, E> {
                Ok(AnyValue::Int(i128::from(v)))
            }
            fn visit_i128<E>(self, v: i128) -> Result<AnyValue, E> {
                Ok(AnyValue::Int(v))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<AnyValue, E> {
                Ok(i128::try_from(v).map_or_else(|_| AnyValue::Str(v.to_string()), AnyValue::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<AnyValue, E> {
                Ok(AnyValue::Float(v.to_bits()))
            }
            fn visit_str<E>(self, v: &str) -> Result<AnyValue, E> {
                Ok(AnyValue::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<AnyValue, E> {
                Ok(AnyValue::Str(v))
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<AnyValue, E> {
                Ok(AnyValue::Bytes(v.to_vec()))
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<AnyValue, E> {
                Ok(AnyValue::Bytes(v))
            }
            fn visit_none<E>(self) -> Result<AnyValue, E> {
                Ok(AnyValue::Null)
            }
            fn visit_unit<E>(self) -> Result<AnyValue, E> {
                Ok(AnyValue::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<AnyValue, D::Error> {
                <AnyValue as de::Deserialize>::deserialize(d)
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<AnyValue, D::Error> {
                <AnyValue as de::Deserialize>::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyValue, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(AnyValue::Seq(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyValue, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(AnyValue::Map(out))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl AnyValue {
    pub(super) fn is_collection(&self) -> bool {
        matches!(self, AnyValue::Seq(v) if !v.is_empty())
            || matches!(self, AnyValue::Map(m) if !m.is_empty())
    }
}

pub(super) fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        with_snippet: false,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
    }
}

/// The top-level entries of a YAML mapping (an empty or null document has none).
pub(super) struct Entries<V>(PhantomData<V>);

impl<'de, V: de::Deserialize<'de>> Visitor<'de> for Entries<V> {
    type Value = Vec<(Spanned<String>, V)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of keys to values")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<V>()?;
            out.push((key, value));
        }
        Ok(out)
    }
}

pub(super) fn entries<V: DeserializeOwned>(
    yaml: &str,
) -> Result<Vec<(Spanned<String>, V)>, serde_saphyr::Error> {
    serde_saphyr::with_deserializer_from_str_with_options(yaml, yaml_options(), |de| {
        de.deserialize_any(Entries(PhantomData))
    })
}

/// Picks one top-level key's value out of a mapping, deserialized as `T`.
pub(super) struct Pick<'k, T> {
    pub(super) key: &'k str,
    pub(super) _t: PhantomData<T>,
}

impl<'de, T: de::Deserialize<'de>> DeserializeSeed<'de> for Pick<'_, T> {
    type Value = Option<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: de::Deserialize<'de>> Visitor<'de> for Pick<'_, T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of keys to values")
    }
    fn visit_unit<E>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if found.is_none() && key == self.key {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

pub(super) fn to_usize(n: u64) -> Option<usize> {
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// Renders a parser error with line numbers of the file (`line_offset` lines precede the YAML).
pub(super) fn render(
    e: &serde_saphyr::Error,
    line_offset: usize,
) -> (Option<usize>, Option<usize>, String) {
    let loc = e.location();
    let line = loc
        .and_then(|l| to_usize(l.line()))
        .map(|l| l.saturating_add(line_offset));
    let column = loc.and_then(|l| to_usize(l.column()));
    let full = e.to_string();
    // A breach of the parser's safety limits gets a sentence, not the parser's internals.
    if let Some(at) = full.find("budget breached: ") {
        return (
            line,
            column,
            crate::sprint_file::budget_message(&full[at + 17..]),
        );
    }
    let message = e.render_with_options(serde_saphyr::render_options! {
        snippets: serde_saphyr::SnippetMode::Off,
        line_offset: u64::try_from(line_offset).unwrap_or(0),
    });
    (line, column, message)
}
