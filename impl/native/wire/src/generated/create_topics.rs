// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct CreateTopicsRequest {
        /// The topics to create.
        /// (versions 0+)
        pub topics: Vec<CreatableTopic>,
        /// How long to wait in milliseconds before timing out the request.
        /// (versions 0+, default 60000)
        pub timeout_ms: i32,
        /// If true, check that the topics can be created as specified, but don't create anything.
        /// (versions 1+, default false)
        pub validate_only: bool,
    }

    impl Default for CreateTopicsRequest {
        fn default() -> Self {
            Self {
                topics: Vec::new(),
                timeout_ms: 60000,
                validate_only: false,
            }
        }
    }

    impl CreateTopicsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(CreatableTopic::decode(r, version)?); } v };
            this.timeout_ms = r.i32()?;
            this.validate_only = r.bool()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            put_i32(w, self.timeout_ms);
            put_bool(w, self.validate_only);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "timeout_ms"); dump_display(out, self.timeout_ms);
            json_key(out, &mut first, "validate_only"); dump_display(out, self.validate_only);
            out.push('}');
        }
    }

    /// The topics to create.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct CreatableTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The number of partitions to create in the topic, or -1 if we are either specifying a manual partition assignment or using the default partitions.
        /// (versions 0+)
        pub num_partitions: i32,
        /// The number of replicas to create for each partition in the topic, or -1 if we are either specifying a manual partition assignment or using the default replication factor.
        /// (versions 0+)
        pub replication_factor: i16,
        /// The manual partition assignment, or the empty array if we are using automatic assignment.
        /// (versions 0+)
        pub assignments: Vec<CreatableReplicaAssignment>,
        /// The custom topic configurations to set.
        /// (versions 0+)
        pub configs: Vec<CreatableTopicConfig>,
    }

    impl CreatableTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.num_partitions = r.i32()?;
            this.replication_factor = r.i16()?;
            this.assignments = { let n = r.array_len(flexible, "Assignments")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(CreatableReplicaAssignment::decode(r, version)?); } v };
            this.configs = { let n = r.array_len(flexible, "Configs")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(CreatableTopicConfig::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_string(w, flexible, &self.name)?;
            put_i32(w, self.num_partitions);
            put_i16(w, self.replication_factor);
            put_array_len(w, flexible, self.assignments.len()); for e in &self.assignments { e.encode(w, version)?; }
            put_array_len(w, flexible, self.configs.len()); for e in &self.configs { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "num_partitions"); dump_display(out, self.num_partitions);
            json_key(out, &mut first, "replication_factor"); dump_display(out, self.replication_factor);
            json_key(out, &mut first, "assignments"); out.push('['); for (i, e) in self.assignments.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "configs"); out.push('['); for (i, e) in self.configs.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The manual partition assignment, or the empty array if we are using automatic assignment.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct CreatableReplicaAssignment {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The brokers to place the partition on.
        /// (versions 0+)
        pub broker_ids: Vec<i32>,
    }

    impl CreatableReplicaAssignment {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.broker_ids = { let n = r.array_len(flexible, "BrokerIds")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_i32(w, self.partition_index);
            put_array_len(w, flexible, self.broker_ids.len()); for e in &self.broker_ids { put_i32(w, *e); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "broker_ids"); out.push('['); for (i, e) in self.broker_ids.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            out.push('}');
        }
    }

    /// The custom topic configurations to set.
    #[derive(Debug, Clone, PartialEq)]
    pub struct CreatableTopicConfig {
        /// The configuration name.
        /// (versions 0+)
        pub name: String,
        /// The configuration value.
        /// (versions 0+, nullable 0+)
        pub value: Option<String>,
    }

    impl Default for CreatableTopicConfig {
        fn default() -> Self {
            Self {
                name: String::new(),
                value: Some(String::new()),
            }
        }
    }

    impl CreatableTopicConfig {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.value = r.nullable_string(flexible)?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_string(w, flexible, &self.name)?;
            match &self.value { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "value"); match &self.value { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct CreateTopicsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 2+, ignorable)
        pub throttle_time_ms: i32,
        /// Results for each topic we tried to create.
        /// (versions 0+)
        pub topics: Vec<CreatableTopicResult>,
    }

    impl CreateTopicsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(CreatableTopicResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_i32(w, self.throttle_time_ms);
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Results for each topic we tried to create.
    #[derive(Debug, Clone, PartialEq)]
    pub struct CreatableTopicResult {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The unique topic ID.
        /// (versions 7+, ignorable)
        pub topic_id: [u8; 16],
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The error message, or null if there was no error.
        /// (versions 1+, nullable 0+, ignorable)
        pub error_message: Option<String>,
        /// Optional topic config error returned if configs are not returned in the response.
        /// (versions 5+, tag 0 in 5+, ignorable)
        pub topic_config_error_code: i16,
        /// Number of partitions of the topic.
        /// (versions 5+, default -1, ignorable)
        pub num_partitions: i32,
        /// Replication factor of the topic.
        /// (versions 5+, default -1, ignorable)
        pub replication_factor: i16,
        /// Configuration of the topic.
        /// (versions 5+, nullable 5+, ignorable)
        pub configs: Option<Vec<CreatableTopicConfigs>>,
    }

    impl Default for CreatableTopicResult {
        fn default() -> Self {
            Self {
                name: String::new(),
                topic_id: [0u8; 16],
                error_code: 0,
                error_message: Some(String::new()),
                topic_config_error_code: 0,
                num_partitions: -1,
                replication_factor: -1,
                configs: Some(Vec::new()),
            }
        }
    }

    impl CreatableTopicResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            if version >= 7 { this.topic_id = r.uuid()?; }
            this.error_code = r.i16()?;
            this.error_message = r.nullable_string(flexible)?;
            if version >= 5 { this.num_partitions = r.i32()?; }
            if version >= 5 { this.replication_factor = r.i16()?; }
            if version >= 5 { this.configs = match r.nullable_array_len(flexible)? { None => None, Some(n) => { let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(CreatableTopicConfigs::decode(r, version)?); } Some(v) } }; }
            if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; match tag { 0 if version >= 5 => this.topic_config_error_code = t.i16()?, _ => { let _ = &mut t; } } } }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_string(w, flexible, &self.name)?;
            if version >= 7 { put_uuid(w, &self.topic_id); }
            put_i16(w, self.error_code);
            match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            if version >= 5 { put_i32(w, self.num_partitions); }
            if version >= 5 { put_i16(w, self.replication_factor); }
            if version >= 5 { match &self.configs { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { e.encode(w, version)?; } } None => { put_null_array(w, flexible); } } }
            if flexible {
                let mut tags = 0u32;
                if version >= 5 && self.topic_config_error_code != 0 { tags += 1; }
                put_uvarint(w, tags);
                if version >= 5 && self.topic_config_error_code != 0 { put_uvarint(w, 0); let mut t = Vec::new(); put_i16(&mut t, self.topic_config_error_code); put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
        }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            if version >= 7 { json_key(out, &mut first, "topic_id"); dump_hex(out, &self.topic_id); }
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            if version >= 5 { json_key(out, &mut first, "topic_config_error_code"); dump_display(out, self.topic_config_error_code); }
            if version >= 5 { json_key(out, &mut first, "num_partitions"); dump_display(out, self.num_partitions); }
            if version >= 5 { json_key(out, &mut first, "replication_factor"); dump_display(out, self.replication_factor); }
            if version >= 5 { json_key(out, &mut first, "configs"); match &self.configs { Some(v) => { out.push('['); for (i, e) in v.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); } None => out.push_str("null"), } }
            out.push('}');
        }
    }

    /// Configuration of the topic.
    #[derive(Debug, Clone, PartialEq)]
    pub struct CreatableTopicConfigs {
        /// The configuration name.
        /// (versions 5+)
        pub name: String,
        /// The configuration value.
        /// (versions 5+, nullable 5+)
        pub value: Option<String>,
        /// True if the configuration is read-only.
        /// (versions 5+)
        pub read_only: bool,
        /// The configuration source.
        /// (versions 5+, default -1, ignorable)
        pub config_source: i8,
        /// True if this configuration is sensitive.
        /// (versions 5+)
        pub is_sensitive: bool,
    }

    impl Default for CreatableTopicConfigs {
        fn default() -> Self {
            Self {
                name: String::new(),
                value: Some(String::new()),
                read_only: false,
                config_source: -1,
                is_sensitive: false,
            }
        }
    }

    impl CreatableTopicConfigs {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            if version >= 5 { this.name = r.string(flexible, "Name")?; }
            if version >= 5 { this.value = r.nullable_string(flexible)?; }
            if version >= 5 { this.read_only = r.bool()?; }
            if version >= 5 { this.config_source = r.i8()?; }
            if version >= 5 { this.is_sensitive = r.bool()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            if version >= 5 { put_string(w, flexible, &self.name)?; } else if !self.name.is_empty() { return Err(WireError::UnsupportedField { field: "CreateTopicsResponse.CreatableTopicConfigs.Name", version }); }
            if version >= 5 { match &self.value { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.value.as_ref().is_none_or(|v| !v.is_empty()) { return Err(WireError::UnsupportedField { field: "CreateTopicsResponse.CreatableTopicConfigs.Value", version }); }
            if version >= 5 { put_bool(w, self.read_only); } else if self.read_only { return Err(WireError::UnsupportedField { field: "CreateTopicsResponse.CreatableTopicConfigs.ReadOnly", version }); }
            if version >= 5 { put_i8(w, self.config_source); }
            if version >= 5 { put_bool(w, self.is_sensitive); } else if self.is_sensitive { return Err(WireError::UnsupportedField { field: "CreateTopicsResponse.CreatableTopicConfigs.IsSensitive", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 5 { json_key(out, &mut first, "name"); dump_str(out, &self.name); }
            if version >= 5 { json_key(out, &mut first, "value"); match &self.value { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version >= 5 { json_key(out, &mut first, "read_only"); dump_display(out, self.read_only); }
            if version >= 5 { json_key(out, &mut first, "config_source"); dump_display(out, self.config_source); }
            if version >= 5 { json_key(out, &mut first, "is_sensitive"); dump_display(out, self.is_sensitive); }
            out.push('}');
        }
    }
}
