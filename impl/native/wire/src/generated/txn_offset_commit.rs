// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct TxnOffsetCommitRequest {
        /// The ID of the transaction.
        /// (versions 0+)
        pub transactional_id: String,
        /// The ID of the group.
        /// (versions 0+)
        pub group_id: String,
        /// The current producer ID in use by the transactional ID.
        /// (versions 0+)
        pub producer_id: i64,
        /// The current epoch associated with the producer ID.
        /// (versions 0+)
        pub producer_epoch: i16,
        /// The generation of the consumer.
        /// (versions 3+, default -1)
        pub generation_id: i32,
        /// The member ID assigned by the group coordinator.
        /// (versions 3+, default )
        pub member_id: String,
        /// The unique identifier of the consumer instance provided by end user.
        /// (versions 3+, nullable 3+, default null)
        pub group_instance_id: Option<String>,
        /// Each topic that we want to commit offsets for.
        /// (versions 0+)
        pub topics: Vec<TxnOffsetCommitRequestTopic>,
    }

    impl Default for TxnOffsetCommitRequest {
        fn default() -> Self {
            Self {
                transactional_id: String::new(),
                group_id: String::new(),
                producer_id: 0,
                producer_epoch: 0,
                generation_id: -1,
                member_id: String::new(),
                group_instance_id: None,
                topics: Vec::new(),
            }
        }
    }

    impl TxnOffsetCommitRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.transactional_id = r.string(flexible, "TransactionalId")?;
            this.group_id = r.string(flexible, "GroupId")?;
            this.producer_id = r.i64()?;
            this.producer_epoch = r.i16()?;
            if version >= 3 { this.generation_id = r.i32()?; }
            if version >= 3 { this.member_id = r.string(flexible, "MemberId")?; }
            if version >= 3 { this.group_instance_id = r.nullable_string(flexible)?; }
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TxnOffsetCommitRequestTopic::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_string(w, flexible, &self.transactional_id)?;
            put_string(w, flexible, &self.group_id)?;
            put_i64(w, self.producer_id);
            put_i16(w, self.producer_epoch);
            if version >= 3 { put_i32(w, self.generation_id); } else if self.generation_id != -1 { return Err(WireError::UnsupportedField { field: "TxnOffsetCommitRequest.GenerationId", version }); }
            if version >= 3 { put_string(w, flexible, &self.member_id)?; } else if !self.member_id.is_empty() { return Err(WireError::UnsupportedField { field: "TxnOffsetCommitRequest.MemberId", version }); }
            if version >= 3 { match &self.group_instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.group_instance_id.is_some() { return Err(WireError::UnsupportedField { field: "TxnOffsetCommitRequest.GroupInstanceId", version }); }
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "transactional_id"); dump_str(out, &self.transactional_id);
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch);
            if version >= 3 { json_key(out, &mut first, "generation_id"); dump_display(out, self.generation_id); }
            if version >= 3 { json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id); }
            if version >= 3 { json_key(out, &mut first, "group_instance_id"); match &self.group_instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each topic that we want to commit offsets for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TxnOffsetCommitRequestTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The partitions inside the topic that we want to commit offsets for.
        /// (versions 0+)
        pub partitions: Vec<TxnOffsetCommitRequestPartition>,
    }

    impl TxnOffsetCommitRequestTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TxnOffsetCommitRequestPartition::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
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

    /// The partitions inside the topic that we want to commit offsets for.
    #[derive(Debug, Clone, PartialEq)]
    pub struct TxnOffsetCommitRequestPartition {
        /// The index of the partition within the topic.
        /// (versions 0+)
        pub partition_index: i32,
        /// The message offset to be committed.
        /// (versions 0+)
        pub committed_offset: i64,
        /// The leader epoch of the last consumed record.
        /// (versions 2+, default -1, ignorable)
        pub committed_leader_epoch: i32,
        /// Any associated metadata the client wants to keep.
        /// (versions 0+, nullable 0+)
        pub committed_metadata: Option<String>,
    }

    impl Default for TxnOffsetCommitRequestPartition {
        fn default() -> Self {
            Self {
                partition_index: 0,
                committed_offset: 0,
                committed_leader_epoch: -1,
                committed_metadata: Some(String::new()),
            }
        }
    }

    impl TxnOffsetCommitRequestPartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.committed_offset = r.i64()?;
            if version >= 2 { this.committed_leader_epoch = r.i32()?; }
            this.committed_metadata = r.nullable_string(flexible)?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_i32(w, self.partition_index);
            put_i64(w, self.committed_offset);
            if version >= 2 { put_i32(w, self.committed_leader_epoch); }
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
            if version >= 2 { json_key(out, &mut first, "committed_leader_epoch"); dump_display(out, self.committed_leader_epoch); }
            json_key(out, &mut first, "committed_metadata"); match &self.committed_metadata { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TxnOffsetCommitResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// The responses for each topic.
        /// (versions 0+)
        pub topics: Vec<TxnOffsetCommitResponseTopic>,
    }

    impl TxnOffsetCommitResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TxnOffsetCommitResponseTopic::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
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

    /// The responses for each topic.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TxnOffsetCommitResponseTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The responses for each partition in the topic.
        /// (versions 0+)
        pub partitions: Vec<TxnOffsetCommitResponsePartition>,
    }

    impl TxnOffsetCommitResponseTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TxnOffsetCommitResponsePartition::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
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
    pub struct TxnOffsetCommitResponsePartition {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
    }

    impl TxnOffsetCommitResponsePartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.error_code = r.i16()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
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
