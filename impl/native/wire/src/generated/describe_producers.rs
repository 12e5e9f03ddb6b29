// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeProducersRequest {
        /// The topics to list producers for.
        /// (versions 0+)
        pub topics: Vec<TopicRequest>,
    }

    impl DescribeProducersRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TopicRequest::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The topics to list producers for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TopicRequest {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The indexes of the partitions to list producers for.
        /// (versions 0+)
        pub partition_indexes: Vec<i32>,
    }

    impl TopicRequest {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partition_indexes = { let n = r.array_len(flexible, "PartitionIndexes")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partition_indexes.len()); for e in &self.partition_indexes { put_i32(w, *e); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "partition_indexes"); out.push('['); for (i, e) in self.partition_indexes.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeProducersResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// Each topic in the response.
        /// (versions 0+)
        pub topics: Vec<TopicResponse>,
    }

    impl DescribeProducersResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TopicResponse::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
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

    /// Each topic in the response.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TopicResponse {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// Each partition in the response.
        /// (versions 0+)
        pub partitions: Vec<PartitionResponse>,
    }

    impl TopicResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(PartitionResponse::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
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
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct PartitionResponse {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The partition error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The partition error message, which may be null if no additional details are available.
        /// (versions 0+, nullable 0+, default null)
        pub error_message: Option<String>,
        /// The active producers for the partition.
        /// (versions 0+)
        pub active_producers: Vec<ProducerState>,
    }

    impl PartitionResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.error_code = r.i16()?;
            this.error_message = r.nullable_string(flexible)?;
            this.active_producers = { let n = r.array_len(flexible, "ActiveProducers")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(ProducerState::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i32(w, self.partition_index);
            put_i16(w, self.error_code);
            match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_array_len(w, flexible, self.active_producers.len()); for e in &self.active_producers { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "active_producers"); out.push('['); for (i, e) in self.active_producers.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The active producers for the partition.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ProducerState {
        /// The producer id.
        /// (versions 0+)
        pub producer_id: i64,
        /// The producer epoch.
        /// (versions 0+)
        pub producer_epoch: i32,
        /// The last sequence number sent by the producer.
        /// (versions 0+, default -1)
        pub last_sequence: i32,
        /// The last timestamp sent by the producer.
        /// (versions 0+, default -1)
        pub last_timestamp: i64,
        /// The current epoch of the producer group.
        /// (versions 0+)
        pub coordinator_epoch: i32,
        /// The current transaction start offset of the producer.
        /// (versions 0+, default -1)
        pub current_txn_start_offset: i64,
    }

    impl Default for ProducerState {
        fn default() -> Self {
            Self {
                producer_id: 0,
                producer_epoch: 0,
                last_sequence: -1,
                last_timestamp: -1,
                coordinator_epoch: 0,
                current_txn_start_offset: -1,
            }
        }
    }

    impl ProducerState {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.producer_id = r.i64()?;
            this.producer_epoch = r.i32()?;
            this.last_sequence = r.i32()?;
            this.last_timestamp = r.i64()?;
            this.coordinator_epoch = r.i32()?;
            this.current_txn_start_offset = r.i64()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i64(w, self.producer_id);
            put_i32(w, self.producer_epoch);
            put_i32(w, self.last_sequence);
            put_i64(w, self.last_timestamp);
            put_i32(w, self.coordinator_epoch);
            put_i64(w, self.current_txn_start_offset);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch);
            json_key(out, &mut first, "last_sequence"); dump_display(out, self.last_sequence);
            json_key(out, &mut first, "last_timestamp"); dump_display(out, self.last_timestamp);
            json_key(out, &mut first, "coordinator_epoch"); dump_display(out, self.coordinator_epoch);
            json_key(out, &mut first, "current_txn_start_offset"); dump_display(out, self.current_txn_start_offset);
            out.push('}');
        }
    }
}
