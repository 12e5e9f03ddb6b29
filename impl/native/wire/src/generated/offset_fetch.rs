// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct OffsetFetchRequest {
        /// The group to fetch offsets for.
        /// (versions 0-7)
        pub group_id: String,
        /// Each topic we would like to fetch offsets for, or null to fetch offsets for all topics.
        /// (versions 0-7, nullable 2-7)
        pub topics: Option<Vec<OffsetFetchRequestTopic>>,
        /// Each group we would like to fetch offsets for.
        /// (versions 8+)
        pub groups: Vec<OffsetFetchRequestGroup>,
        /// Whether broker should hold on returning unstable offsets but set a retriable error code for the partitions.
        /// (versions 7+, default false)
        pub require_stable: bool,
    }

    impl Default for OffsetFetchRequest {
        fn default() -> Self {
            Self {
                group_id: String::new(),
                topics: Some(Vec::new()),
                groups: Vec::new(),
                require_stable: false,
            }
        }
    }

    impl OffsetFetchRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version <= 7 { this.group_id = r.string(flexible, "GroupId")?; }
            if version <= 7 { this.topics = if version >= 2 { match r.nullable_array_len(flexible)? { None => None, Some(n) => { let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchRequestTopic::decode(r, version)?); } Some(v) } } } else { Some({ let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchRequestTopic::decode(r, version)?); } v }) }; }
            if version >= 8 { this.groups = { let n = r.array_len(flexible, "Groups")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchRequestGroup::decode(r, version)?); } v }; }
            if version >= 7 { this.require_stable = r.bool()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version <= 7 { put_string(w, flexible, &self.group_id)?; } else if !self.group_id.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.GroupId", version }); }
            if version <= 7 { if version >= 2 { match &self.topics { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { e.encode(w, version)?; } } None => { put_null_array(w, flexible); } } } else { match &self.topics { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { e.encode(w, version)?; } } None => return Err(WireError::NullNotAllowed { field: "OffsetFetchRequest.Topics", version }), } } } else if self.topics.as_ref().is_none_or(|v| !v.is_empty()) { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.Topics", version }); }
            if version >= 8 { put_array_len(w, flexible, self.groups.len()); for e in &self.groups { e.encode(w, version)?; } } else if !self.groups.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.Groups", version }); }
            if version >= 7 { put_bool(w, self.require_stable); } else if self.require_stable { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.RequireStable", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version <= 7 { json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id); }
            if version <= 7 { json_key(out, &mut first, "topics"); match &self.topics { Some(v) => { out.push('['); for (i, e) in v.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); } None => out.push_str("null"), } }
            if version >= 8 { json_key(out, &mut first, "groups"); out.push('['); for (i, e) in self.groups.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if version >= 7 { json_key(out, &mut first, "require_stable"); dump_display(out, self.require_stable); }
            out.push('}');
        }
    }

    /// Each topic we would like to fetch offsets for, or null to fetch offsets for all topics.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetFetchRequestTopic {
        /// The topic name.
        /// (versions 0-7)
        pub name: String,
        /// The partition indexes we would like to fetch offsets for.
        /// (versions 0-7)
        pub partition_indexes: Vec<i32>,
    }

    impl OffsetFetchRequestTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version <= 7 { this.name = r.string(flexible, "Name")?; }
            if version <= 7 { this.partition_indexes = { let n = r.array_len(flexible, "PartitionIndexes")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version <= 7 { put_string(w, flexible, &self.name)?; } else if !self.name.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.OffsetFetchRequestTopic.Name", version }); }
            if version <= 7 { put_array_len(w, flexible, self.partition_indexes.len()); for e in &self.partition_indexes { put_i32(w, *e); } } else if !self.partition_indexes.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.OffsetFetchRequestTopic.PartitionIndexes", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version <= 7 { json_key(out, &mut first, "name"); dump_str(out, &self.name); }
            if version <= 7 { json_key(out, &mut first, "partition_indexes"); out.push('['); for (i, e) in self.partition_indexes.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']'); }
            out.push('}');
        }
    }

    /// Each group we would like to fetch offsets for.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OffsetFetchRequestGroup {
        /// The group ID.
        /// (versions 8+)
        pub group_id: String,
        /// The member id.
        /// (versions 9+, nullable 9+, default null, ignorable)
        pub member_id: Option<String>,
        /// The member epoch if using the new consumer protocol (KIP-848).
        /// (versions 9+, default -1, ignorable)
        pub member_epoch: i32,
        /// Each topic we would like to fetch offsets for, or null to fetch offsets for all topics.
        /// (versions 8+, nullable 8+)
        pub topics: Option<Vec<OffsetFetchRequestTopics>>,
    }

    impl Default for OffsetFetchRequestGroup {
        fn default() -> Self {
            Self {
                group_id: String::new(),
                member_id: None,
                member_epoch: -1,
                topics: Some(Vec::new()),
            }
        }
    }

    impl OffsetFetchRequestGroup {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version >= 8 { this.group_id = r.string(flexible, "GroupId")?; }
            if version >= 9 { this.member_id = r.nullable_string(flexible)?; }
            if version >= 9 { this.member_epoch = r.i32()?; }
            if version >= 8 { this.topics = match r.nullable_array_len(flexible)? { None => None, Some(n) => { let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchRequestTopics::decode(r, version)?); } Some(v) } }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version >= 8 { put_string(w, flexible, &self.group_id)?; } else if !self.group_id.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.OffsetFetchRequestGroup.GroupId", version }); }
            if version >= 9 { match &self.member_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if version >= 9 { put_i32(w, self.member_epoch); }
            if version >= 8 { match &self.topics { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { e.encode(w, version)?; } } None => { put_null_array(w, flexible); } } } else if self.topics.as_ref().is_none_or(|v| !v.is_empty()) { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.OffsetFetchRequestGroup.Topics", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 8 { json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id); }
            if version >= 9 { json_key(out, &mut first, "member_id"); match &self.member_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version >= 9 { json_key(out, &mut first, "member_epoch"); dump_display(out, self.member_epoch); }
            if version >= 8 { json_key(out, &mut first, "topics"); match &self.topics { Some(v) => { out.push('['); for (i, e) in v.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); } None => out.push_str("null"), } }
            out.push('}');
        }
    }

    /// Each topic we would like to fetch offsets for, or null to fetch offsets for all topics.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetFetchRequestTopics {
        /// The topic name.
        /// (versions 8+)
        pub name: String,
        /// The partition indexes we would like to fetch offsets for.
        /// (versions 8+)
        pub partition_indexes: Vec<i32>,
    }

    impl OffsetFetchRequestTopics {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version >= 8 { this.name = r.string(flexible, "Name")?; }
            if version >= 8 { this.partition_indexes = { let n = r.array_len(flexible, "PartitionIndexes")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version >= 8 { put_string(w, flexible, &self.name)?; } else if !self.name.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.OffsetFetchRequestTopics.Name", version }); }
            if version >= 8 { put_array_len(w, flexible, self.partition_indexes.len()); for e in &self.partition_indexes { put_i32(w, *e); } } else if !self.partition_indexes.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchRequest.OffsetFetchRequestTopics.PartitionIndexes", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 8 { json_key(out, &mut first, "name"); dump_str(out, &self.name); }
            if version >= 8 { json_key(out, &mut first, "partition_indexes"); out.push('['); for (i, e) in self.partition_indexes.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']'); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetFetchResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 3+, ignorable)
        pub throttle_time_ms: i32,
        /// The responses per topic.
        /// (versions 0-7)
        pub topics: Vec<OffsetFetchResponseTopic>,
        /// The top-level error code, or 0 if there was no error.
        /// (versions 2-7, default 0, ignorable)
        pub error_code: i16,
        /// The responses per group id.
        /// (versions 8+)
        pub groups: Vec<OffsetFetchResponseGroup>,
    }

    impl OffsetFetchResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version >= 3 { this.throttle_time_ms = r.i32()?; }
            if version <= 7 { this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchResponseTopic::decode(r, version)?); } v }; }
            if (2..=7).contains(&version) { this.error_code = r.i16()?; }
            if version >= 8 { this.groups = { let n = r.array_len(flexible, "Groups")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchResponseGroup::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version >= 3 { put_i32(w, self.throttle_time_ms); }
            if version <= 7 { put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; } } else if !self.topics.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.Topics", version }); }
            if (2..=7).contains(&version) { put_i16(w, self.error_code); }
            if version >= 8 { put_array_len(w, flexible, self.groups.len()); for e in &self.groups { e.encode(w, version)?; } } else if !self.groups.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.Groups", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            if version <= 7 { json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if (2..=7).contains(&version) { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            if version >= 8 { json_key(out, &mut first, "groups"); out.push('['); for (i, e) in self.groups.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// The responses per topic.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetFetchResponseTopic {
        /// The topic name.
        /// (versions 0-7)
        pub name: String,
        /// The responses per partition.
        /// (versions 0-7)
        pub partitions: Vec<OffsetFetchResponsePartition>,
    }

    impl OffsetFetchResponseTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version <= 7 { this.name = r.string(flexible, "Name")?; }
            if version <= 7 { this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchResponsePartition::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version <= 7 { put_string(w, flexible, &self.name)?; } else if !self.name.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponseTopic.Name", version }); }
            if version <= 7 { put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; } } else if !self.partitions.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponseTopic.Partitions", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version <= 7 { json_key(out, &mut first, "name"); dump_str(out, &self.name); }
            if version <= 7 { json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// The responses per partition.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OffsetFetchResponsePartition {
        /// The partition index.
        /// (versions 0-7)
        pub partition_index: i32,
        /// The committed message offset.
        /// (versions 0-7)
        pub committed_offset: i64,
        /// The leader epoch.
        /// (versions 5-7, default -1, ignorable)
        pub committed_leader_epoch: i32,
        /// The partition metadata.
        /// (versions 0-7, nullable 0-7)
        pub metadata: Option<String>,
        /// The error code, or 0 if there was no error.
        /// (versions 0-7)
        pub error_code: i16,
    }

    impl Default for OffsetFetchResponsePartition {
        fn default() -> Self {
            Self {
                partition_index: 0,
                committed_offset: 0,
                committed_leader_epoch: -1,
                metadata: Some(String::new()),
                error_code: 0,
            }
        }
    }

    impl OffsetFetchResponsePartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version <= 7 { this.partition_index = r.i32()?; }
            if version <= 7 { this.committed_offset = r.i64()?; }
            if (5..=7).contains(&version) { this.committed_leader_epoch = r.i32()?; }
            if version <= 7 { this.metadata = r.nullable_string(flexible)?; }
            if version <= 7 { this.error_code = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version <= 7 { put_i32(w, self.partition_index); } else if self.partition_index != 0 { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponsePartition.PartitionIndex", version }); }
            if version <= 7 { put_i64(w, self.committed_offset); } else if self.committed_offset != 0 { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponsePartition.CommittedOffset", version }); }
            if (5..=7).contains(&version) { put_i32(w, self.committed_leader_epoch); }
            if version <= 7 { match &self.metadata { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.metadata.as_ref().is_none_or(|v| !v.is_empty()) { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponsePartition.Metadata", version }); }
            if version <= 7 { put_i16(w, self.error_code); } else if self.error_code != 0 { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponsePartition.ErrorCode", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version <= 7 { json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index); }
            if version <= 7 { json_key(out, &mut first, "committed_offset"); dump_display(out, self.committed_offset); }
            if (5..=7).contains(&version) { json_key(out, &mut first, "committed_leader_epoch"); dump_display(out, self.committed_leader_epoch); }
            if version <= 7 { json_key(out, &mut first, "metadata"); match &self.metadata { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version <= 7 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            out.push('}');
        }
    }

    /// The responses per group id.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetFetchResponseGroup {
        /// The group ID.
        /// (versions 8+)
        pub group_id: String,
        /// The responses per topic.
        /// (versions 8+)
        pub topics: Vec<OffsetFetchResponseTopics>,
        /// The group-level error code, or 0 if there was no error.
        /// (versions 8+, default 0)
        pub error_code: i16,
    }

    impl OffsetFetchResponseGroup {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version >= 8 { this.group_id = r.string(flexible, "GroupId")?; }
            if version >= 8 { this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchResponseTopics::decode(r, version)?); } v }; }
            if version >= 8 { this.error_code = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version >= 8 { put_string(w, flexible, &self.group_id)?; } else if !self.group_id.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponseGroup.GroupId", version }); }
            if version >= 8 { put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; } } else if !self.topics.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponseGroup.Topics", version }); }
            if version >= 8 { put_i16(w, self.error_code); } else if self.error_code != 0 { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponseGroup.ErrorCode", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 8 { json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id); }
            if version >= 8 { json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if version >= 8 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            out.push('}');
        }
    }

    /// The responses per topic.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetFetchResponseTopics {
        /// The topic name.
        /// (versions 8+)
        pub name: String,
        /// The responses per partition.
        /// (versions 8+)
        pub partitions: Vec<OffsetFetchResponsePartitions>,
    }

    impl OffsetFetchResponseTopics {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version >= 8 { this.name = r.string(flexible, "Name")?; }
            if version >= 8 { this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetFetchResponsePartitions::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version >= 8 { put_string(w, flexible, &self.name)?; } else if !self.name.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponseTopics.Name", version }); }
            if version >= 8 { put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; } } else if !self.partitions.is_empty() { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponseTopics.Partitions", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 8 { json_key(out, &mut first, "name"); dump_str(out, &self.name); }
            if version >= 8 { json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// The responses per partition.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OffsetFetchResponsePartitions {
        /// The partition index.
        /// (versions 8+)
        pub partition_index: i32,
        /// The committed message offset.
        /// (versions 8+)
        pub committed_offset: i64,
        /// The leader epoch.
        /// (versions 8+, default -1, ignorable)
        pub committed_leader_epoch: i32,
        /// The partition metadata.
        /// (versions 8+, nullable 8+)
        pub metadata: Option<String>,
        /// The partition-level error code, or 0 if there was no error.
        /// (versions 8+)
        pub error_code: i16,
    }

    impl Default for OffsetFetchResponsePartitions {
        fn default() -> Self {
            Self {
                partition_index: 0,
                committed_offset: 0,
                committed_leader_epoch: -1,
                metadata: Some(String::new()),
                error_code: 0,
            }
        }
    }

    impl OffsetFetchResponsePartitions {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version >= 8 { this.partition_index = r.i32()?; }
            if version >= 8 { this.committed_offset = r.i64()?; }
            if version >= 8 { this.committed_leader_epoch = r.i32()?; }
            if version >= 8 { this.metadata = r.nullable_string(flexible)?; }
            if version >= 8 { this.error_code = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version >= 8 { put_i32(w, self.partition_index); } else if self.partition_index != 0 { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponsePartitions.PartitionIndex", version }); }
            if version >= 8 { put_i64(w, self.committed_offset); } else if self.committed_offset != 0 { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponsePartitions.CommittedOffset", version }); }
            if version >= 8 { put_i32(w, self.committed_leader_epoch); }
            if version >= 8 { match &self.metadata { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.metadata.as_ref().is_none_or(|v| !v.is_empty()) { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponsePartitions.Metadata", version }); }
            if version >= 8 { put_i16(w, self.error_code); } else if self.error_code != 0 { return Err(WireError::UnsupportedField { field: "OffsetFetchResponse.OffsetFetchResponsePartitions.ErrorCode", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 8 { json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index); }
            if version >= 8 { json_key(out, &mut first, "committed_offset"); dump_display(out, self.committed_offset); }
            if version >= 8 { json_key(out, &mut first, "committed_leader_epoch"); dump_display(out, self.committed_leader_epoch); }
            if version >= 8 { json_key(out, &mut first, "metadata"); match &self.metadata { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version >= 8 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            out.push('}');
        }
    }
}
