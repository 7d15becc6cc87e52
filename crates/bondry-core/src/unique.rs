//! JSON read into a value whose objects repeat no key, at any depth. `serde_json` keeps
//! the last of a repeated key silently, so two readers of one text could disagree on
//! what it says (one checking the first `isError`, another passing on the second): a
//! text that repeats a key is refused instead, its error naming the key.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};

/// A [`DeserializeSeed`] of any JSON value, refusing a repeated key in any object.
#[derive(Debug, Clone, Copy)]
pub struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One hash per key: the vacant entry is filled where it was found.
            match object.entry(key) {
                Entry::Occupied(repeated) => {
                    return Err(de::Error::custom(format_args!("the key {:?} is repeated", repeated.key())));
                }
                Entry::Vacant(vacant) => {
                    vacant.insert(map.next_value_seed(self)?);
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(text: &str) -> Result<Value, String> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        UniqueKeys.deserialize(&mut deserializer).map_err(|error| error.to_string())
    }

    #[test]
    fn a_key_repeated_at_any_depth_is_refused_by_name() {
        assert_eq!(read(r#"{"a": [1, {"b": null}], "c": 2.5}"#), Ok(json!({"a": [1, {"b": null}], "c": 2.5})));
        assert_eq!(read(r#"{"a": 1, "a": 1}"#), Err("the key \"a\" is repeated at line 1 column 12".into()));
        assert_eq!(read(r#"[{"x": {"y": 1, "y": 2}}]"#), Err("the key \"y\" is repeated at line 1 column 19".into()));
    }
}
