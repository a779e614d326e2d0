//! [`Keywords`]: one schema object, a typed field per keyword the passes read, the other
//! keys (annotations, vendor and unknown keywords) as written, and the order of all of them.
//!
//! The keyword table below generates the field, the [`Kw`] tag and its JSON name, so adding a
//! keyword is one line (plus its use). Fields are read directly; a field may be replaced while
//! its keyword is listed, and keywords are added and removed only through the methods here,
//! which keep [`Keywords::order`] what a JSON object holding the same keys would iterate.

use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use super::json::{json_eq_members, FromJson};
use super::{Dep, Field, Items, Members, Num, Schema, Text, TypeNames};

/// One key of a schema object, in [`Keywords::order`].
#[derive(Clone, Debug)]
pub(in super::super) enum Entry<'a> {
    /// A keyword with a typed field.
    Known(Kw),
    /// Any other key (an annotation, an `x-` extension, an unknown keyword), as written.
    Other(&'a str, &'a Value),
}

impl<'a> Entry<'a> {
    /// The key.
    pub(in super::super) fn name(&self) -> &'a str {
        match self {
            Entry::Known(kw) => kw.name(),
            Entry::Other(k, _) => k,
        }
    }
}

macro_rules! keywords {
    ($($kw:ident $name:literal $field:ident: $ty:ty,)*) => {
        /// A keyword with a typed field in [`Keywords`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(in super::super) enum Kw {
            $($kw,)*
        }

        impl Kw {
            /// The keyword named `name`, if it has a field.
            pub(in super::super) fn from_name(name: &str) -> Option<Kw> {
                match name {
                    $($name => Some(Kw::$kw),)*
                    _ => None,
                }
            }
            /// The JSON names of every keyword with a field, in table order.
            pub(in super::super) const NAMES: &'static [&'static str] = &[$($name,)*];
            /// The keyword's JSON name.
            pub(in super::super) fn name(self) -> &'static str {
                match self {
                    $(Kw::$kw => $name,)*
                }
            }
        }

        /// The keywords of one schema object (see the module docs).
        #[derive(Debug)]
        pub(in super::super) struct Keywords<'a> {
            /// Every key, in the order a JSON object with these keys would iterate them.
            pub(super) order: Vec<Entry<'a>>,
            /// The document object these keywords were parsed from; `None` once edited.
            pub(super) source: Option<&'a Value>,
            $(#[doc = concat!("`", $name, "`")] pub(in super::super) $field: Option<$ty>,)*
        }

        impl<'a> Keywords<'a> {
            /// No keyword at all (the schema `{}`).
            pub(in super::super) fn new() -> Self {
                Keywords { order: Vec::new(), source: None, $($field: None,)* }
            }

            /// Sets the field of `kw` from its JSON value (without listing it).
            fn set_json(&mut self, kw: Kw, v: &'a Value) {
                match kw {
                    $(Kw::$kw => self.$field = Some(FromJson::from_json(v)),)*
                }
            }

            /// Clears the field of `kw` (without unlisting it).
            fn clear(&mut self, kw: Kw) {
                match kw {
                    $(Kw::$kw => self.$field = None,)*
                }
            }

            /// Copies the field of `kw` from `other` (without listing it).
            fn copy_field(&mut self, other: &Self, kw: Kw) {
                match kw {
                    $(Kw::$kw => self.$field = other.$field.clone(),)*
                }
            }

            /// Whether both have the same value (JSON equality) for `kw`.
            pub(in super::super) fn same_field(&self, other: &Self, kw: Kw) -> bool {
                match kw {
                    $(Kw::$kw => self.$field == other.$field,)*
                }
            }

            /// Whether both have the same typed fields (JSON equality).
            fn same_fields(&self, other: &Self) -> bool {
                $(self.$field == other.$field &&)* true
            }

            /// Writes the member `kw` (which must be set).
            fn serialize_field<M: SerializeMap>(&self, kw: Kw, map: &mut M) -> Result<(), M::Error> {
                match kw {
                    $(Kw::$kw => map.serialize_entry($name, self.$field.as_ref().expect("a listed keyword is set")),)*
                }
            }
        }

        impl Clone for Keywords<'_> {
            /// A copy to edit: it no longer stands for its source.
            fn clone(&self) -> Self {
                Keywords { order: self.order.clone(), source: None, $($field: self.$field.clone(),)* }
            }
        }
    };
}

keywords! {
    Ref "$ref" reference: Text<'a>,
    AllOf "allOf" all_of: Field<'a, Vec<Schema<'a>>>,
    AnyOf "anyOf" any_of: Field<'a, Vec<Schema<'a>>>,
    OneOf "oneOf" one_of: Field<'a, Vec<Schema<'a>>>,
    Not "not" not: Schema<'a>,
    If "if" if_schema: Schema<'a>,
    Then "then" then_schema: Schema<'a>,
    Else "else" else_schema: Schema<'a>,
    Enum "enum" enum_values: Field<'a, Vec<&'a Value>>,
    Const "const" const_value: &'a Value,
    Type "type" types: Field<'a, TypeNames<'a>>,
    Nullable "nullable" nullable: Field<'a, bool>,
    Minimum "minimum" minimum: Num<'a>,
    Maximum "maximum" maximum: Num<'a>,
    ExclusiveMinimum "exclusiveMinimum" exclusive_minimum: Num<'a>,
    ExclusiveMaximum "exclusiveMaximum" exclusive_maximum: Num<'a>,
    MultipleOf "multipleOf" multiple_of: Num<'a>,
    MinLength "minLength" min_length: Num<'a>,
    MaxLength "maxLength" max_length: Num<'a>,
    Pattern "pattern" pattern: Text<'a>,
    Format "format" format: Text<'a>,
    Items "items" items: Items<'a>,
    PrefixItems "prefixItems" prefix_items: Field<'a, Vec<Schema<'a>>>,
    AdditionalItems "additionalItems" additional_items: Schema<'a>,
    UnevaluatedItems "unevaluatedItems" unevaluated_items: Schema<'a>,
    Contains "contains" contains: Schema<'a>,
    MinItems "minItems" min_items: Num<'a>,
    MaxItems "maxItems" max_items: Num<'a>,
    MinContains "minContains" min_contains: Num<'a>,
    MaxContains "maxContains" max_contains: Num<'a>,
    UniqueItems "uniqueItems" unique_items: Field<'a, bool>,
    Properties "properties" properties: Field<'a, Members<'a, Schema<'a>>>,
    Required "required" required: Field<'a, Vec<&'a Value>>,
    AdditionalProperties "additionalProperties" additional_properties: Schema<'a>,
    UnevaluatedProperties "unevaluatedProperties" unevaluated_properties: Schema<'a>,
    PatternProperties "patternProperties" pattern_properties: Field<'a, Members<'a, Schema<'a>>>,
    PropertyNames "propertyNames" property_names: Schema<'a>,
    MinProperties "minProperties" min_properties: Num<'a>,
    MaxProperties "maxProperties" max_properties: Num<'a>,
    DependentRequired "dependentRequired" dependent_required: Field<'a, Members<'a, Dep<'a>>>,
    DependentSchemas "dependentSchemas" dependent_schemas: Field<'a, Members<'a, Schema<'a>>>,
    Dependencies "dependencies" dependencies: Field<'a, Members<'a, Dep<'a>>>,
}

impl<'a> Keywords<'a> {
    /// The keywords of the schema object `m` (the map of `source`).
    pub(in super::super) fn parse(m: &'a Map<String, Value>, source: &'a Value) -> Self {
        let mut k = Keywords::new();
        k.order.reserve_exact(m.len());
        for (name, v) in m {
            match Kw::from_name(name) {
                Some(kw) => {
                    k.set_json(kw, v);
                    k.order.push(Entry::Known(kw));
                }
                None => k.order.push(Entry::Other(name, v)),
            }
        }
        k.source = Some(source);
        k
    }

    /// The document object these keywords are, unchanged.
    pub(in super::super) fn source(&self) -> Option<&'a Value> {
        self.source
    }

    /// Every key, in order.
    pub(in super::super) fn entries(&self) -> &[Entry<'a>] {
        &self.order
    }

    /// Every key's name, in order.
    pub(in super::super) fn names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.order.iter().map(Entry::name)
    }

    /// Whether this is `{}`.
    pub(in super::super) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Whether `kw` is present.
    pub(in super::super) fn has(&self, kw: Kw) -> bool {
        self.order.iter().any(|e| matches!(e, Entry::Known(k) if *k == kw))
    }

    /// The value of the other key `name`.
    pub(in super::super) fn other(&self, name: &str) -> Option<&'a Value> {
        self.order.iter().find_map(|e| match e {
            Entry::Other(k, v) if *k == name => Some(*v),
            _ => None,
        })
    }

    /// Whether some key constrains instances: not an annotation, not `$ref`.
    pub(in super::super) fn has_constraints(&self) -> bool {
        self.order.iter().any(|e| match e {
            Entry::Known(kw) => *kw != Kw::Ref,
            Entry::Other(name, _) => !super::is_annotation(name),
        })
    }

    /// Removes `kw` as a JSON object does: the last key takes its place.
    pub(in super::super) fn remove(&mut self, kw: Kw) {
        if let Some(i) = self.position(kw) {
            self.order.swap_remove(i);
            self.clear(kw);
            self.source = None;
        }
    }

    /// Removes `kw`, keeping the order of the other keys.
    pub(in super::super) fn remove_keeping_order(&mut self, kw: Kw) {
        if let Some(i) = self.position(kw) {
            self.order.remove(i);
            self.clear(kw);
            self.source = None;
        }
    }

    /// Sets `kw` to its value in `other`: in place when present, else as the last key.
    pub(in super::super) fn insert_from(&mut self, other: &Self, kw: Kw) {
        self.copy_field(other, kw);
        self.list(kw);
    }

    /// Lists `kw` (whose field is set) as the last key, unless it is listed.
    pub(in super::super) fn list(&mut self, kw: Kw) {
        if self.position(kw).is_none() {
            self.order.push(Entry::Known(kw));
        }
        self.source = None;
    }

    /// Adds the other key `name` as the last key, unless present.
    pub(in super::super) fn insert_other(&mut self, name: &'a str, v: &'a Value) {
        if self.other(name).is_none() {
            self.order.push(Entry::Other(name, v));
            self.source = None;
        }
    }

    fn position(&self, kw: Kw) -> Option<usize> {
        self.order.iter().position(|e| matches!(e, Entry::Known(k) if *k == kw))
    }

    /// Whether both are the same JSON object (keys in any order).
    pub(in super::super) fn json_eq(&self, other: &Self) -> bool {
        if self.order.len() != other.order.len() || !self.same_fields(other) {
            return false;
        }
        let others = |k: &Self| -> Vec<(&'a str, &'a Value)> {
            k.order
                .iter()
                .filter_map(|e| match e {
                    Entry::Other(n, v) => Some((*n, *v)),
                    Entry::Known(_) => None,
                })
                .collect()
        };
        json_eq_members(&others(self), &others(other), |a, b| a == b)
    }

    /// Writes the object, keys in order.
    pub(in super::super) fn serialize_map<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        for e in &self.order {
            match e {
                Entry::Known(kw) => self.serialize_field(*kw, map)?,
                Entry::Other(k, v) => map.serialize_entry(k, v)?,
            }
        }
        Ok(())
    }

    /// `{"type": name}`.
    pub(in super::super) fn of_type(name: &'a str) -> Self {
        let mut k = Keywords::new();
        k.types = Some(Field::Ok(TypeNames::One(name)));
        k.list(Kw::Type);
        k
    }

    /// `{"allOf": [a, b]}`.
    pub(in super::super) fn all_of_pair(a: Schema<'a>, b: Schema<'a>) -> Self {
        let mut k = Keywords::new();
        k.all_of = Some(Field::Ok(vec![a, b]));
        k.list(Kw::AllOf);
        k
    }

    /// `{"anyOf": [a, b]}`.
    pub(in super::super) fn any_of_pair(a: Schema<'a>, b: Schema<'a>) -> Self {
        let mut k = Keywords::new();
        k.any_of = Some(Field::Ok(vec![a, b]));
        k.list(Kw::AnyOf);
        k
    }

    /// The schema's `items` as a schema for each item, when it is one.
    pub(in super::super) fn items_schema(&self) -> Option<Schema<'a>> {
        self.items.as_ref().map(Items::as_schema)
    }
}

impl Default for Keywords<'_> {
    fn default() -> Self {
        Keywords::new()
    }
}
