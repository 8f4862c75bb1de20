//! A check, at register, that no map in a tool's arguments is keyed by a
//! type JSON cannot spell as an object key.
//!
//! A `HashMap<Key, V>` whose `Key` is a struct compiles, and its schema
//! (`{"type": "object", "additionalProperties": V}`) admits any object:
//! every call would then fail to deserialise (`expected struct Key`),
//! whatever the model sends. The check walks the argument type's own
//! `Deserialize` impl with a deserialiser that makes up one value of each
//! shape asked for (one element per list, one entry per map, the first
//! variant of an enum, `Some` for an option, to a bounded depth), and
//! answers a map's key as `serde_json` does (a string, or a number, bool
//! or unit variant read from one). A key type that asks for anything else
//! (a struct, a map, a list, a tuple) is the mistake, reported with the
//! path of the map. Any other error on the way (a value a custom
//! `Deserialize` refuses) is not this check's business and passes.

use std::cell::RefCell;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// How deep the walk goes (a recursive type stops here).
const MAX_DEPTH: usize = 12;

/// The path of a map keyed by a type that cannot be a JSON object key,
/// and what the key asked for, if `A` holds one.
pub fn bad_map_key<A: DeserializeOwned>() -> Option<(String, &'static str)> {
    let found = RefCell::new(None);
    let probe = Probe {
        path: String::new(),
        depth: 0,
        found: &found,
    };
    let _ = A::deserialize(probe);
    found.into_inner()
}

/// The error of the walk: never shown.
#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("probe")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Stop
    }
}

type Found<'f> = &'f RefCell<Option<(String, &'static str)>>;

/// Makes up a value of whatever shape is asked for.
struct Probe<'f> {
    path: String,
    depth: usize,
    found: Found<'f>,
}

impl<'f> Probe<'f> {
    fn at(&self, step: &str) -> Result<Probe<'f>, Stop> {
        if self.depth >= MAX_DEPTH || self.found.borrow().is_some() {
            return Err(Stop);
        }
        let path = if self.path.is_empty() {
            step.to_owned()
        } else if step.starts_with('[') {
            format!("{}{step}", self.path)
        } else {
            format!("{}.{step}", self.path)
        };
        Ok(Probe {
            path,
            depth: self.depth + 1,
            found: self.found,
        })
    }
}

macro_rules! made_up {
    ($($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
            visitor.$visit($($value)?)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Stop;

    made_up! {
        deserialize_any => visit_unit(),
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i64(0),
        deserialize_i16 => visit_i64(0),
        deserialize_i32 => visit_i64(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u64(0),
        deserialize_u16 => visit_u64(0),
        deserialize_u32 => visit_u64(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f64(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('a'),
        deserialize_str => visit_str(""),
        deserialize_string => visit_str(""),
        deserialize_bytes => visit_bytes(&[]),
        deserialize_byte_buf => visit_bytes(&[]),
        deserialize_unit => visit_unit(),
        deserialize_identifier => visit_str(""),
        deserialize_ignored_any => visit_unit(),
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        if self.depth >= MAX_DEPTH {
            return visitor.visit_none();
        }
        visitor.visit_some(Probe {
            path: self.path,
            depth: self.depth + 1,
            found: self.found,
        })
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_tuple(1, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_seq(Items {
            probe: &self,
            left: len.min(8),
            index: 0,
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_map(Entry {
            probe: &self,
            done: false,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        visitor.visit_map(Fields {
            probe: &self,
            fields,
            next: 0,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        let first = variants.first().copied().ok_or(Stop)?;
        visitor.visit_enum(Variant {
            probe: self,
            name: first,
        })
    }
}

/// A list's elements, each made up.
struct Items<'p, 'f> {
    probe: &'p Probe<'f>,
    left: usize,
    index: usize,
}

impl<'de> SeqAccess<'de> for Items<'_, '_> {
    type Error = Stop;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Stop> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let element = self.probe.at(&format!("[{}]", self.index))?;
        self.index += 1;
        seed.deserialize(element).map(Some)
    }
}

/// A map of one entry: its key as JSON would give it, its value made up.
struct Entry<'p, 'f> {
    probe: &'p Probe<'f>,
    done: bool,
}

impl<'de> MapAccess<'de> for Entry<'_, '_> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        seed.deserialize(Key { probe: self.probe }).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        seed.deserialize(self.probe.at("[key]")?)
    }
}

/// A struct's fields, by name, each value made up.
struct Fields<'p, 'f> {
    probe: &'p Probe<'f>,
    fields: &'static [&'static str],
    next: usize,
}

impl<'de> MapAccess<'de> for Fields<'_, '_> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        let Some(field) = self.fields.get(self.next) else {
            return Ok(None);
        };
        let key: de::value::StrDeserializer<'_, Stop> = field.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        let field = self.fields.get(self.next).copied().unwrap_or_default();
        self.next += 1;
        seed.deserialize(self.probe.at(field)?)
    }
}

/// An enum's first variant.
struct Variant<'f> {
    probe: Probe<'f>,
    name: &'static str,
}

impl<'de, 'f> EnumAccess<'de> for Variant<'f> {
    type Error = Stop;
    type Variant = Probe<'f>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Probe<'f>), Stop> {
        let name: de::value::StrDeserializer<'_, Stop> = self.name.into_deserializer();
        let value = seed.deserialize(name)?;
        let inner = self.probe.at(self.name)?;
        Ok((value, inner))
    }
}

impl<'de> VariantAccess<'de> for Probe<'_> {
    type Error = Stop;

    fn unit_variant(self) -> Result<(), Stop> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Stop> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Stop> {
        de::Deserializer::deserialize_tuple(self, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        de::Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}

/// A map's key, as `serde_json` reads one from an object's key: a string,
/// or a number, a bool, a char or a unit variant spelled as one. Anything
/// else is the mistake this module looks for.
struct Key<'p, 'f> {
    probe: &'p Probe<'f>,
}

impl Key<'_, '_> {
    fn refuse(&self, asked: &'static str) -> Stop {
        let path = if self.probe.path.is_empty() {
            "the arguments".to_owned()
        } else {
            format!("`{}`", self.probe.path)
        };
        self.probe.found.borrow_mut().get_or_insert((path, asked));
        Stop
    }
}

macro_rules! refused {
    ($($method:ident => $asked:literal),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(self.refuse($asked))
        })*
    };
}

impl<'de> de::Deserializer<'de> for Key<'_, '_> {
    type Error = Stop;

    made_up! {
        deserialize_any => visit_str("k"),
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i64(0),
        deserialize_i16 => visit_i64(0),
        deserialize_i32 => visit_i64(0),
        deserialize_i64 => visit_i64(0),
        deserialize_i128 => visit_i64(0),
        deserialize_u8 => visit_u64(0),
        deserialize_u16 => visit_u64(0),
        deserialize_u32 => visit_u64(0),
        deserialize_u64 => visit_u64(0),
        deserialize_u128 => visit_u64(0),
        deserialize_f32 => visit_f64(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('k'),
        deserialize_str => visit_str("k"),
        deserialize_string => visit_str("k"),
        deserialize_identifier => visit_str("k"),
        deserialize_ignored_any => visit_unit(),
    }

    refused! {
        deserialize_bytes => "bytes",
        deserialize_byte_buf => "bytes",
        deserialize_unit => "a unit",
        deserialize_seq => "a list",
        deserialize_map => "a map",
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: V,
    ) -> Result<V::Value, Stop> {
        Err(self.refuse("a unit struct"))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Stop> {
        Err(self.refuse("a tuple"))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        _: V,
    ) -> Result<V::Value, Stop> {
        Err(self.refuse("a tuple struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        Err(self.refuse("a struct"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        // A unit variant, spelled as its name (what JSON can hold).
        let first = variants.first().copied().ok_or(Stop)?;
        let name: de::value::StrDeserializer<'_, Stop> = first.into_deserializer();
        visitor.visit_enum(name)
    }
}
