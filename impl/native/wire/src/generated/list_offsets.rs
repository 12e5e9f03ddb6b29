// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ListOffsetsRequest {
        /// The broker ID of the requester, or -1 if this request is being made by a normal consumer.
        /// (versions 0+)
        pub replica_id: i32,
        /// This setting controls the visibility of transactional records. Using READ_UNCOMMITTED (isolation_level = 0) makes all records visible. With READ_COMMITTED (isolation_level = 1), non-transactional and COMMITTED transactional records are visible. To be more concrete, READ_COMMITTED returns all data from offsets smaller than the current LSO (last stable offset), and enables the inclusion of the list of aborted transactions in the result, which allows consumers to discard ABORTED transactional records.
        /// (versions 2+)
        pub isolation_level: i8,
        /// Each topic in the request.
        /// (versions 0+)
        pub topics: Vec<ListOffsetsTopic>,
        /// The timeout to await a response in milliseconds for requests that require reading from remote storage for topics enabled with tiered storage.
        /// (versions 10+, ignorable)
        pub timeout_ms: i32,
    }

    impl ListOffsetsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            this.replica_id = r.i32()?;
            if version >= 2 { this.isolation_level = r.i8()?; }
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(ListOffsetsTopic::decode(r, version)?); } v };
            if version >= 10 { this.timeout_ms = r.i32()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            put_i32(w, self.replica_id);
            if version >= 2 { put_i8(w, self.isolation_level); } else if self.isolation_level != 0 { return Err(WireError::UnsupportedField { field: "ListOffsetsRequest.IsolationLevel", version }); }
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if version >= 10 { put_i32(w, self.timeout_ms); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "replica_id"); dump_display(out, self.replica_id);
            if version >= 2 { json_key(out, &mut first, "isolation_level"); dump_display(out, self.isolation_level); }
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 10 { json_key(out, &mut first, "timeout_ms"); dump_display(out, self.timeout_ms); }
            out.push('}');
        }
    }

    /// Each topic in the request.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ListOffsetsTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// Each partition in the request.
        /// (versions 0+)
        pub partitions: Vec<ListOffsetsPartition>,
    }

    impl ListOffsetsTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(ListOffsetsPartition::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
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

    /// Each partition in the request.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ListOffsetsPartition {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The current leader epoch.
        /// (versions 4+, default -1, ignorable)
        pub current_leader_epoch: i32,
        /// The current timestamp.
        /// (versions 0+)
        pub timestamp: i64,
    }

    impl Default for ListOffsetsPartition {
        fn default() -> Self {
            Self {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp: 0,
            }
        }
    }

    impl ListOffsetsPartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            if version >= 4 { this.current_leader_epoch = r.i32()?; }
            this.timestamp = r.i64()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            put_i32(w, self.partition_index);
            if version >= 4 { put_i32(w, self.current_leader_epoch); }
            put_i64(w, self.timestamp);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            if version >= 4 { json_key(out, &mut first, "current_leader_epoch"); dump_display(out, self.current_leader_epoch); }
            json_key(out, &mut first, "timestamp"); dump_display(out, self.timestamp);
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ListOffsetsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 2+, ignorable)
        pub throttle_time_ms: i32,
        /// Each topic in the response.
        /// (versions 0+)
        pub topics: Vec<ListOffsetsTopicResponse>,
    }

    impl ListOffsetsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version >= 2 { this.throttle_time_ms = r.i32()?; }
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(ListOffsetsTopicResponse::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version >= 2 { put_i32(w, self.throttle_time_ms); }
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 2 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each topic in the response.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ListOffsetsTopicResponse {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// Each partition in the response.
        /// (versions 0+)
        pub partitions: Vec<ListOffsetsPartitionResponse>,
    }

    impl ListOffsetsTopicResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(ListOffsetsPartitionResponse::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
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

    /// Each partition in the response.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ListOffsetsPartitionResponse {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The partition error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The timestamp associated with the returned offset.
        /// (versions 1+, default -1)
        pub timestamp: i64,
        /// The returned offset.
        /// (versions 1+, default -1)
        pub offset: i64,
        /// The leader epoch associated with the returned offset.
        /// (versions 4+, default -1)
        pub leader_epoch: i32,
    }

    impl Default for ListOffsetsPartitionResponse {
        fn default() -> Self {
            Self {
                partition_index: 0,
                error_code: 0,
                timestamp: -1,
                offset: -1,
                leader_epoch: -1,
            }
        }
    }

    impl ListOffsetsPartitionResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.error_code = r.i16()?;
            this.timestamp = r.i64()?;
            this.offset = r.i64()?;
            if version >= 4 { this.leader_epoch = r.i32()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            put_i32(w, self.partition_index);
            put_i16(w, self.error_code);
            put_i64(w, self.timestamp);
            put_i64(w, self.offset);
            if version >= 4 { put_i32(w, self.leader_epoch); } else if self.leader_epoch != -1 { return Err(WireError::UnsupportedField { field: "ListOffsetsResponse.ListOffsetsPartitionResponse.LeaderEpoch", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "timestamp"); dump_display(out, self.timestamp);
            json_key(out, &mut first, "offset"); dump_display(out, self.offset);
            if version >= 4 { json_key(out, &mut first, "leader_epoch"); dump_display(out, self.leader_epoch); }
            out.push('}');
        }
    }
}
