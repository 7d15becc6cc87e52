//! The shape of the configuration file, read off the raw structs themselves.
//!
//! Serde stops at a file's first error. To name every unknown key and mistyped value in
//! one run, [`super::check`] walks the parsed file against a [`Shape`] first. The shape is
//! not written by hand beside the structs, where it would drift from them: [`shape_of`]
//! drives a type's own `Deserialize` with a probe that answers every request with a
//! placeholder and records what was asked for (a struct and its fields, a sequence, an
//! integer of some width). Which fields are required is learnt the same way, by leaving
//! one out and seeing whether the type misses it.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

/// What a value of the file must be.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Bool,
    Integer {
        min: i128,
        max: i128,
    },
    /// A float; TOML integers are accepted where one is expected.
    Float,
    String,
    /// One of these strings.
    Choice(&'static [&'static str]),
    Array(Box<Shape>),
    /// A table of any keys, each value of this shape (`[listeners.NAME]`).
    Map(Box<Shape>),
    /// A table of these keys only (a struct).
    Table(Vec<Field>),
    /// Anything TOML can write (an inline JWK, say).
    Any,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: &'static str,
    pub required: bool,
    pub shape: Shape,
}

impl Shape {
    /// "an integer", "a table": how a message names what was expected.
    pub fn expected(&self) -> String {
        match self {
            Shape::Bool => "a boolean (true or false)".into(),
            Shape::Integer { min: 0, max } if *max >= i128::from(i64::MAX) => "a non-negative integer".into(),
            Shape::Integer { min, max } => format!("an integer from {min} to {max}"),
            Shape::Float => "a number".into(),
            Shape::String => "a string".into(),
            Shape::Choice(options) => {
                let quoted: Vec<String> = options.iter().map(|option| format!("\"{option}\"")).collect();
                format!("one of {}", quoted.join(", "))
            }
            Shape::Array(element) => format!("an array of {}", plural(element)),
            Shape::Map(_) | Shape::Table(_) => "a table".into(),
            Shape::Any => "a value".into(),
        }
    }
}

/// The element of an array, in the plural: "strings", "tables".
fn plural(shape: &Shape) -> &'static str {
    match shape {
        Shape::Bool => "booleans",
        Shape::Integer { .. } => "integers",
        Shape::Float => "numbers",
        Shape::String | Shape::Choice(_) => "strings",
        Shape::Array(_) => "arrays",
        Shape::Map(_) | Shape::Table(_) => "tables",
        Shape::Any => "values",
    }
}

/// The shape of `T`, learnt from its `Deserialize`. Fails only for a type the probe cannot
/// drive (one that asks for a self-describing value and refuses a boolean); the unit tests
/// drive every configuration type.
pub fn shape_of<T: for<'de> Deserialize<'de>>() -> Result<Shape, String> {
    let mut shape = probe::<T>(&[])?;
    mark_required::<T>(&mut shape, &mut Vec::new())?;
    Ok(shape)
}

/// Drives `T` once, leaving out the field at `omit` (a path of field names; `*` crosses a
/// map or an array), and returns the shape seen.
fn probe<T: for<'de> Deserialize<'de>>(omit: &[&'static str]) -> Result<Shape, String> {
    let mut shape = None;
    T::deserialize(Probe { shape: &mut shape, omit: Some(omit) }).map_err(|error| error.to_string())?;
    shape.ok_or_else(|| "the type asked for nothing".into())
}

/// Marks each field of every table in `shape` required if `T` refuses to go without it.
fn mark_required<T: for<'de> Deserialize<'de>>(shape: &mut Shape, path: &mut Vec<&'static str>) -> Result<(), String> {
    match shape {
        Shape::Array(element) | Shape::Map(element) => {
            path.push("*");
            mark_required::<T>(element, path)?;
            path.pop();
        }
        Shape::Table(fields) => {
            for field in fields {
                path.push(field.name);
                let mut omitted = None;
                let result = T::deserialize(Probe { shape: &mut omitted, omit: Some(path) });
                field.required = matches!(result, Err(ProbeError::Missing(name)) if name == field.name);
                mark_required::<T>(&mut field.shape, path)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

#[derive(Debug)]
enum ProbeError {
    Missing(&'static str),
    Other(String),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Missing(field) => write!(f, "missing field `{field}`"),
            ProbeError::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ProbeError {}

impl de::Error for ProbeError {
    fn custom<M: fmt::Display>(message: M) -> Self {
        ProbeError::Other(message.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        ProbeError::Missing(field)
    }
}

/// A deserializer that answers every request with a placeholder and writes down what was
/// asked for. `omit` is the path, relative to this value, of a field to leave out; `None`
/// once the probe has left that path.
struct Probe<'a, 'p> {
    shape: &'a mut Option<Shape>,
    omit: Option<&'p [&'static str]>,
}

impl<'p> Probe<'_, 'p> {
    /// The part of `omit` below a step into `segment`, if the path goes that way.
    fn below(&self, segment: &str) -> Option<&'p [&'static str]> {
        match self.omit {
            Some([first, rest @ ..]) if *first == segment && !rest.is_empty() => Some(rest),
            _ => None,
        }
    }

    fn integer<'de, V: Visitor<'de>>(self, min: i128, max: i128, visitor: V) -> Result<V::Value, ProbeError> {
        *self.shape = Some(Shape::Integer { min, max });
        visitor.visit_u8(0)
    }
}

impl<'de> de::Deserializer<'de> for Probe<'_, '_> {
    type Error = ProbeError;

    /// A type that describes itself by the value it finds (an inline `toml::Table`'s
    /// values): anything is accepted there.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.shape = Some(Shape::Any);
        visitor.visit_bool(false)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.shape = Some(Shape::Bool);
        visitor.visit_bool(false)
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(i8::MIN.into(), i8::MAX.into(), visitor)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(i16::MIN.into(), i16::MAX.into(), visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(i32::MIN.into(), i32::MAX.into(), visitor)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(i64::MIN.into(), i64::MAX.into(), visitor)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(0, u8::MAX.into(), visitor)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(0, u16::MAX.into(), visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(0, u32::MAX.into(), visitor)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(0, u64::MAX.into(), visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.shape = Some(Shape::Float);
        visitor.visit_f64(0.0)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.shape = Some(Shape::Float);
        visitor.visit_f64(0.0)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.shape = Some(Shape::String);
        visitor.visit_str("")
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ProbeError> {
        Err(de::Error::custom("TOML has no bytes"))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ProbeError> {
        Err(de::Error::custom("TOML has no bytes"))
    }

    /// An optional value has the shape of its content; whether it may be left out is
    /// its field's `required`.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ProbeError> {
        Err(de::Error::custom("TOML has no unit value"))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, _: V) -> Result<V::Value, ProbeError> {
        Err(de::Error::custom("TOML has no unit value"))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        let mut element = None;
        let omit = self.below("*");
        let value = visitor.visit_seq(OneElement { probe: Some(Probe { shape: &mut element, omit }) })?;
        *self.shape = Some(Shape::Array(Box::new(element.unwrap_or(Shape::Any))));
        Ok(value)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        let mut value_shape = None;
        let omit = self.below("*");
        let entries = [("*", Probe { shape: &mut value_shape, omit })];
        let value = visitor.visit_map(Entries { entries: entries.into_iter(), pending: None })?;
        *self.shape = Some(Shape::Map(Box::new(value_shape.unwrap_or(Shape::Any))));
        Ok(value)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        let omitted = match self.omit {
            Some([only]) => Some(*only),
            _ => None,
        };
        let mut shapes: Vec<Option<Shape>> = vec![None; fields.len()];
        let entries: Vec<(&'static str, Probe<'_, '_>)> = fields
            .iter()
            .zip(shapes.iter_mut())
            .filter(|(name, _)| Some(**name) != omitted)
            .map(|(name, shape)| (*name, Probe { shape, omit: self.below(name) }))
            .collect();
        let value = visitor.visit_map(Entries { entries: entries.into_iter(), pending: None })?;
        let fields = fields
            .iter()
            .zip(shapes)
            .map(|(name, shape)| Field { name, required: false, shape: shape.unwrap_or(Shape::Any) })
            .collect();
        *self.shape = Some(Shape::Table(fields));
        Ok(value)
    }

    /// Unit variants only, as the file writes them: a string naming one.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        *self.shape = Some(Shape::Choice(variants));
        let first = variants.first().ok_or_else(|| de::Error::custom("an enum without variants"))?;
        visitor.visit_enum(IntoDeserializer::<ProbeError>::into_deserializer(*first))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.deserialize_any(visitor)
    }
}

/// A sequence of one probed element.
struct OneElement<'a, 'p> {
    probe: Option<Probe<'a, 'p>>,
}

impl<'de> de::SeqAccess<'de> for OneElement<'_, '_> {
    type Error = ProbeError;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, ProbeError> {
        self.probe.take().map(|probe| seed.deserialize(probe)).transpose()
    }
}

/// A map of named, probed values: a struct's fields, or one entry standing for a map's.
struct Entries<'a, 'p, I: Iterator<Item = (&'static str, Probe<'a, 'p>)>> {
    entries: I,
    pending: Option<Probe<'a, 'p>>,
}

impl<'a, 'p, 'de, I: Iterator<Item = (&'static str, Probe<'a, 'p>)>> de::MapAccess<'de> for Entries<'a, 'p, I> {
    type Error = ProbeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, ProbeError> {
        let Some((name, probe)) = self.entries.next() else { return Ok(None) };
        self.pending = Some(probe);
        seed.deserialize(IntoDeserializer::<ProbeError>::into_deserializer(name)).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, ProbeError> {
        let probe = self.pending.take().ok_or_else(|| de::Error::custom("a value asked for before its key"))?;
        seed.deserialize(probe)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        name: String,
        #[serde(default)]
        tags: Vec<String>,
        port: Option<u16>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Kind {
        Red,
        Green,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        kind: Kind,
        rate: f64,
        #[serde(default)]
        named: BTreeMap<String, Inner>,
        listed: Vec<Inner>,
    }

    #[test]
    fn a_types_shape_and_required_fields_are_read_off_its_deserialize() {
        let inner = Shape::Table(vec![
            Field { name: "name", required: true, shape: Shape::String },
            Field { name: "tags", required: false, shape: Shape::Array(Box::new(Shape::String)) },
            Field { name: "port", required: false, shape: Shape::Integer { min: 0, max: 65535 } },
        ]);
        let expected = Shape::Table(vec![
            Field { name: "kind", required: true, shape: Shape::Choice(&["red", "green"]) },
            Field { name: "rate", required: true, shape: Shape::Float },
            Field { name: "named", required: false, shape: Shape::Map(Box::new(inner.clone())) },
            Field { name: "listed", required: true, shape: Shape::Array(Box::new(inner)) },
        ]);
        assert_eq!(shape_of::<Outer>().unwrap(), expected);
    }

    #[test]
    fn the_configuration_files_shape_is_learnt_whole() {
        let Shape::Table(fields) = shape_of::<super::super::RawConfig>().unwrap() else { panic!("not a table") };
        let names: Vec<_> = fields.iter().map(|field| field.name).collect();
        assert_eq!(
            names,
            ["shutdown_grace_ms", "data_dir", "pin_store", "log_format", "listeners", "realms", "audit", "admin"]
        );
        let Some(Field { shape: Shape::Map(listener), .. }) = fields.iter().find(|field| field.name == "listeners")
        else {
            panic!("listeners is not a map")
        };
        let Shape::Table(listener) = &**listener else { panic!("a listener is not a table") };
        let bind = listener.iter().find(|field| field.name == "bind").unwrap();
        assert!(bind.required && bind.shape == Shape::String);
        assert!(listener.iter().filter(|field| field.name != "bind").all(|field| !field.required));
    }

    #[test]
    fn expectations_read_as_english() {
        assert_eq!(Shape::Integer { min: 0, max: u64::MAX.into() }.expected(), "a non-negative integer");
        assert_eq!(Shape::Integer { min: 0, max: 255 }.expected(), "an integer from 0 to 255");
        assert_eq!(Shape::Choice(&["a", "b"]).expected(), "one of \"a\", \"b\"");
        assert_eq!(Shape::Array(Box::new(Shape::String)).expected(), "an array of strings");
    }
}
