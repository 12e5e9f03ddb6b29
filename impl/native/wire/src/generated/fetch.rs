// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct FetchRequest {
        /// The clusterId if known. This is used to validate metadata fetches prior to broker registration.
        /// (versions 12+, nullable 12+, tag 0 in 12+, default null, ignorable)
        pub cluster_id: Option<String>,
        /// The broker ID of the follower, of -1 if this request is from a consumer.
        /// (versions 0-14, default -1)
        pub replica_id: i32,
        /// The state of the replica in the follower.
        /// (versions 15+, tag 1 in 15+)
        pub replica_state: ReplicaState,
        /// The maximum time in milliseconds to wait for the response.
        /// (versions 0+)
        pub max_wait_ms: i32,
        /// The minimum bytes to accumulate in the response.
        /// (versions 0+)
        pub min_bytes: i32,
        /// The maximum bytes to fetch.  See KIP-74 for cases where this limit may not be honored.
        /// (versions 3+, default 0x7fffffff, ignorable)
        pub max_bytes: i32,
        /// This setting controls the visibility of transactional records. Using READ_UNCOMMITTED (isolation_level = 0) makes all records visible. With READ_COMMITTED (isolation_level = 1), non-transactional and COMMITTED transactional records are visible. To be more concrete, READ_COMMITTED returns all data from offsets smaller than the current LSO (last stable offset), and enables the inclusion of the list of aborted transactions in the result, which allows consumers to discard ABORTED transactional records.
        /// (versions 4+, default 0, ignorable)
        pub isolation_level: i8,
        /// The fetch session ID.
        /// (versions 7+, default 0, ignorable)
        pub session_id: i32,
        /// The fetch session epoch, which is used for ordering requests in a session.
        /// (versions 7+, default -1, ignorable)
        pub session_epoch: i32,
        /// The topics to fetch.
        /// (versions 0+)
        pub topics: Vec<FetchTopic>,
        /// In an incremental fetch request, the partitions to remove.
        /// (versions 7+)
        pub forgotten_topics_data: Vec<ForgottenTopic>,
        /// Rack ID of the consumer making this request.
        /// (versions 11+, default , ignorable)
        pub rack_id: String,
    }

    impl Default for FetchRequest {
        fn default() -> Self {
            Self {
                cluster_id: None,
                replica_id: -1,
                replica_state: ReplicaState::default(),
                max_wait_ms: 0,
                min_bytes: 0,
                max_bytes: 2147483647,
                isolation_level: 0,
                session_id: 0,
                session_epoch: -1,
                topics: Vec::new(),
                forgotten_topics_data: Vec::new(),
                rack_id: String::new(),
            }
        }
    }

    impl FetchRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            if version <= 14 { this.replica_id = r.i32()?; }
            this.max_wait_ms = r.i32()?;
            this.min_bytes = r.i32()?;
            this.max_bytes = r.i32()?;
            this.isolation_level = r.i8()?;
            if version >= 7 { this.session_id = r.i32()?; }
            if version >= 7 { this.session_epoch = r.i32()?; }
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(FetchTopic::decode(r, version)?); } v };
            if version >= 7 { this.forgotten_topics_data = { let n = r.array_len(flexible, "ForgottenTopicsData")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(ForgottenTopic::decode(r, version)?); } v }; }
            if version >= 11 { this.rack_id = r.string(flexible, "RackId")?; }
            if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; match tag { 0 if version >= 12 => this.cluster_id = t.nullable_string(true)?, 1 if version >= 15 => this.replica_state = ReplicaState::decode(&mut t, version)?, _ => { let _ = &mut t; } } } }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            if version <= 14 { put_i32(w, self.replica_id); } else if self.replica_id != -1 { return Err(WireError::UnsupportedField { field: "FetchRequest.ReplicaId", version }); }
            put_i32(w, self.max_wait_ms);
            put_i32(w, self.min_bytes);
            put_i32(w, self.max_bytes);
            put_i8(w, self.isolation_level);
            if version >= 7 { put_i32(w, self.session_id); }
            if version >= 7 { put_i32(w, self.session_epoch); }
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if version >= 7 { put_array_len(w, flexible, self.forgotten_topics_data.len()); for e in &self.forgotten_topics_data { e.encode(w, version)?; } } else if !self.forgotten_topics_data.is_empty() { return Err(WireError::UnsupportedField { field: "FetchRequest.ForgottenTopicsData", version }); }
            if version >= 11 { put_string(w, flexible, &self.rack_id)?; }
            if version < 15 && self.replica_state != ReplicaState::default() { return Err(WireError::UnsupportedField { field: "FetchRequest.ReplicaState", version }); }
            if flexible {
                let mut tags = 0u32;
                if version >= 12 && self.cluster_id.is_some() { tags += 1; }
                if version >= 15 && self.replica_state != ReplicaState::default() { tags += 1; }
                put_uvarint(w, tags);
                if version >= 12 && self.cluster_id.is_some() { put_uvarint(w, 0); let mut t = Vec::new(); match &self.cluster_id { Some(v) => { put_string(&mut t, true, v)?; } None => { put_null_string(&mut t, true); } } put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
                if version >= 15 && self.replica_state != ReplicaState::default() { put_uvarint(w, 1); let mut t = Vec::new(); self.replica_state.encode(&mut t, version)?; put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
        }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 12 { json_key(out, &mut first, "cluster_id"); match &self.cluster_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version <= 14 { json_key(out, &mut first, "replica_id"); dump_display(out, self.replica_id); }
            if version >= 15 { json_key(out, &mut first, "replica_state"); self.replica_state.dump_json(out, version); }
            json_key(out, &mut first, "max_wait_ms"); dump_display(out, self.max_wait_ms);
            json_key(out, &mut first, "min_bytes"); dump_display(out, self.min_bytes);
            json_key(out, &mut first, "max_bytes"); dump_display(out, self.max_bytes);
            json_key(out, &mut first, "isolation_level"); dump_display(out, self.isolation_level);
            if version >= 7 { json_key(out, &mut first, "session_id"); dump_display(out, self.session_id); }
            if version >= 7 { json_key(out, &mut first, "session_epoch"); dump_display(out, self.session_epoch); }
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 7 { json_key(out, &mut first, "forgotten_topics_data"); out.push('['); for (i, e) in self.forgotten_topics_data.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if version >= 11 { json_key(out, &mut first, "rack_id"); dump_str(out, &self.rack_id); }
            out.push('}');
        }
    }

    /// The state of the replica in the follower.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ReplicaState {
        /// The replica ID of the follower, or -1 if this request is from a consumer.
        /// (versions 15+, default -1)
        pub replica_id: i32,
        /// The epoch of this follower, or -1 if not available.
        /// (versions 15+, default -1)
        pub replica_epoch: i64,
    }

    impl Default for ReplicaState {
        fn default() -> Self {
            Self {
                replica_id: -1,
                replica_epoch: -1,
            }
        }
    }

    impl ReplicaState {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            if version >= 15 { this.replica_id = r.i32()?; }
            if version >= 15 { this.replica_epoch = r.i64()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            if version >= 15 { put_i32(w, self.replica_id); } else if self.replica_id != -1 { return Err(WireError::UnsupportedField { field: "FetchRequest.ReplicaState.ReplicaId", version }); }
            if version >= 15 { put_i64(w, self.replica_epoch); } else if self.replica_epoch != -1 { return Err(WireError::UnsupportedField { field: "FetchRequest.ReplicaState.ReplicaEpoch", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 15 { json_key(out, &mut first, "replica_id"); dump_display(out, self.replica_id); }
            if version >= 15 { json_key(out, &mut first, "replica_epoch"); dump_display(out, self.replica_epoch); }
            out.push('}');
        }
    }

    /// The topics to fetch.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct FetchTopic {
        /// The name of the topic to fetch.
        /// (versions 0-12, ignorable)
        pub topic: String,
        /// The unique topic ID.
        /// (versions 13+, ignorable)
        pub topic_id: [u8; 16],
        /// The partitions to fetch.
        /// (versions 0+)
        pub partitions: Vec<FetchPartition>,
    }

    impl FetchTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            if version <= 12 { this.topic = r.string(flexible, "Topic")?; }
            if version >= 13 { this.topic_id = r.uuid()?; }
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(FetchPartition::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            if version <= 12 { put_string(w, flexible, &self.topic)?; }
            if version >= 13 { put_uuid(w, &self.topic_id); }
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version <= 12 { json_key(out, &mut first, "topic"); dump_str(out, &self.topic); }
            if version >= 13 { json_key(out, &mut first, "topic_id"); dump_hex(out, &self.topic_id); }
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The partitions to fetch.
    #[derive(Debug, Clone, PartialEq)]
    pub struct FetchPartition {
        /// The partition index.
        /// (versions 0+)
        pub partition: i32,
        /// The current leader epoch of the partition.
        /// (versions 9+, default -1, ignorable)
        pub current_leader_epoch: i32,
        /// The message offset.
        /// (versions 0+)
        pub fetch_offset: i64,
        /// The epoch of the last fetched record or -1 if there is none.
        /// (versions 12+, default -1)
        pub last_fetched_epoch: i32,
        /// The earliest available offset of the follower replica.  The field is only used when the request is sent by the follower.
        /// (versions 5+, default -1, ignorable)
        pub log_start_offset: i64,
        /// The maximum bytes to fetch from this partition.  See KIP-74 for cases where this limit may not be honored.
        /// (versions 0+)
        pub partition_max_bytes: i32,
        /// The directory id of the follower fetching.
        /// (versions 17+, tag 0 in 17+, ignorable)
        pub replica_directory_id: [u8; 16],
    }

    impl Default for FetchPartition {
        fn default() -> Self {
            Self {
                partition: 0,
                current_leader_epoch: -1,
                fetch_offset: 0,
                last_fetched_epoch: -1,
                log_start_offset: -1,
                partition_max_bytes: 0,
                replica_directory_id: [0u8; 16],
            }
        }
    }

    impl FetchPartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            this.partition = r.i32()?;
            if version >= 9 { this.current_leader_epoch = r.i32()?; }
            this.fetch_offset = r.i64()?;
            if version >= 12 { this.last_fetched_epoch = r.i32()?; }
            if version >= 5 { this.log_start_offset = r.i64()?; }
            this.partition_max_bytes = r.i32()?;
            if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; match tag { 0 if version >= 17 => this.replica_directory_id = t.uuid()?, _ => { let _ = &mut t; } } } }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            put_i32(w, self.partition);
            if version >= 9 { put_i32(w, self.current_leader_epoch); }
            put_i64(w, self.fetch_offset);
            if version >= 12 { put_i32(w, self.last_fetched_epoch); } else if self.last_fetched_epoch != -1 { return Err(WireError::UnsupportedField { field: "FetchRequest.FetchPartition.LastFetchedEpoch", version }); }
            if version >= 5 { put_i64(w, self.log_start_offset); }
            put_i32(w, self.partition_max_bytes);
            if flexible {
                let mut tags = 0u32;
                if version >= 17 && self.replica_directory_id != [0u8; 16] { tags += 1; }
                put_uvarint(w, tags);
                if version >= 17 && self.replica_directory_id != [0u8; 16] { put_uvarint(w, 0); let mut t = Vec::new(); put_uuid(&mut t, &self.replica_directory_id); put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
        }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition"); dump_display(out, self.partition);
            if version >= 9 { json_key(out, &mut first, "current_leader_epoch"); dump_display(out, self.current_leader_epoch); }
            json_key(out, &mut first, "fetch_offset"); dump_display(out, self.fetch_offset);
            if version >= 12 { json_key(out, &mut first, "last_fetched_epoch"); dump_display(out, self.last_fetched_epoch); }
            if version >= 5 { json_key(out, &mut first, "log_start_offset"); dump_display(out, self.log_start_offset); }
            json_key(out, &mut first, "partition_max_bytes"); dump_display(out, self.partition_max_bytes);
            if version >= 17 { json_key(out, &mut first, "replica_directory_id"); dump_hex(out, &self.replica_directory_id); }
            out.push('}');
        }
    }

    /// In an incremental fetch request, the partitions to remove.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ForgottenTopic {
        /// The topic name.
        /// (versions 7-12, ignorable)
        pub topic: String,
        /// The unique topic ID.
        /// (versions 13+, ignorable)
        pub topic_id: [u8; 16],
        /// The partitions indexes to forget.
        /// (versions 7+)
        pub partitions: Vec<i32>,
    }

    impl ForgottenTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            if (7..=12).contains(&version) { this.topic = r.string(flexible, "Topic")?; }
            if version >= 13 { this.topic_id = r.uuid()?; }
            if version >= 7 { this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            if (7..=12).contains(&version) { put_string(w, flexible, &self.topic)?; }
            if version >= 13 { put_uuid(w, &self.topic_id); }
            if version >= 7 { put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { put_i32(w, *e); } } else if !self.partitions.is_empty() { return Err(WireError::UnsupportedField { field: "FetchRequest.ForgottenTopic.Partitions", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if (7..=12).contains(&version) { json_key(out, &mut first, "topic"); dump_str(out, &self.topic); }
            if version >= 13 { json_key(out, &mut first, "topic_id"); dump_hex(out, &self.topic_id); }
            if version >= 7 { json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']'); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct FetchResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 1+, ignorable)
        pub throttle_time_ms: i32,
        /// The top level response error code.
        /// (versions 7+, ignorable)
        pub error_code: i16,
        /// The fetch session ID, or 0 if this is not part of a fetch session.
        /// (versions 7+, default 0)
        pub session_id: i32,
        /// The response topics.
        /// (versions 0+)
        pub responses: Vec<FetchableTopicResponse>,
        /// Endpoints for all current-leaders enumerated in PartitionData, with errors NOT_LEADER_OR_FOLLOWER & FENCED_LEADER_EPOCH.
        /// (versions 16+, tag 0 in 16+)
        pub node_endpoints: Vec<NodeEndpoint>,
    }

    impl FetchResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            if version >= 7 { this.error_code = r.i16()?; }
            if version >= 7 { this.session_id = r.i32()?; }
            this.responses = { let n = r.array_len(flexible, "Responses")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(FetchableTopicResponse::decode(r, version)?); } v };
            if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; match tag { 0 if version >= 16 => this.node_endpoints = { let n = t.array_len(true, "NodeEndpoints")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(NodeEndpoint::decode(&mut t, version)?); } v }, _ => { let _ = &mut t; } } } }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            put_i32(w, self.throttle_time_ms);
            if version >= 7 { put_i16(w, self.error_code); }
            if version >= 7 { put_i32(w, self.session_id); } else if self.session_id != 0 { return Err(WireError::UnsupportedField { field: "FetchResponse.SessionId", version }); }
            put_array_len(w, flexible, self.responses.len()); for e in &self.responses { e.encode(w, version)?; }
            if version < 16 && !self.node_endpoints.is_empty() { return Err(WireError::UnsupportedField { field: "FetchResponse.NodeEndpoints", version }); }
            if flexible {
                let mut tags = 0u32;
                if version >= 16 && !self.node_endpoints.is_empty() { tags += 1; }
                put_uvarint(w, tags);
                if version >= 16 && !self.node_endpoints.is_empty() { put_uvarint(w, 0); let mut t = Vec::new(); put_array_len(&mut t, true, self.node_endpoints.len()); for e in &self.node_endpoints { e.encode(&mut t, version)?; } put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
        }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            if version >= 7 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            if version >= 7 { json_key(out, &mut first, "session_id"); dump_display(out, self.session_id); }
            json_key(out, &mut first, "responses"); out.push('['); for (i, e) in self.responses.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 16 { json_key(out, &mut first, "node_endpoints"); out.push('['); for (i, e) in self.node_endpoints.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// The response topics.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct FetchableTopicResponse {
        /// The topic name.
        /// (versions 0-12, ignorable)
        pub topic: String,
        /// The unique topic ID.
        /// (versions 13+, ignorable)
        pub topic_id: [u8; 16],
        /// The topic partitions.
        /// (versions 0+)
        pub partitions: Vec<PartitionData>,
    }

    impl FetchableTopicResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            if version <= 12 { this.topic = r.string(flexible, "Topic")?; }
            if version >= 13 { this.topic_id = r.uuid()?; }
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(PartitionData::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            if version <= 12 { put_string(w, flexible, &self.topic)?; }
            if version >= 13 { put_uuid(w, &self.topic_id); }
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version <= 12 { json_key(out, &mut first, "topic"); dump_str(out, &self.topic); }
            if version >= 13 { json_key(out, &mut first, "topic_id"); dump_hex(out, &self.topic_id); }
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The topic partitions.
    #[derive(Debug, Clone, PartialEq)]
    pub struct PartitionData {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The error code, or 0 if there was no fetch error.
        /// (versions 0+)
        pub error_code: i16,
        /// The current high water mark.
        /// (versions 0+)
        pub high_watermark: i64,
        /// The last stable offset (or LSO) of the partition. This is the last offset such that the state of all transactional records prior to this offset have been decided (ABORTED or COMMITTED).
        /// (versions 4+, default -1, ignorable)
        pub last_stable_offset: i64,
        /// The current log start offset.
        /// (versions 5+, default -1, ignorable)
        pub log_start_offset: i64,
        /// In case divergence is detected based on the `LastFetchedEpoch` and `FetchOffset` in the request, this field indicates the largest epoch and its end offset such that subsequent records are known to diverge.
        /// (versions 12+, tag 0 in 12+)
        pub diverging_epoch: EpochEndOffset,
        /// The current leader of the partition.
        /// (versions 12+, tag 1 in 12+)
        pub current_leader: LeaderIdAndEpoch,
        /// In the case of fetching an offset less than the LogStartOffset, this is the end offset and epoch that should be used in the FetchSnapshot request.
        /// (versions 12+, tag 2 in 12+)
        pub snapshot_id: SnapshotId,
        /// The aborted transactions.
        /// (versions 4+, nullable 4+, ignorable)
        pub aborted_transactions: Option<Vec<AbortedTransaction>>,
        /// The preferred read replica for the consumer to use on its next fetch request.
        /// (versions 11+, default -1)
        pub preferred_read_replica: i32,
        /// The record data.
        /// (versions 0+, nullable 0+)
        pub records: Option<Vec<u8>>,
    }

    impl Default for PartitionData {
        fn default() -> Self {
            Self {
                partition_index: 0,
                error_code: 0,
                high_watermark: 0,
                last_stable_offset: -1,
                log_start_offset: -1,
                diverging_epoch: EpochEndOffset::default(),
                current_leader: LeaderIdAndEpoch::default(),
                snapshot_id: SnapshotId::default(),
                aborted_transactions: Some(Vec::new()),
                preferred_read_replica: -1,
                records: Some(Vec::new()),
            }
        }
    }

    impl PartitionData {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.error_code = r.i16()?;
            this.high_watermark = r.i64()?;
            this.last_stable_offset = r.i64()?;
            if version >= 5 { this.log_start_offset = r.i64()?; }
            this.aborted_transactions = match r.nullable_array_len(flexible)? { None => None, Some(n) => { let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(AbortedTransaction::decode(r, version)?); } Some(v) } };
            if version >= 11 { this.preferred_read_replica = r.i32()?; }
            this.records = r.nullable_bytes(flexible)?;
            if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; match tag { 0 if version >= 12 => this.diverging_epoch = EpochEndOffset::decode(&mut t, version)?, 1 if version >= 12 => this.current_leader = LeaderIdAndEpoch::decode(&mut t, version)?, 2 if version >= 12 => this.snapshot_id = SnapshotId::decode(&mut t, version)?, _ => { let _ = &mut t; } } } }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            put_i32(w, self.partition_index);
            put_i16(w, self.error_code);
            put_i64(w, self.high_watermark);
            put_i64(w, self.last_stable_offset);
            if version >= 5 { put_i64(w, self.log_start_offset); }
            match &self.aborted_transactions { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { e.encode(w, version)?; } } None => { put_null_array(w, flexible); } }
            if version >= 11 { put_i32(w, self.preferred_read_replica); } else if self.preferred_read_replica != -1 { return Err(WireError::UnsupportedField { field: "FetchResponse.PartitionData.PreferredReadReplica", version }); }
            match &self.records { Some(v) => { put_bytes(w, flexible, v); } None => { put_null_bytes(w, flexible); } }
            if version < 12 && self.diverging_epoch != EpochEndOffset::default() { return Err(WireError::UnsupportedField { field: "FetchResponse.PartitionData.DivergingEpoch", version }); }
            if version < 12 && self.current_leader != LeaderIdAndEpoch::default() { return Err(WireError::UnsupportedField { field: "FetchResponse.PartitionData.CurrentLeader", version }); }
            if version < 12 && self.snapshot_id != SnapshotId::default() { return Err(WireError::UnsupportedField { field: "FetchResponse.PartitionData.SnapshotId", version }); }
            if flexible {
                let mut tags = 0u32;
                if version >= 12 && self.diverging_epoch != EpochEndOffset::default() { tags += 1; }
                if version >= 12 && self.current_leader != LeaderIdAndEpoch::default() { tags += 1; }
                if version >= 12 && self.snapshot_id != SnapshotId::default() { tags += 1; }
                put_uvarint(w, tags);
                if version >= 12 && self.diverging_epoch != EpochEndOffset::default() { put_uvarint(w, 0); let mut t = Vec::new(); self.diverging_epoch.encode(&mut t, version)?; put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
                if version >= 12 && self.current_leader != LeaderIdAndEpoch::default() { put_uvarint(w, 1); let mut t = Vec::new(); self.current_leader.encode(&mut t, version)?; put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
                if version >= 12 && self.snapshot_id != SnapshotId::default() { put_uvarint(w, 2); let mut t = Vec::new(); self.snapshot_id.encode(&mut t, version)?; put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
        }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "high_watermark"); dump_display(out, self.high_watermark);
            json_key(out, &mut first, "last_stable_offset"); dump_display(out, self.last_stable_offset);
            if version >= 5 { json_key(out, &mut first, "log_start_offset"); dump_display(out, self.log_start_offset); }
            if version >= 12 { json_key(out, &mut first, "diverging_epoch"); self.diverging_epoch.dump_json(out, version); }
            if version >= 12 { json_key(out, &mut first, "current_leader"); self.current_leader.dump_json(out, version); }
            if version >= 12 { json_key(out, &mut first, "snapshot_id"); self.snapshot_id.dump_json(out, version); }
            json_key(out, &mut first, "aborted_transactions"); match &self.aborted_transactions { Some(v) => { out.push('['); for (i, e) in v.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); } None => out.push_str("null"), }
            if version >= 11 { json_key(out, &mut first, "preferred_read_replica"); dump_display(out, self.preferred_read_replica); }
            json_key(out, &mut first, "records"); match &self.records { Some(v) => { dump_hex(out, v); } None => out.push_str("null"), }
            out.push('}');
        }
    }

    /// In case divergence is detected based on the `LastFetchedEpoch` and `FetchOffset` in the request, this field indicates the largest epoch and its end offset such that subsequent records are known to diverge.
    #[derive(Debug, Clone, PartialEq)]
    pub struct EpochEndOffset {
        /// The largest epoch.
        /// (versions 12+, default -1)
        pub epoch: i32,
        /// The end offset of the epoch.
        /// (versions 12+, default -1)
        pub end_offset: i64,
    }

    impl Default for EpochEndOffset {
        fn default() -> Self {
            Self {
                epoch: -1,
                end_offset: -1,
            }
        }
    }

    impl EpochEndOffset {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            if version >= 12 { this.epoch = r.i32()?; }
            if version >= 12 { this.end_offset = r.i64()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            if version >= 12 { put_i32(w, self.epoch); } else if self.epoch != -1 { return Err(WireError::UnsupportedField { field: "FetchResponse.EpochEndOffset.Epoch", version }); }
            if version >= 12 { put_i64(w, self.end_offset); } else if self.end_offset != -1 { return Err(WireError::UnsupportedField { field: "FetchResponse.EpochEndOffset.EndOffset", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 12 { json_key(out, &mut first, "epoch"); dump_display(out, self.epoch); }
            if version >= 12 { json_key(out, &mut first, "end_offset"); dump_display(out, self.end_offset); }
            out.push('}');
        }
    }

    /// The current leader of the partition.
    #[derive(Debug, Clone, PartialEq)]
    pub struct LeaderIdAndEpoch {
        /// The ID of the current leader or -1 if the leader is unknown.
        /// (versions 12+, default -1)
        pub leader_id: i32,
        /// The latest known leader epoch.
        /// (versions 12+, default -1)
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
            let flexible = version >= 12;
            let mut this = Self::default();
            if version >= 12 { this.leader_id = r.i32()?; }
            if version >= 12 { this.leader_epoch = r.i32()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            if version >= 12 { put_i32(w, self.leader_id); } else if self.leader_id != -1 { return Err(WireError::UnsupportedField { field: "FetchResponse.LeaderIdAndEpoch.LeaderId", version }); }
            if version >= 12 { put_i32(w, self.leader_epoch); } else if self.leader_epoch != -1 { return Err(WireError::UnsupportedField { field: "FetchResponse.LeaderIdAndEpoch.LeaderEpoch", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 12 { json_key(out, &mut first, "leader_id"); dump_display(out, self.leader_id); }
            if version >= 12 { json_key(out, &mut first, "leader_epoch"); dump_display(out, self.leader_epoch); }
            out.push('}');
        }
    }

    /// In the case of fetching an offset less than the LogStartOffset, this is the end offset and epoch that should be used in the FetchSnapshot request.
    #[derive(Debug, Clone, PartialEq)]
    pub struct SnapshotId {
        /// The end offset of the epoch.
        /// (versions 0+, default -1)
        pub end_offset: i64,
        /// The largest epoch.
        /// (versions 0+, default -1)
        pub epoch: i32,
    }

    impl Default for SnapshotId {
        fn default() -> Self {
            Self {
                end_offset: -1,
                epoch: -1,
            }
        }
    }

    impl SnapshotId {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            this.end_offset = r.i64()?;
            this.epoch = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            put_i64(w, self.end_offset);
            put_i32(w, self.epoch);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "end_offset"); dump_display(out, self.end_offset);
            json_key(out, &mut first, "epoch"); dump_display(out, self.epoch);
            out.push('}');
        }
    }

    /// The aborted transactions.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct AbortedTransaction {
        /// The producer id associated with the aborted transaction.
        /// (versions 4+)
        pub producer_id: i64,
        /// The first offset in the aborted transaction.
        /// (versions 4+)
        pub first_offset: i64,
    }

    impl AbortedTransaction {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            this.producer_id = r.i64()?;
            this.first_offset = r.i64()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            put_i64(w, self.producer_id);
            put_i64(w, self.first_offset);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "first_offset"); dump_display(out, self.first_offset);
            out.push('}');
        }
    }

    /// Endpoints for all current-leaders enumerated in PartitionData, with errors NOT_LEADER_OR_FOLLOWER & FENCED_LEADER_EPOCH.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct NodeEndpoint {
        /// The ID of the associated node.
        /// (versions 16+)
        pub node_id: i32,
        /// The node's hostname.
        /// (versions 16+)
        pub host: String,
        /// The node's port.
        /// (versions 16+)
        pub port: i32,
        /// The rack of the node, or null if it has not been assigned to a rack.
        /// (versions 16+, nullable 16+, default null)
        pub rack: Option<String>,
    }

    impl NodeEndpoint {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 12;
            let mut this = Self::default();
            if version >= 16 { this.node_id = r.i32()?; }
            if version >= 16 { this.host = r.string(flexible, "Host")?; }
            if version >= 16 { this.port = r.i32()?; }
            if version >= 16 { this.rack = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 12;
            if version >= 16 { put_i32(w, self.node_id); } else if self.node_id != 0 { return Err(WireError::UnsupportedField { field: "FetchResponse.NodeEndpoint.NodeId", version }); }
            if version >= 16 { put_string(w, flexible, &self.host)?; } else if !self.host.is_empty() { return Err(WireError::UnsupportedField { field: "FetchResponse.NodeEndpoint.Host", version }); }
            if version >= 16 { put_i32(w, self.port); } else if self.port != 0 { return Err(WireError::UnsupportedField { field: "FetchResponse.NodeEndpoint.Port", version }); }
            if version >= 16 { match &self.rack { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.rack.is_some() { return Err(WireError::UnsupportedField { field: "FetchResponse.NodeEndpoint.Rack", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 16 { json_key(out, &mut first, "node_id"); dump_display(out, self.node_id); }
            if version >= 16 { json_key(out, &mut first, "host"); dump_str(out, &self.host); }
            if version >= 16 { json_key(out, &mut first, "port"); dump_display(out, self.port); }
            if version >= 16 { json_key(out, &mut first, "rack"); match &self.rack { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }
}
