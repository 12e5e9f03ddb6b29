// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ProduceRequest {
        /// The transactional ID, or null if the producer is not transactional.
        /// (versions 3+, nullable 3+, default null)
        pub transactional_id: Option<String>,
        /// The number of acknowledgments the producer requires the leader to have received before considering a request complete. Allowed values: 0 for no acknowledgments, 1 for only the leader and -1 for the full ISR.
        /// (versions 0+)
        pub acks: i16,
        /// The timeout to await a response in milliseconds.
        /// (versions 0+)
        pub timeout_ms: i32,
        /// Each topic to produce to.
        /// (versions 0+)
        pub topic_data: Vec<TopicProduceData>,
    }

    impl ProduceRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.transactional_id = r.nullable_string(flexible)?;
            this.acks = r.i16()?;
            this.timeout_ms = r.i32()?;
            this.topic_data = { let n = r.array_len(flexible, "TopicData")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TopicProduceData::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            match &self.transactional_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_i16(w, self.acks);
            put_i32(w, self.timeout_ms);
            put_array_len(w, flexible, self.topic_data.len()); for e in &self.topic_data { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "transactional_id"); match &self.transactional_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "acks"); dump_display(out, self.acks);
            json_key(out, &mut first, "timeout_ms"); dump_display(out, self.timeout_ms);
            json_key(out, &mut first, "topic_data"); out.push('['); for (i, e) in self.topic_data.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each topic to produce to.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TopicProduceData {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// Each partition to produce to.
        /// (versions 0+)
        pub partition_data: Vec<PartitionProduceData>,
    }

    impl TopicProduceData {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partition_data = { let n = r.array_len(flexible, "PartitionData")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(PartitionProduceData::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partition_data.len()); for e in &self.partition_data { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "partition_data"); out.push('['); for (i, e) in self.partition_data.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each partition to produce to.
    #[derive(Debug, Clone, PartialEq)]
    pub struct PartitionProduceData {
        /// The partition index.
        /// (versions 0+)
        pub index: i32,
        /// The record data to be produced.
        /// (versions 0+, nullable 0+)
        pub records: Option<Vec<u8>>,
    }

    impl Default for PartitionProduceData {
        fn default() -> Self {
            Self {
                index: 0,
                records: Some(Vec::new()),
            }
        }
    }

    impl PartitionProduceData {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.index = r.i32()?;
            this.records = r.nullable_bytes(flexible)?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            put_i32(w, self.index);
            match &self.records { Some(v) => { put_bytes(w, flexible, v); } None => { put_null_bytes(w, flexible); } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "index"); dump_display(out, self.index);
            json_key(out, &mut first, "records"); match &self.records { Some(v) => { dump_hex(out, v); } None => out.push_str("null"), }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ProduceResponse {
        /// Each produce response.
        /// (versions 0+)
        pub responses: Vec<TopicProduceResponse>,
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 1+, default 0, ignorable)
        pub throttle_time_ms: i32,
        /// Endpoints for all current-leaders enumerated in PartitionProduceResponses, with errors NOT_LEADER_OR_FOLLOWER.
        /// (versions 10+, tag 0 in 10+)
        pub node_endpoints: Vec<NodeEndpoint>,
    }

    impl ProduceResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.responses = { let n = r.array_len(flexible, "Responses")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TopicProduceResponse::decode(r, version)?); } v };
            this.throttle_time_ms = r.i32()?;
            if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; match tag { 0 if version >= 10 => this.node_endpoints = { let n = t.array_len(true, "NodeEndpoints")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(NodeEndpoint::decode(&mut t, version)?); } v }, _ => { let _ = &mut t; } } } }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            put_array_len(w, flexible, self.responses.len()); for e in &self.responses { e.encode(w, version)?; }
            put_i32(w, self.throttle_time_ms);
            if version < 10 && !self.node_endpoints.is_empty() { return Err(WireError::UnsupportedField { field: "ProduceResponse.NodeEndpoints", version }); }
            if flexible {
                let mut tags = 0u32;
                if version >= 10 && !self.node_endpoints.is_empty() { tags += 1; }
                put_uvarint(w, tags);
                if version >= 10 && !self.node_endpoints.is_empty() { put_uvarint(w, 0); let mut t = Vec::new(); put_array_len(&mut t, true, self.node_endpoints.len()); for e in &self.node_endpoints { e.encode(&mut t, version)?; } put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
        }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "responses"); out.push('['); for (i, e) in self.responses.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            if version >= 10 { json_key(out, &mut first, "node_endpoints"); out.push('['); for (i, e) in self.node_endpoints.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// Each produce response.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TopicProduceResponse {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// Each partition that we produced to within the topic.
        /// (versions 0+)
        pub partition_responses: Vec<PartitionProduceResponse>,
    }

    impl TopicProduceResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partition_responses = { let n = r.array_len(flexible, "PartitionResponses")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(PartitionProduceResponse::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partition_responses.len()); for e in &self.partition_responses { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "partition_responses"); out.push('['); for (i, e) in self.partition_responses.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each partition that we produced to within the topic.
    #[derive(Debug, Clone, PartialEq)]
    pub struct PartitionProduceResponse {
        /// The partition index.
        /// (versions 0+)
        pub index: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The base offset.
        /// (versions 0+)
        pub base_offset: i64,
        /// The timestamp returned by broker after appending the messages. If CreateTime is used for the topic, the timestamp will be -1.  If LogAppendTime is used for the topic, the timestamp will be the broker local time when the messages are appended.
        /// (versions 2+, default -1, ignorable)
        pub log_append_time_ms: i64,
        /// The log start offset.
        /// (versions 5+, default -1, ignorable)
        pub log_start_offset: i64,
        /// The batch indices of records that caused the batch to be dropped.
        /// (versions 8+, ignorable)
        pub record_errors: Vec<BatchIndexAndErrorMessage>,
        /// The global error message summarizing the common root cause of the records that caused the batch to be dropped.
        /// (versions 8+, nullable 8+, default null, ignorable)
        pub error_message: Option<String>,
        /// The leader broker that the producer should use for future requests.
        /// (versions 10+, tag 0 in 10+)
        pub current_leader: LeaderIdAndEpoch,
    }

    impl Default for PartitionProduceResponse {
        fn default() -> Self {
            Self {
                index: 0,
                error_code: 0,
                base_offset: 0,
                log_append_time_ms: -1,
                log_start_offset: -1,
                record_errors: Vec::new(),
                error_message: None,
                current_leader: LeaderIdAndEpoch::default(),
            }
        }
    }

    impl PartitionProduceResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.index = r.i32()?;
            this.error_code = r.i16()?;
            this.base_offset = r.i64()?;
            this.log_append_time_ms = r.i64()?;
            if version >= 5 { this.log_start_offset = r.i64()?; }
            if version >= 8 { this.record_errors = { let n = r.array_len(flexible, "RecordErrors")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(BatchIndexAndErrorMessage::decode(r, version)?); } v }; }
            if version >= 8 { this.error_message = r.nullable_string(flexible)?; }
            if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; match tag { 0 if version >= 10 => this.current_leader = LeaderIdAndEpoch::decode(&mut t, version)?, _ => { let _ = &mut t; } } } }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            put_i32(w, self.index);
            put_i16(w, self.error_code);
            put_i64(w, self.base_offset);
            put_i64(w, self.log_append_time_ms);
            if version >= 5 { put_i64(w, self.log_start_offset); }
            if version >= 8 { put_array_len(w, flexible, self.record_errors.len()); for e in &self.record_errors { e.encode(w, version)?; } }
            if version >= 8 { match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if version < 10 && self.current_leader != LeaderIdAndEpoch::default() { return Err(WireError::UnsupportedField { field: "ProduceResponse.PartitionProduceResponse.CurrentLeader", version }); }
            if flexible {
                let mut tags = 0u32;
                if version >= 10 && self.current_leader != LeaderIdAndEpoch::default() { tags += 1; }
                put_uvarint(w, tags);
                if version >= 10 && self.current_leader != LeaderIdAndEpoch::default() { put_uvarint(w, 0); let mut t = Vec::new(); self.current_leader.encode(&mut t, version)?; put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
        }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "index"); dump_display(out, self.index);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "base_offset"); dump_display(out, self.base_offset);
            json_key(out, &mut first, "log_append_time_ms"); dump_display(out, self.log_append_time_ms);
            if version >= 5 { json_key(out, &mut first, "log_start_offset"); dump_display(out, self.log_start_offset); }
            if version >= 8 { json_key(out, &mut first, "record_errors"); out.push('['); for (i, e) in self.record_errors.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if version >= 8 { json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version >= 10 { json_key(out, &mut first, "current_leader"); self.current_leader.dump_json(out, version); }
            out.push('}');
        }
    }

    /// The batch indices of records that caused the batch to be dropped.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct BatchIndexAndErrorMessage {
        /// The batch index of the record that caused the batch to be dropped.
        /// (versions 8+)
        pub batch_index: i32,
        /// The error message of the record that caused the batch to be dropped.
        /// (versions 8+, nullable 8+, default null)
        pub batch_index_error_message: Option<String>,
    }

    impl BatchIndexAndErrorMessage {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            if version >= 8 { this.batch_index = r.i32()?; }
            if version >= 8 { this.batch_index_error_message = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            if version >= 8 { put_i32(w, self.batch_index); } else if self.batch_index != 0 { return Err(WireError::UnsupportedField { field: "ProduceResponse.BatchIndexAndErrorMessage.BatchIndex", version }); }
            if version >= 8 { match &self.batch_index_error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.batch_index_error_message.is_some() { return Err(WireError::UnsupportedField { field: "ProduceResponse.BatchIndexAndErrorMessage.BatchIndexErrorMessage", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 8 { json_key(out, &mut first, "batch_index"); dump_display(out, self.batch_index); }
            if version >= 8 { json_key(out, &mut first, "batch_index_error_message"); match &self.batch_index_error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }

    /// The leader broker that the producer should use for future requests.
    #[derive(Debug, Clone, PartialEq)]
    pub struct LeaderIdAndEpoch {
        /// The ID of the current leader or -1 if the leader is unknown.
        /// (versions 10+, default -1)
        pub leader_id: i32,
        /// The latest known leader epoch.
        /// (versions 10+, default -1)
        pub leader_epoch: i32,
    }

    impl Default for LeaderIdAndEpoch {
        fn default() -> Self {
            Self {
                leader_id: -1,
                leader_epoch: -1,
            }
        }
    }

    impl LeaderIdAndEpoch {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            if version >= 10 { this.leader_id = r.i32()?; }
            if version >= 10 { this.leader_epoch = r.i32()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            if version >= 10 { put_i32(w, self.leader_id); } else if self.leader_id != -1 { return Err(WireError::UnsupportedField { field: "ProduceResponse.LeaderIdAndEpoch.LeaderId", version }); }
            if version >= 10 { put_i32(w, self.leader_epoch); } else if self.leader_epoch != -1 { return Err(WireError::UnsupportedField { field: "ProduceResponse.LeaderIdAndEpoch.LeaderEpoch", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 10 { json_key(out, &mut first, "leader_id"); dump_display(out, self.leader_id); }
            if version >= 10 { json_key(out, &mut first, "leader_epoch"); dump_display(out, self.leader_epoch); }
            out.push('}');
        }
    }

    /// Endpoints for all current-leaders enumerated in PartitionProduceResponses, with errors NOT_LEADER_OR_FOLLOWER.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct NodeEndpoint {
        /// The ID of the associated node.
        /// (versions 10+)
        pub node_id: i32,
        /// The node's hostname.
        /// (versions 10+)
        pub host: String,
        /// The node's port.
        /// (versions 10+)
        pub port: i32,
        /// The rack of the node, or null if it has not been assigned to a rack.
        /// (versions 10+, nullable 10+, default null)
        pub rack: Option<String>,
    }

    impl NodeEndpoint {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            if version >= 10 { this.node_id = r.i32()?; }
            if version >= 10 { this.host = r.string(flexible, "Host")?; }
            if version >= 10 { this.port = r.i32()?; }
            if version >= 10 { this.rack = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            if version >= 10 { put_i32(w, self.node_id); } else if self.node_id != 0 { return Err(WireError::UnsupportedField { field: "ProduceResponse.NodeEndpoint.NodeId", version }); }
            if version >= 10 { put_string(w, flexible, &self.host)?; } else if !self.host.is_empty() { return Err(WireError::UnsupportedField { field: "ProduceResponse.NodeEndpoint.Host", version }); }
            if version >= 10 { put_i32(w, self.port); } else if self.port != 0 { return Err(WireError::UnsupportedField { field: "ProduceResponse.NodeEndpoint.Port", version }); }
            if version >= 10 { match &self.rack { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.rack.is_some() { return Err(WireError::UnsupportedField { field: "ProduceResponse.NodeEndpoint.Rack", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 10 { json_key(out, &mut first, "node_id"); dump_display(out, self.node_id); }
            if version >= 10 { json_key(out, &mut first, "host"); dump_str(out, &self.host); }
            if version >= 10 { json_key(out, &mut first, "port"); dump_display(out, self.port); }
            if version >= 10 { json_key(out, &mut first, "rack"); match &self.rack { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }
}
