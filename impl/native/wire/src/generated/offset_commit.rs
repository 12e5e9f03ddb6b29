// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct OffsetCommitRequest {
        /// The unique group identifier.
        /// (versions 0+)
        pub group_id: String,
        /// The generation of the group if using the classic group protocol or the member epoch if using the consumer protocol.
        /// (versions 1+, default -1, ignorable)
        pub generation_id_or_member_epoch: i32,
        /// The member ID assigned by the group coordinator.
        /// (versions 1+, ignorable)
        pub member_id: String,
        /// The unique identifier of the consumer instance provided by end user.
        /// (versions 7+, nullable 7+, default null)
        pub group_instance_id: Option<String>,
        /// The time period in ms to retain the offset.
        /// (versions 2-4, default -1, ignorable)
        pub retention_time_ms: i64,
        /// The topics to commit offsets for.
        /// (versions 0+)
        pub topics: Vec<OffsetCommitRequestTopic>,
    }

    impl Default for OffsetCommitRequest {
        fn default() -> Self {
            Self {
                group_id: String::new(),
                generation_id_or_member_epoch: -1,
                member_id: String::new(),
                group_instance_id: None,
                retention_time_ms: -1,
                topics: Vec::new(),
            }
        }
    }

    impl OffsetCommitRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 8;
            let mut this = Self::default();
            this.group_id = r.string(flexible, "GroupId")?;
            this.generation_id_or_member_epoch = r.i32()?;
            this.member_id = r.string(flexible, "MemberId")?;
            if version >= 7 { this.group_instance_id = r.nullable_string(flexible)?; }
            if version <= 4 { this.retention_time_ms = r.i64()?; }
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetCommitRequestTopic::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 8;
            put_string(w, flexible, &self.group_id)?;
            put_i32(w, self.generation_id_or_member_epoch);
            put_string(w, flexible, &self.member_id)?;
            if version >= 7 { match &self.group_instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.group_instance_id.is_some() { return Err(WireError::UnsupportedField { field: "OffsetCommitRequest.GroupInstanceId", version }); }
            if version <= 4 { put_i64(w, self.retention_time_ms); }
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "generation_id_or_member_epoch"); dump_display(out, self.generation_id_or_member_epoch);
            json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id);
            if version >= 7 { json_key(out, &mut first, "group_instance_id"); match &self.group_instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version <= 4 { json_key(out, &mut first, "retention_time_ms"); dump_display(out, self.retention_time_ms); }
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The topics to commit offsets for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetCommitRequestTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// Each partition to commit offsets for.
        /// (versions 0+)
        pub partitions: Vec<OffsetCommitRequestPartition>,
    }

    impl OffsetCommitRequestTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 8;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetCommitRequestPartition::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 8;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each partition to commit offsets for.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OffsetCommitRequestPartition {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The message offset to be committed.
        /// (versions 0+)
        pub committed_offset: i64,
        /// The leader epoch of this partition.
        /// (versions 6+, default -1, ignorable)
        pub committed_leader_epoch: i32,
        /// Any associated metadata the client wants to keep.
        /// (versions 0+, nullable 0+)
        pub committed_metadata: Option<String>,
    }

    impl Default for OffsetCommitRequestPartition {
        fn default() -> Self {
            Self {
                partition_index: 0,
                committed_offset: 0,
                committed_leader_epoch: -1,
                committed_metadata: Some(String::new()),
            }
        }
    }

    impl OffsetCommitRequestPartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 8;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.committed_offset = r.i64()?;
            if version >= 6 { this.committed_leader_epoch = r.i32()?; }
            this.committed_metadata = r.nullable_string(flexible)?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 8;
            put_i32(w, self.partition_index);
            put_i64(w, self.committed_offset);
            if version >= 6 { put_i32(w, self.committed_leader_epoch); }
            match &self.committed_metadata { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "committed_offset"); dump_display(out, self.committed_offset);
            if version >= 6 { json_key(out, &mut first, "committed_leader_epoch"); dump_display(out, self.committed_leader_epoch); }
            json_key(out, &mut first, "committed_metadata"); match &self.committed_metadata { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetCommitResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 3+, ignorable)
        pub throttle_time_ms: i32,
        /// The responses for each topic.
        /// (versions 0+)
        pub topics: Vec<OffsetCommitResponseTopic>,
    }

    impl OffsetCommitResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 8;
            let mut this = Self::default();
            if version >= 3 { this.throttle_time_ms = r.i32()?; }
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetCommitResponseTopic::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 8;
            if version >= 3 { put_i32(w, self.throttle_time_ms); }
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The responses for each topic.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetCommitResponseTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The responses for each partition in the topic.
        /// (versions 0+)
        pub partitions: Vec<OffsetCommitResponsePartition>,
    }

    impl OffsetCommitResponseTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 8;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetCommitResponsePartition::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 8;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The responses for each partition in the topic.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetCommitResponsePartition {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
    }

    impl OffsetCommitResponsePartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 8;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.error_code = r.i16()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 8;
            put_i32(w, self.partition_index);
            put_i16(w, self.error_code);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            out.push('}');
        }
    }
}
