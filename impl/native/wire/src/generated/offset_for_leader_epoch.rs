// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct OffsetForLeaderEpochRequest {
        /// The broker ID of the follower, of -1 if this request is from a consumer.
        /// (versions 3+, default -2, ignorable)
        pub replica_id: i32,
        /// Each topic to get offsets for.
        /// (versions 0+)
        pub topics: Vec<OffsetForLeaderTopic>,
    }

    impl Default for OffsetForLeaderEpochRequest {
        fn default() -> Self {
            Self {
                replica_id: -2,
                topics: Vec::new(),
            }
        }
    }

    impl OffsetForLeaderEpochRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            if version >= 3 { this.replica_id = r.i32()?; }
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetForLeaderTopic::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            if version >= 3 { put_i32(w, self.replica_id); }
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "replica_id"); dump_display(out, self.replica_id); }
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each topic to get offsets for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetForLeaderTopic {
        /// The topic name.
        /// (versions 0+)
        pub topic: String,
        /// Each partition to get offsets for.
        /// (versions 0+)
        pub partitions: Vec<OffsetForLeaderPartition>,
    }

    impl OffsetForLeaderTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.topic = r.string(flexible, "Topic")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetForLeaderPartition::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_string(w, flexible, &self.topic)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topic"); dump_str(out, &self.topic);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each partition to get offsets for.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OffsetForLeaderPartition {
        /// The partition index.
        /// (versions 0+)
        pub partition: i32,
        /// An epoch used to fence consumers/replicas with old metadata. If the epoch provided by the client is larger than the current epoch known to the broker, then the UNKNOWN_LEADER_EPOCH error code will be returned. If the provided epoch is smaller, then the FENCED_LEADER_EPOCH error code will be returned.
        /// (versions 2+, default -1, ignorable)
        pub current_leader_epoch: i32,
        /// The epoch to look up an offset for.
        /// (versions 0+)
        pub leader_epoch: i32,
    }

    impl Default for OffsetForLeaderPartition {
        fn default() -> Self {
            Self {
                partition: 0,
                current_leader_epoch: -1,
                leader_epoch: 0,
            }
        }
    }

    impl OffsetForLeaderPartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.partition = r.i32()?;
            this.current_leader_epoch = r.i32()?;
            this.leader_epoch = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_i32(w, self.partition);
            put_i32(w, self.current_leader_epoch);
            put_i32(w, self.leader_epoch);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition"); dump_display(out, self.partition);
            json_key(out, &mut first, "current_leader_epoch"); dump_display(out, self.current_leader_epoch);
            json_key(out, &mut first, "leader_epoch"); dump_display(out, self.leader_epoch);
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetForLeaderEpochResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 2+, ignorable)
        pub throttle_time_ms: i32,
        /// Each topic we fetched offsets for.
        /// (versions 0+)
        pub topics: Vec<OffsetForLeaderTopicResult>,
    }

    impl OffsetForLeaderEpochResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(OffsetForLeaderTopicResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
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

    /// Each topic we fetched offsets for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct OffsetForLeaderTopicResult {
        /// The topic name.
        /// (versions 0+)
        pub topic: String,
        /// Each partition in the topic we fetched offsets for.
        /// (versions 0+)
        pub partitions: Vec<EpochEndOffset>,
    }

    impl OffsetForLeaderTopicResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.topic = r.string(flexible, "Topic")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(EpochEndOffset::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_string(w, flexible, &self.topic)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topic"); dump_str(out, &self.topic);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each partition in the topic we fetched offsets for.
    #[derive(Debug, Clone, PartialEq)]
    pub struct EpochEndOffset {
        /// The error code 0, or if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The partition index.
        /// (versions 0+)
        pub partition: i32,
        /// The leader epoch of the partition.
        /// (versions 1+, default -1, ignorable)
        pub leader_epoch: i32,
        /// The end offset of the epoch.
        /// (versions 0+, default -1)
        pub end_offset: i64,
    }

    impl Default for EpochEndOffset {
        fn default() -> Self {
            Self {
                error_code: 0,
                partition: 0,
                leader_epoch: -1,
                end_offset: -1,
            }
        }
    }

    impl EpochEndOffset {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.partition = r.i32()?;
            this.leader_epoch = r.i32()?;
            this.end_offset = r.i64()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_i16(w, self.error_code);
            put_i32(w, self.partition);
            put_i32(w, self.leader_epoch);
            put_i64(w, self.end_offset);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "partition"); dump_display(out, self.partition);
            json_key(out, &mut first, "leader_epoch"); dump_display(out, self.leader_epoch);
            json_key(out, &mut first, "end_offset"); dump_display(out, self.end_offset);
            out.push('}');
        }
    }
}
