// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeTopicPartitionsRequest {
        /// The topics to fetch details for.
        /// (versions 0+)
        pub topics: Vec<TopicRequest>,
        /// The maximum number of partitions included in the response.
        /// (versions 0+, default 2000)
        pub response_partition_limit: i32,
        /// The first topic and partition index to fetch details for.
        /// (versions 0+, nullable 0+, default null)
        pub cursor: Option<Cursor>,
    }

    impl Default for DescribeTopicPartitionsRequest {
        fn default() -> Self {
            Self {
                topics: Vec::new(),
                response_partition_limit: 2000,
                cursor: None,
            }
        }
    }

    impl DescribeTopicPartitionsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TopicRequest::decode(r, version)?); } v };
            this.response_partition_limit = r.i32()?;
            this.cursor = if r.struct_present()? { Some(Cursor::decode(r, version)?) } else { None };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            put_i32(w, self.response_partition_limit);
            match &self.cursor { Some(v) => { put_i8(w, 1); v.encode(w, version)?; } None => { put_i8(w, -1); } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "response_partition_limit"); dump_display(out, self.response_partition_limit);
            json_key(out, &mut first, "cursor"); match &self.cursor { Some(v) => { v.dump_json(out, version); } None => out.push_str("null"), }
            out.push('}');
        }
    }

    /// The topics to fetch details for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TopicRequest {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
    }

    impl TopicRequest {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.name)?;
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            out.push('}');
        }
    }

    /// The first topic and partition index to fetch details for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct Cursor {
        /// The name for the first topic to process.
        /// (versions 0+)
        pub topic_name: String,
        /// The partition index to start with.
        /// (versions 0+)
        pub partition_index: i32,
    }

    impl Cursor {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.topic_name = r.string(flexible, "TopicName")?;
            this.partition_index = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.topic_name)?;
            put_i32(w, self.partition_index);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topic_name"); dump_str(out, &self.topic_name);
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeTopicPartitionsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+, ignorable)
        pub throttle_time_ms: i32,
        /// Each topic in the response.
        /// (versions 0+)
        pub topics: Vec<DescribeTopicPartitionsResponseTopic>,
        /// The next topic and partition index to fetch details for.
        /// (versions 0+, nullable 0+, default null)
        pub next_cursor: Option<Cursor>,
    }

    impl DescribeTopicPartitionsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribeTopicPartitionsResponseTopic::decode(r, version)?); } v };
            this.next_cursor = if r.struct_present()? { Some(Cursor::decode(r, version)?) } else { None };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i32(w, self.throttle_time_ms);
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            match &self.next_cursor { Some(v) => { put_i8(w, 1); v.encode(w, version)?; } None => { put_i8(w, -1); } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "next_cursor"); match &self.next_cursor { Some(v) => { v.dump_json(out, version); } None => out.push_str("null"), }
            out.push('}');
        }
    }

    /// Each topic in the response.
    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeTopicPartitionsResponseTopic {
        /// The topic error, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The topic name.
        /// (versions 0+, nullable 0+)
        pub name: Option<String>,
        /// The topic id.
        /// (versions 0+, ignorable)
        pub topic_id: [u8; 16],
        /// True if the topic is internal.
        /// (versions 0+, default false, ignorable)
        pub is_internal: bool,
        /// Each partition in the topic.
        /// (versions 0+)
        pub partitions: Vec<DescribeTopicPartitionsResponsePartition>,
        /// 32-bit bitfield to represent authorized operations for this topic.
        /// (versions 0+, default -2147483648)
        pub topic_authorized_operations: i32,
    }

    impl Default for DescribeTopicPartitionsResponseTopic {
        fn default() -> Self {
            Self {
                error_code: 0,
                name: Some(String::new()),
                topic_id: [0u8; 16],
                is_internal: false,
                partitions: Vec::new(),
                topic_authorized_operations: -2147483648,
            }
        }
    }

    impl DescribeTopicPartitionsResponseTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.name = r.nullable_string(flexible)?;
            this.topic_id = r.uuid()?;
            this.is_internal = r.bool()?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribeTopicPartitionsResponsePartition::decode(r, version)?); } v };
            this.topic_authorized_operations = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i16(w, self.error_code);
            match &self.name { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_uuid(w, &self.topic_id);
            put_bool(w, self.is_internal);
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            put_i32(w, self.topic_authorized_operations);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "name"); match &self.name { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "topic_id"); dump_hex(out, &self.topic_id);
            json_key(out, &mut first, "is_internal"); dump_display(out, self.is_internal);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "topic_authorized_operations"); dump_display(out, self.topic_authorized_operations);
            out.push('}');
        }
    }

    /// Each partition in the topic.
    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeTopicPartitionsResponsePartition {
        /// The partition error, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The ID of the leader broker.
        /// (versions 0+)
        pub leader_id: i32,
        /// The leader epoch of this partition.
        /// (versions 0+, default -1, ignorable)
        pub leader_epoch: i32,
        /// The set of all nodes that host this partition.
        /// (versions 0+)
        pub replica_nodes: Vec<i32>,
        /// The set of nodes that are in sync with the leader for this partition.
        /// (versions 0+)
        pub isr_nodes: Vec<i32>,
        /// The new eligible leader replicas otherwise.
        /// (versions 0+, nullable 0+, default null)
        pub eligible_leader_replicas: Option<Vec<i32>>,
        /// The last known ELR.
        /// (versions 0+, nullable 0+, default null)
        pub last_known_elr: Option<Vec<i32>>,
        /// The set of offline replicas of this partition.
        /// (versions 0+, ignorable)
        pub offline_replicas: Vec<i32>,
    }

    impl Default for DescribeTopicPartitionsResponsePartition {
        fn default() -> Self {
            Self {
                error_code: 0,
                partition_index: 0,
                leader_id: 0,
                leader_epoch: -1,
                replica_nodes: Vec::new(),
                isr_nodes: Vec::new(),
                eligible_leader_replicas: None,
                last_known_elr: None,
                offline_replicas: Vec::new(),
            }
        }
    }

    impl DescribeTopicPartitionsResponsePartition {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.partition_index = r.i32()?;
            this.leader_id = r.i32()?;
            this.leader_epoch = r.i32()?;
            this.replica_nodes = { let n = r.array_len(flexible, "ReplicaNodes")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            this.isr_nodes = { let n = r.array_len(flexible, "IsrNodes")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            this.eligible_leader_replicas = match r.nullable_array_len(flexible)? { None => None, Some(n) => { let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } Some(v) } };
            this.last_known_elr = match r.nullable_array_len(flexible)? { None => None, Some(n) => { let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } Some(v) } };
            this.offline_replicas = { let n = r.array_len(flexible, "OfflineReplicas")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i16(w, self.error_code);
            put_i32(w, self.partition_index);
            put_i32(w, self.leader_id);
            put_i32(w, self.leader_epoch);
            put_array_len(w, flexible, self.replica_nodes.len()); for e in &self.replica_nodes { put_i32(w, *e); }
            put_array_len(w, flexible, self.isr_nodes.len()); for e in &self.isr_nodes { put_i32(w, *e); }
            match &self.eligible_leader_replicas { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { put_i32(w, *e); } } None => { put_null_array(w, flexible); } }
            match &self.last_known_elr { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { put_i32(w, *e); } } None => { put_null_array(w, flexible); } }
            put_array_len(w, flexible, self.offline_replicas.len()); for e in &self.offline_replicas { put_i32(w, *e); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "leader_id"); dump_display(out, self.leader_id);
            json_key(out, &mut first, "leader_epoch"); dump_display(out, self.leader_epoch);
            json_key(out, &mut first, "replica_nodes"); out.push('['); for (i, e) in self.replica_nodes.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            json_key(out, &mut first, "isr_nodes"); out.push('['); for (i, e) in self.isr_nodes.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            json_key(out, &mut first, "eligible_leader_replicas"); match &self.eligible_leader_replicas { Some(v) => { out.push('['); for (i, e) in v.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']'); } None => out.push_str("null"), }
            json_key(out, &mut first, "last_known_elr"); match &self.last_known_elr { Some(v) => { out.push('['); for (i, e) in v.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']'); } None => out.push_str("null"), }
            json_key(out, &mut first, "offline_replicas"); out.push('['); for (i, e) in self.offline_replicas.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            out.push('}');
        }
    }

    /// The next topic and partition index to fetch details for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct Cursor {
        /// The name for the first topic to process.
        /// (versions 0+)
        pub topic_name: String,
        /// The partition index to start with.
        /// (versions 0+)
        pub partition_index: i32,
    }

    impl Cursor {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.topic_name = r.string(flexible, "TopicName")?;
            this.partition_index = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.topic_name)?;
            put_i32(w, self.partition_index);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topic_name"); dump_str(out, &self.topic_name);
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            out.push('}');
        }
    }
}
