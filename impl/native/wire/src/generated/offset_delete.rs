// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetDeleteRequest {
        /// The unique group identifier.
        /// (versions 0+)
        pub group_id: String,
        /// The topics to delete offsets for.
        /// (versions 0+)
        pub topics: Vec<OffsetDeleteRequestTopic>,
    }

    impl OffsetDeleteRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = false;
            let mut this = Self::default();
            this.group_id = r.string(flexible, "GroupId")?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetDeleteRequestTopic::decode(r, version)?); } v };
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = false;
            put_string(w, flexible, &self.group_id)?;
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The topics to delete offsets for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetDeleteRequestTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// Each partition to delete offsets for.
        /// (versions 0+)
        pub partitions: Vec<OffsetDeleteRequestPartition>,
    }

    impl OffsetDeleteRequestTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = false;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetDeleteRequestPartition::decode(r, version)?); } v };
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = false;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
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

    /// Each partition to delete offsets for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetDeleteRequestPartition {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
    }

    impl OffsetDeleteRequestPartition {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            put_i32(w, self.partition_index);
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetDeleteResponse {
        /// The top-level error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+, ignorable)
        pub throttle_time_ms: i32,
        /// The responses for each topic.
        /// (versions 0+)
        pub topics: Vec<OffsetDeleteResponseTopic>,
    }

    impl OffsetDeleteResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = false;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.throttle_time_ms = r.i32()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetDeleteResponseTopic::decode(r, version)?); } v };
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = false;
            put_i16(w, self.error_code);
            put_i32(w, self.throttle_time_ms);
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The responses for each topic.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetDeleteResponseTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The responses for each partition in the topic.
        /// (versions 0+)
        pub partitions: Vec<OffsetDeleteResponsePartition>,
    }

    impl OffsetDeleteResponseTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = false;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetDeleteResponsePartition::decode(r, version)?); } v };
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = false;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
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
    pub struct OffsetDeleteResponsePartition {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
    }

    impl OffsetDeleteResponsePartition {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.error_code = r.i16()?;
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            put_i32(w, self.partition_index);
            put_i16(w, self.error_code);
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
