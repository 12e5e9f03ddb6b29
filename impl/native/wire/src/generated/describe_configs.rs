// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeConfigsRequest {
        /// The resources whose configurations we want to describe.
        /// (versions 0+)
        pub resources: Vec<DescribeConfigsResource>,
        /// True if we should include all synonyms.
        /// (versions 1+, default false)
        pub include_synonyms: bool,
        /// True if we should include configuration documentation.
        /// (versions 3+, default false)
        pub include_documentation: bool,
    }

    impl DescribeConfigsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.resources = { let n = r.array_len(flexible, "Resources")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribeConfigsResource::decode(r, version)?); } v };
            this.include_synonyms = r.bool()?;
            if version >= 3 { this.include_documentation = r.bool()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_array_len(w, flexible, self.resources.len()); for e in &self.resources { e.encode(w, version)?; }
            put_bool(w, self.include_synonyms);
            if version >= 3 { put_bool(w, self.include_documentation); } else if self.include_documentation { return Err(WireError::UnsupportedField { field: "DescribeConfigsRequest.IncludeDocumentation", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "resources"); out.push('['); for (i, e) in self.resources.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "include_synonyms"); dump_display(out, self.include_synonyms);
            if version >= 3 { json_key(out, &mut first, "include_documentation"); dump_display(out, self.include_documentation); }
            out.push('}');
        }
    }

    /// The resources whose configurations we want to describe.
    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeConfigsResource {
        /// The resource type.
        /// (versions 0+)
        pub resource_type: i8,
        /// The resource name.
        /// (versions 0+)
        pub resource_name: String,
        /// The configuration keys to list, or null to list all configuration keys.
        /// (versions 0+, nullable 0+)
        pub configuration_keys: Option<Vec<String>>,
    }

    impl Default for DescribeConfigsResource {
        fn default() -> Self {
            Self {
                resource_type: 0,
                resource_name: String::new(),
                configuration_keys: Some(Vec::new()),
            }
        }
    }

    impl DescribeConfigsResource {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.resource_type = r.i8()?;
            this.resource_name = r.string(flexible, "ResourceName")?;
            this.configuration_keys = match r.nullable_array_len(flexible)? { None => None, Some(n) => { let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "ConfigurationKeys")?); } Some(v) } };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_i8(w, self.resource_type);
            put_string(w, flexible, &self.resource_name)?;
            match &self.configuration_keys { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { put_string(w, flexible, e)?; } } None => { put_null_array(w, flexible); } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "resource_type"); dump_display(out, self.resource_type);
            json_key(out, &mut first, "resource_name"); dump_str(out, &self.resource_name);
            json_key(out, &mut first, "configuration_keys"); match &self.configuration_keys { Some(v) => { out.push('['); for (i, e) in v.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']'); } None => out.push_str("null"), }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeConfigsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// The results for each resource.
        /// (versions 0+)
        pub results: Vec<DescribeConfigsResult>,
    }

    impl DescribeConfigsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.results = { let n = r.array_len(flexible, "Results")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribeConfigsResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_i32(w, self.throttle_time_ms);
            put_array_len(w, flexible, self.results.len()); for e in &self.results { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "results"); out.push('['); for (i, e) in self.results.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The results for each resource.
    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeConfigsResult {
        /// The error code, or 0 if we were able to successfully describe the configurations.
        /// (versions 0+)
        pub error_code: i16,
        /// The error message, or null if we were able to successfully describe the configurations.
        /// (versions 0+, nullable 0+)
        pub error_message: Option<String>,
        /// The resource type.
        /// (versions 0+)
        pub resource_type: i8,
        /// The resource name.
        /// (versions 0+)
        pub resource_name: String,
        /// Each listed configuration.
        /// (versions 0+)
        pub configs: Vec<DescribeConfigsResourceResult>,
    }

    impl Default for DescribeConfigsResult {
        fn default() -> Self {
            Self {
                error_code: 0,
                error_message: Some(String::new()),
                resource_type: 0,
                resource_name: String::new(),
                configs: Vec::new(),
            }
        }
    }

    impl DescribeConfigsResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.error_message = r.nullable_string(flexible)?;
            this.resource_type = r.i8()?;
            this.resource_name = r.string(flexible, "ResourceName")?;
            this.configs = { let n = r.array_len(flexible, "Configs")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribeConfigsResourceResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_i16(w, self.error_code);
            match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_i8(w, self.resource_type);
            put_string(w, flexible, &self.resource_name)?;
            put_array_len(w, flexible, self.configs.len()); for e in &self.configs { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "resource_type"); dump_display(out, self.resource_type);
            json_key(out, &mut first, "resource_name"); dump_str(out, &self.resource_name);
            json_key(out, &mut first, "configs"); out.push('['); for (i, e) in self.configs.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each listed configuration.
    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeConfigsResourceResult {
        /// The configuration name.
        /// (versions 0+)
        pub name: String,
        /// The configuration value.
        /// (versions 0+, nullable 0+)
        pub value: Option<String>,
        /// True if the configuration is read-only.
        /// (versions 0+)
        pub read_only: bool,
        /// The configuration source.
        /// (versions 1+, default -1, ignorable)
        pub config_source: i8,
        /// True if this configuration is sensitive.
        /// (versions 0+)
        pub is_sensitive: bool,
        /// The synonyms for this configuration key.
        /// (versions 1+, ignorable)
        pub synonyms: Vec<DescribeConfigsSynonym>,
        /// The configuration data type. Type can be one of the following values - BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD.
        /// (versions 3+, default 0, ignorable)
        pub config_type: i8,
        /// The configuration documentation.
        /// (versions 3+, nullable 0+, ignorable)
        pub documentation: Option<String>,
    }

    impl Default for DescribeConfigsResourceResult {
        fn default() -> Self {
            Self {
                name: String::new(),
                value: Some(String::new()),
                read_only: false,
                config_source: -1,
                is_sensitive: false,
                synonyms: Vec::new(),
                config_type: 0,
                documentation: Some(String::new()),
            }
        }
    }

    impl DescribeConfigsResourceResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.value = r.nullable_string(flexible)?;
            this.read_only = r.bool()?;
            this.config_source = r.i8()?;
            this.is_sensitive = r.bool()?;
            this.synonyms = { let n = r.array_len(flexible, "Synonyms")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribeConfigsSynonym::decode(r, version)?); } v };
            if version >= 3 { this.config_type = r.i8()?; }
            if version >= 3 { this.documentation = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_string(w, flexible, &self.name)?;
            match &self.value { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_bool(w, self.read_only);
            put_i8(w, self.config_source);
            put_bool(w, self.is_sensitive);
            put_array_len(w, flexible, self.synonyms.len()); for e in &self.synonyms { e.encode(w, version)?; }
            if version >= 3 { put_i8(w, self.config_type); }
            if version >= 3 { match &self.documentation { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "value"); match &self.value { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "read_only"); dump_display(out, self.read_only);
            json_key(out, &mut first, "config_source"); dump_display(out, self.config_source);
            json_key(out, &mut first, "is_sensitive"); dump_display(out, self.is_sensitive);
            json_key(out, &mut first, "synonyms"); out.push('['); for (i, e) in self.synonyms.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 3 { json_key(out, &mut first, "config_type"); dump_display(out, self.config_type); }
            if version >= 3 { json_key(out, &mut first, "documentation"); match &self.documentation { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }

    /// The synonyms for this configuration key.
    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeConfigsSynonym {
        /// The synonym name.
        /// (versions 1+)
        pub name: String,
        /// The synonym value.
        /// (versions 1+, nullable 0+)
        pub value: Option<String>,
        /// The synonym source.
        /// (versions 1+)
        pub source: i8,
    }

    impl Default for DescribeConfigsSynonym {
        fn default() -> Self {
            Self {
                name: String::new(),
                value: Some(String::new()),
                source: 0,
            }
        }
    }

    impl DescribeConfigsSynonym {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.value = r.nullable_string(flexible)?;
            this.source = r.i8()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_string(w, flexible, &self.name)?;
            match &self.value { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_i8(w, self.source);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "value"); match &self.value { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "source"); dump_display(out, self.source);
            out.push('}');
        }
    }
}
