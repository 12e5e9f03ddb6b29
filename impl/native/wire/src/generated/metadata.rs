// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct MetadataRequest {
        /// The topics to fetch metadata for.
        /// (versions 0+, nullable 1+)
        pub topics: Option<Vec<MetadataRequestTopic>>,
        /// If this is true, the broker may auto-create topics that we requested which do not already exist, if it is configured to do so.
        /// (versions 4+, default true)
        pub allow_auto_topic_creation: bool,
        /// Whether to include cluster authorized operations.
        /// (versions 8-10)
        pub include_cluster_authorized_operations: bool,
        /// Whether to include topic authorized operations.
        /// (versions 8+)
        pub include_topic_authorized_operations: bool,
    }

    impl Default for MetadataRequest {
        fn default() -> Self {
            Self {
                topics: Some(Vec::new()),
                allow_auto_topic_creation: true,
                include_cluster_authorized_operations: false,
                include_topic_authorized_operations: false,
            }
        }
    }

    impl MetadataRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.topics = if version >= 1 { match r.nullable_array_len(flexible)? { None => None, Some(n) => { let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(MetadataRequestTopic::decode(r, version)?); } Some(v) } } } else { Some({ let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(MetadataRequestTopic::decode(r, version)?); } v }) };
            if version >= 4 { this.allow_auto_topic_creation = r.bool()?; }
            if (8..=10).contains(&version) { this.include_cluster_authorized_operations = r.bool()?; }
            if version >= 8 { this.include_topic_authorized_operations = r.bool()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            if version >= 1 { match &self.topics { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { e.encode(w, version)?; } } None => { put_null_array(w, flexible); } } } else { match &self.topics { Some(v) => { put_array_len(w, flexible, v.len()); for e in v { e.encode(w, version)?; } } None => return Err(WireError::NullNotAllowed { field: "MetadataRequest.Topics", version }), } }
            if version >= 4 { put_bool(w, self.allow_auto_topic_creation); } else if !self.allow_auto_topic_creation { return Err(WireError::UnsupportedField { field: "MetadataRequest.AllowAutoTopicCreation", version }); }
            if (8..=10).contains(&version) { put_bool(w, self.include_cluster_authorized_operations); } else if self.include_cluster_authorized_operations { return Err(WireError::UnsupportedField { field: "MetadataRequest.IncludeClusterAuthorizedOperations", version }); }
            if version >= 8 { put_bool(w, self.include_topic_authorized_operations); } else if self.include_topic_authorized_operations { return Err(WireError::UnsupportedField { field: "MetadataRequest.IncludeTopicAuthorizedOperations", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topics"); match &self.topics { Some(v) => { out.push('['); for (i, e) in v.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); } None => out.push_str("null"), }
            if version >= 4 { json_key(out, &mut first, "allow_auto_topic_creation"); dump_display(out, self.allow_auto_topic_creation); }
            if (8..=10).contains(&version) { json_key(out, &mut first, "include_cluster_authorized_operations"); dump_display(out, self.include_cluster_authorized_operations); }
            if version >= 8 { json_key(out, &mut first, "include_topic_authorized_operations"); dump_display(out, self.include_topic_authorized_operations); }
            out.push('}');
        }
    }

    /// The topics to fetch metadata for.
    #[derive(Debug, Clone, PartialEq)]
    pub struct MetadataRequestTopic {
        /// The topic id.
        /// (versions 10+, ignorable)
        pub topic_id: [u8; 16],
        /// The topic name.
        /// (versions 0+, nullable 10+)
        pub name: Option<String>,
    }

    impl Default for MetadataRequestTopic {
        fn default() -> Self {
            Self {
                topic_id: [0u8; 16],
                name: Some(String::new()),
            }
        }
    }

    impl MetadataRequestTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            if version >= 10 { this.topic_id = r.uuid()?; }
            this.name = if version >= 10 { r.nullable_string(flexible)? } else { Some(r.string(flexible, "Name")?) };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            if version >= 10 { put_uuid(w, &self.topic_id); }
            if version >= 10 { match &self.name { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else { match &self.name { Some(v) => { put_string(w, flexible, v)?; } None => return Err(WireError::NullNotAllowed { field: "MetadataRequest.MetadataRequestTopic.Name", version }), } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 10 { json_key(out, &mut first, "topic_id"); dump_hex(out, &self.topic_id); }
            json_key(out, &mut first, "name"); match &self.name { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct MetadataResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 3+, ignorable)
        pub throttle_time_ms: i32,
        /// A list of brokers present in the cluster.
        /// (versions 0+)
        pub brokers: Vec<MetadataResponseBroker>,
        /// The cluster ID that responding broker belongs to.
        /// (versions 2+, nullable 2+, default null, ignorable)
        pub cluster_id: Option<String>,
        /// The ID of the controller broker.
        /// (versions 1+, default -1, ignorable)
        pub controller_id: i32,
        /// Each topic in the response.
        /// (versions 0+)
        pub topics: Vec<MetadataResponseTopic>,
        /// 32-bit bitfield to represent authorized operations for this cluster.
        /// (versions 8-10, default -2147483648)
        pub cluster_authorized_operations: i32,
        /// The top-level error code, or 0 if there was no error.
        /// (versions 13+, ignorable)
        pub error_code: i16,
    }

    impl Default for MetadataResponse {
        fn default() -> Self {
            Self {
                throttle_time_ms: 0,
                brokers: Vec::new(),
                cluster_id: None,
                controller_id: -1,
                topics: Vec::new(),
                cluster_authorized_operations: -2147483648,
                error_code: 0,
            }
        }
    }

    impl MetadataResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            if version >= 3 { this.throttle_time_ms = r.i32()?; }
            this.brokers = { let n = r.array_len(flexible, "Brokers")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(MetadataResponseBroker::decode(r, version)?); } v };
            if version >= 2 { this.cluster_id = r.nullable_string(flexible)?; }
            if version >= 1 { this.controller_id = r.i32()?; }
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(MetadataResponseTopic::decode(r, version)?); } v };
            if (8..=10).contains(&version) { this.cluster_authorized_operations = r.i32()?; }
            if version >= 13 { this.error_code = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            if version >= 3 { put_i32(w, self.throttle_time_ms); }
            put_array_len(w, flexible, self.brokers.len()); for e in &self.brokers { e.encode(w, version)?; }
            if version >= 2 { match &self.cluster_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if version >= 1 { put_i32(w, self.controller_id); }
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if (8..=10).contains(&version) { put_i32(w, self.cluster_authorized_operations); } else if self.cluster_authorized_operations != -2147483648 { return Err(WireError::UnsupportedField { field: "MetadataResponse.ClusterAuthorizedOperations", version }); }
            if version >= 13 { put_i16(w, self.error_code); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            json_key(out, &mut first, "brokers"); out.push('['); for (i, e) in self.brokers.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 2 { json_key(out, &mut first, "cluster_id"); match &self.cluster_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version >= 1 { json_key(out, &mut first, "controller_id"); dump_display(out, self.controller_id); }
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if (8..=10).contains(&version) { json_key(out, &mut first, "cluster_authorized_operations"); dump_display(out, self.cluster_authorized_operations); }
            if version >= 13 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            out.push('}');
        }
    }

    /// A list of brokers present in the cluster.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct MetadataResponseBroker {
        /// The broker ID.
        /// (versions 0+)
        pub node_id: i32,
        /// The broker hostname.
        /// (versions 0+)
        pub host: String,
        /// The broker port.
        /// (versions 0+)
        pub port: i32,
        /// The rack of the broker, or null if it has not been assigned to a rack.
        /// (versions 1+, nullable 1+, default null, ignorable)
        pub rack: Option<String>,
    }

    impl MetadataResponseBroker {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.node_id = r.i32()?;
            this.host = r.string(flexible, "Host")?;
            this.port = r.i32()?;
            if version >= 1 { this.rack = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            put_i32(w, self.node_id);
            put_string(w, flexible, &self.host)?;
            put_i32(w, self.port);
            if version >= 1 { match &self.rack { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "node_id"); dump_display(out, self.node_id);
            json_key(out, &mut first, "host"); dump_str(out, &self.host);
            json_key(out, &mut first, "port"); dump_display(out, self.port);
            if version >= 1 { json_key(out, &mut first, "rack"); match &self.rack { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }

    /// Each topic in the response.
    #[derive(Debug, Clone, PartialEq)]
    pub struct MetadataResponseTopic {
        /// The topic error, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The topic name. Null for non-existing topics queried by ID. This is never null when ErrorCode is zero. One of Name and TopicId is always populated.
        /// (versions 0+, nullable 12+)
        pub name: Option<String>,
        /// The topic id. Zero for non-existing topics queried by name. This is never zero when ErrorCode is zero. One of Name and TopicId is always populated.
        /// (versions 10+, ignorable)
        pub topic_id: [u8; 16],
        /// True if the topic is internal.
        /// (versions 1+, default false, ignorable)
        pub is_internal: bool,
        /// Each partition in the topic.
        /// (versions 0+)
        pub partitions: Vec<MetadataResponsePartition>,
        /// 32-bit bitfield to represent authorized operations for this topic.
        /// (versions 8+, default -2147483648)
        pub topic_authorized_operations: i32,
    }

    impl Default for MetadataResponseTopic {
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

    impl MetadataResponseTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.name = if version >= 12 { r.nullable_string(flexible)? } else { Some(r.string(flexible, "Name")?) };
            if version >= 10 { this.topic_id = r.uuid()?; }
            if version >= 1 { this.is_internal = r.bool()?; }
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(MetadataResponsePartition::decode(r, version)?); } v };
            if version >= 8 { this.topic_authorized_operations = r.i32()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            put_i16(w, self.error_code);
            if version >= 12 { match &self.name { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else { match &self.name { Some(v) => { put_string(w, flexible, v)?; } None => return Err(WireError::NullNotAllowed { field: "MetadataResponse.MetadataResponseTopic.Name", version }), } }
            if version >= 10 { put_uuid(w, &self.topic_id); }
            if version >= 1 { put_bool(w, self.is_internal); }
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            if version >= 8 { put_i32(w, self.topic_authorized_operations); } else if self.topic_authorized_operations != -2147483648 { return Err(WireError::UnsupportedField { field: "MetadataResponse.MetadataResponseTopic.TopicAuthorizedOperations", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "name"); match &self.name { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            if version >= 10 { json_key(out, &mut first, "topic_id"); dump_hex(out, &self.topic_id); }
            if version >= 1 { json_key(out, &mut first, "is_internal"); dump_display(out, self.is_internal); }
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 8 { json_key(out, &mut first, "topic_authorized_operations"); dump_display(out, self.topic_authorized_operations); }
            out.push('}');
        }
    }

    /// Each partition in the topic.
    #[derive(Debug, Clone, PartialEq)]
    pub struct MetadataResponsePartition {
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
        /// (versions 7+, default -1, ignorable)
        pub leader_epoch: i32,
        /// The set of all nodes that host this partition.
        /// (versions 0+)
        pub replica_nodes: Vec<i32>,
        /// The set of nodes that are in sync with the leader for this partition.
        /// (versions 0+)
        pub isr_nodes: Vec<i32>,
        /// The set of offline replicas of this partition.
        /// (versions 5+, ignorable)
        pub offline_replicas: Vec<i32>,
    }

    impl Default for MetadataResponsePartition {
        fn default() -> Self {
            Self {
                error_code: 0,
                partition_index: 0,
                leader_id: 0,
                leader_epoch: -1,
                replica_nodes: Vec::new(),
                isr_nodes: Vec::new(),
                offline_replicas: Vec::new(),
            }
        }
    }

    impl MetadataResponsePartition {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 9;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.partition_index = r.i32()?;
            this.leader_id = r.i32()?;
            if version >= 7 { this.leader_epoch = r.i32()?; }
            this.replica_nodes = { let n = r.array_len(flexible, "ReplicaNodes")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            this.isr_nodes = { let n = r.array_len(flexible, "IsrNodes")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            if version >= 5 { this.offline_replicas = { let n = r.array_len(flexible, "OfflineReplicas")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 9;
            put_i16(w, self.error_code);
            put_i32(w, self.partition_index);
            put_i32(w, self.leader_id);
            if version >= 7 { put_i32(w, self.leader_epoch); }
            put_array_len(w, flexible, self.replica_nodes.len()); for e in &self.replica_nodes { put_i32(w, *e); }
            put_array_len(w, flexible, self.isr_nodes.len()); for e in &self.isr_nodes { put_i32(w, *e); }
            if version >= 5 { put_array_len(w, flexible, self.offline_replicas.len()); for e in &self.offline_replicas { put_i32(w, *e); } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "leader_id"); dump_display(out, self.leader_id);
            if version >= 7 { json_key(out, &mut first, "leader_epoch"); dump_display(out, self.leader_epoch); }
            json_key(out, &mut first, "replica_nodes"); out.push('['); for (i, e) in self.replica_nodes.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            json_key(out, &mut first, "isr_nodes"); out.push('['); for (i, e) in self.isr_nodes.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            if version >= 5 { json_key(out, &mut first, "offline_replicas"); out.push('['); for (i, e) in self.offline_replicas.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']'); }
            out.push('}');
        }
    }
}
