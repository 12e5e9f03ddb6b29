// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).

use crate::codec::*;

pub mod header;
pub mod produce;
pub mod fetch;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_fetch;
pub mod find_coordinator;
pub mod join_group;
pub mod heartbeat;
pub mod leave_group;
pub mod sync_group;
pub mod describe_groups;
pub mod list_groups;
pub mod api_versions;
pub mod create_topics;
pub mod init_producer_id;
pub mod offset_for_leader_epoch;
pub mod add_partitions_to_txn;
pub mod add_offsets_to_txn;
pub mod end_txn;
pub mod write_txn_markers;
pub mod txn_offset_commit;
pub mod describe_configs;
pub mod delete_groups;
pub mod offset_delete;
pub mod describe_cluster;
pub mod describe_producers;
pub mod describe_transactions;
pub mod list_transactions;
pub mod consumer_group_heartbeat;
pub mod consumer_group_describe;
pub mod describe_topic_partitions;

/// (api key, name, lowest, highest version) of every API covered: `kcoord serve`'s advertised ranges
/// within what kafka-clients-4.0.2.jar declares.
/// Advertised but not declared there, so not covered: ListOffsets v11, ListTransactions v2.
pub const COVERED: &[(i16, &str, i16, i16)] = &[
    (0, "Produce", 3, 12),
    (1, "Fetch", 4, 16),
    (2, "ListOffsets", 1, 10),
    (3, "Metadata", 1, 13),
    (8, "OffsetCommit", 2, 9),
    (9, "OffsetFetch", 1, 9),
    (10, "FindCoordinator", 0, 6),
    (11, "JoinGroup", 2, 7),
    (12, "Heartbeat", 0, 4),
    (13, "LeaveGroup", 0, 5),
    (14, "SyncGroup", 0, 5),
    (15, "DescribeGroups", 0, 6),
    (16, "ListGroups", 0, 5),
    (18, "ApiVersions", 0, 4),
    (19, "CreateTopics", 2, 7),
    (22, "InitProducerId", 0, 5),
    (23, "OffsetForLeaderEpoch", 2, 4),
    (24, "AddPartitionsToTxn", 0, 5),
    (25, "AddOffsetsToTxn", 0, 4),
    (26, "EndTxn", 0, 5),
    (27, "WriteTxnMarkers", 1, 1),
    (28, "TxnOffsetCommit", 0, 5),
    (32, "DescribeConfigs", 1, 4),
    (42, "DeleteGroups", 0, 2),
    (47, "OffsetDelete", 0, 0),
    (60, "DescribeCluster", 0, 1),
    (61, "DescribeProducers", 0, 0),
    (65, "DescribeTransactions", 0, 0),
    (66, "ListTransactions", 0, 1),
    (68, "ConsumerGroupHeartbeat", 0, 1),
    (69, "ConsumerGroupDescribe", 0, 0),
    (75, "DescribeTopicPartitions", 0, 0),
];

pub fn covers(api_key: i16, version: i16) -> bool {
    COVERED.iter().any(|&(key, _, low, high)| key == api_key && (low..=high).contains(&version))
}

/// The request header version for a covered `api_key` at `version` (None when not covered).
pub fn request_header_version(api_key: i16, version: i16) -> Option<i16> {
    if !covers(api_key, version) {
        return None;
    }
    Some(match api_key {
        0 => if version >= 9 { 2 } else { 1 },
        1 => if version >= 12 { 2 } else { 1 },
        2 => if version >= 6 { 2 } else { 1 },
        3 => if version >= 9 { 2 } else { 1 },
        8 => if version >= 8 { 2 } else { 1 },
        9 => if version >= 6 { 2 } else { 1 },
        10 => if version >= 3 { 2 } else { 1 },
        11 => if version >= 6 { 2 } else { 1 },
        12 => if version >= 4 { 2 } else { 1 },
        13 => if version >= 4 { 2 } else { 1 },
        14 => if version >= 4 { 2 } else { 1 },
        15 => if version >= 5 { 2 } else { 1 },
        16 => if version >= 3 { 2 } else { 1 },
        18 => if version >= 3 { 2 } else { 1 },
        19 => if version >= 5 { 2 } else { 1 },
        22 => if version >= 2 { 2 } else { 1 },
        23 => if version >= 4 { 2 } else { 1 },
        24 => if version >= 3 { 2 } else { 1 },
        25 => if version >= 3 { 2 } else { 1 },
        26 => if version >= 3 { 2 } else { 1 },
        27 => 2,
        28 => if version >= 3 { 2 } else { 1 },
        32 => if version >= 4 { 2 } else { 1 },
        42 => if version >= 2 { 2 } else { 1 },
        47 => 1,
        60 => 2,
        61 => 2,
        65 => 2,
        66 => 2,
        68 => 2,
        69 => 2,
        75 => 2,
        _ => unreachable!(),
    })
}

/// The response header version for a covered `api_key` at `version` (None when not covered).
pub fn response_header_version(api_key: i16, version: i16) -> Option<i16> {
    if !covers(api_key, version) {
        return None;
    }
    Some(match api_key {
        0 => if version >= 9 { 1 } else { 0 },
        1 => if version >= 12 { 1 } else { 0 },
        2 => if version >= 6 { 1 } else { 0 },
        3 => if version >= 9 { 1 } else { 0 },
        8 => if version >= 8 { 1 } else { 0 },
        9 => if version >= 6 { 1 } else { 0 },
        10 => if version >= 3 { 1 } else { 0 },
        11 => if version >= 6 { 1 } else { 0 },
        12 => if version >= 4 { 1 } else { 0 },
        13 => if version >= 4 { 1 } else { 0 },
        14 => if version >= 4 { 1 } else { 0 },
        15 => if version >= 5 { 1 } else { 0 },
        16 => if version >= 3 { 1 } else { 0 },
        18 => 0,
        19 => if version >= 5 { 1 } else { 0 },
        22 => if version >= 2 { 1 } else { 0 },
        23 => if version >= 4 { 1 } else { 0 },
        24 => if version >= 3 { 1 } else { 0 },
        25 => if version >= 3 { 1 } else { 0 },
        26 => if version >= 3 { 1 } else { 0 },
        27 => 1,
        28 => if version >= 3 { 1 } else { 0 },
        32 => if version >= 4 { 1 } else { 0 },
        42 => if version >= 2 { 1 } else { 0 },
        47 => 0,
        60 => 1,
        61 => 1,
        65 => 1,
        66 => 1,
        68 => 1,
        69 => 1,
        75 => 1,
        _ => unreachable!(),
    })
}

/// A request body of any covered API.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Produce(produce::request::ProduceRequest),
    Fetch(fetch::request::FetchRequest),
    ListOffsets(list_offsets::request::ListOffsetsRequest),
    Metadata(metadata::request::MetadataRequest),
    OffsetCommit(offset_commit::request::OffsetCommitRequest),
    OffsetFetch(offset_fetch::request::OffsetFetchRequest),
    FindCoordinator(find_coordinator::request::FindCoordinatorRequest),
    JoinGroup(join_group::request::JoinGroupRequest),
    Heartbeat(heartbeat::request::HeartbeatRequest),
    LeaveGroup(leave_group::request::LeaveGroupRequest),
    SyncGroup(sync_group::request::SyncGroupRequest),
    DescribeGroups(describe_groups::request::DescribeGroupsRequest),
    ListGroups(list_groups::request::ListGroupsRequest),
    ApiVersions(api_versions::request::ApiVersionsRequest),
    CreateTopics(create_topics::request::CreateTopicsRequest),
    InitProducerId(init_producer_id::request::InitProducerIdRequest),
    OffsetForLeaderEpoch(offset_for_leader_epoch::request::OffsetForLeaderEpochRequest),
    AddPartitionsToTxn(add_partitions_to_txn::request::AddPartitionsToTxnRequest),
    AddOffsetsToTxn(add_offsets_to_txn::request::AddOffsetsToTxnRequest),
    EndTxn(end_txn::request::EndTxnRequest),
    WriteTxnMarkers(write_txn_markers::request::WriteTxnMarkersRequest),
    TxnOffsetCommit(txn_offset_commit::request::TxnOffsetCommitRequest),
    DescribeConfigs(describe_configs::request::DescribeConfigsRequest),
    DeleteGroups(delete_groups::request::DeleteGroupsRequest),
    OffsetDelete(offset_delete::request::OffsetDeleteRequest),
    DescribeCluster(describe_cluster::request::DescribeClusterRequest),
    DescribeProducers(describe_producers::request::DescribeProducersRequest),
    DescribeTransactions(describe_transactions::request::DescribeTransactionsRequest),
    ListTransactions(list_transactions::request::ListTransactionsRequest),
    ConsumerGroupHeartbeat(consumer_group_heartbeat::request::ConsumerGroupHeartbeatRequest),
    ConsumerGroupDescribe(consumer_group_describe::request::ConsumerGroupDescribeRequest),
    DescribeTopicPartitions(describe_topic_partitions::request::DescribeTopicPartitionsRequest),
}

impl Request {
    /// Decodes a body of `api_key` at `version`; versions outside `COVERED` are refused.
    pub fn decode(api_key: i16, version: i16, r: &mut Reader<'_>) -> Result<Self, WireError> {
        match (api_key, version) {
            (0, 3..=12) => Ok(Self::Produce(produce::request::ProduceRequest::decode(r, version)?)),
            (1, 4..=16) => Ok(Self::Fetch(fetch::request::FetchRequest::decode(r, version)?)),
            (2, 1..=10) => Ok(Self::ListOffsets(list_offsets::request::ListOffsetsRequest::decode(r, version)?)),
            (3, 1..=13) => Ok(Self::Metadata(metadata::request::MetadataRequest::decode(r, version)?)),
            (8, 2..=9) => Ok(Self::OffsetCommit(offset_commit::request::OffsetCommitRequest::decode(r, version)?)),
            (9, 1..=9) => Ok(Self::OffsetFetch(offset_fetch::request::OffsetFetchRequest::decode(r, version)?)),
            (10, 0..=6) => Ok(Self::FindCoordinator(find_coordinator::request::FindCoordinatorRequest::decode(r, version)?)),
            (11, 2..=7) => Ok(Self::JoinGroup(join_group::request::JoinGroupRequest::decode(r, version)?)),
            (12, 0..=4) => Ok(Self::Heartbeat(heartbeat::request::HeartbeatRequest::decode(r, version)?)),
            (13, 0..=5) => Ok(Self::LeaveGroup(leave_group::request::LeaveGroupRequest::decode(r, version)?)),
            (14, 0..=5) => Ok(Self::SyncGroup(sync_group::request::SyncGroupRequest::decode(r, version)?)),
            (15, 0..=6) => Ok(Self::DescribeGroups(describe_groups::request::DescribeGroupsRequest::decode(r, version)?)),
            (16, 0..=5) => Ok(Self::ListGroups(list_groups::request::ListGroupsRequest::decode(r, version)?)),
            (18, 0..=4) => Ok(Self::ApiVersions(api_versions::request::ApiVersionsRequest::decode(r, version)?)),
            (19, 2..=7) => Ok(Self::CreateTopics(create_topics::request::CreateTopicsRequest::decode(r, version)?)),
            (22, 0..=5) => Ok(Self::InitProducerId(init_producer_id::request::InitProducerIdRequest::decode(r, version)?)),
            (23, 2..=4) => Ok(Self::OffsetForLeaderEpoch(offset_for_leader_epoch::request::OffsetForLeaderEpochRequest::decode(r, version)?)),
            (24, 0..=5) => Ok(Self::AddPartitionsToTxn(add_partitions_to_txn::request::AddPartitionsToTxnRequest::decode(r, version)?)),
            (25, 0..=4) => Ok(Self::AddOffsetsToTxn(add_offsets_to_txn::request::AddOffsetsToTxnRequest::decode(r, version)?)),
            (26, 0..=5) => Ok(Self::EndTxn(end_txn::request::EndTxnRequest::decode(r, version)?)),
            (27, 1..=1) => Ok(Self::WriteTxnMarkers(write_txn_markers::request::WriteTxnMarkersRequest::decode(r, version)?)),
            (28, 0..=5) => Ok(Self::TxnOffsetCommit(txn_offset_commit::request::TxnOffsetCommitRequest::decode(r, version)?)),
            (32, 1..=4) => Ok(Self::DescribeConfigs(describe_configs::request::DescribeConfigsRequest::decode(r, version)?)),
            (42, 0..=2) => Ok(Self::DeleteGroups(delete_groups::request::DeleteGroupsRequest::decode(r, version)?)),
            (47, 0..=0) => Ok(Self::OffsetDelete(offset_delete::request::OffsetDeleteRequest::decode(r, version)?)),
            (60, 0..=1) => Ok(Self::DescribeCluster(describe_cluster::request::DescribeClusterRequest::decode(r, version)?)),
            (61, 0..=0) => Ok(Self::DescribeProducers(describe_producers::request::DescribeProducersRequest::decode(r, version)?)),
            (65, 0..=0) => Ok(Self::DescribeTransactions(describe_transactions::request::DescribeTransactionsRequest::decode(r, version)?)),
            (66, 0..=1) => Ok(Self::ListTransactions(list_transactions::request::ListTransactionsRequest::decode(r, version)?)),
            (68, 0..=1) => Ok(Self::ConsumerGroupHeartbeat(consumer_group_heartbeat::request::ConsumerGroupHeartbeatRequest::decode(r, version)?)),
            (69, 0..=0) => Ok(Self::ConsumerGroupDescribe(consumer_group_describe::request::ConsumerGroupDescribeRequest::decode(r, version)?)),
            (75, 0..=0) => Ok(Self::DescribeTopicPartitions(describe_topic_partitions::request::DescribeTopicPartitionsRequest::decode(r, version)?)),
            _ => Err(WireError::UnsupportedVersion { api_key, version }),
        }
    }

    pub fn api_key(&self) -> i16 {
        match self {
            Self::Produce(_) => 0,
            Self::Fetch(_) => 1,
            Self::ListOffsets(_) => 2,
            Self::Metadata(_) => 3,
            Self::OffsetCommit(_) => 8,
            Self::OffsetFetch(_) => 9,
            Self::FindCoordinator(_) => 10,
            Self::JoinGroup(_) => 11,
            Self::Heartbeat(_) => 12,
            Self::LeaveGroup(_) => 13,
            Self::SyncGroup(_) => 14,
            Self::DescribeGroups(_) => 15,
            Self::ListGroups(_) => 16,
            Self::ApiVersions(_) => 18,
            Self::CreateTopics(_) => 19,
            Self::InitProducerId(_) => 22,
            Self::OffsetForLeaderEpoch(_) => 23,
            Self::AddPartitionsToTxn(_) => 24,
            Self::AddOffsetsToTxn(_) => 25,
            Self::EndTxn(_) => 26,
            Self::WriteTxnMarkers(_) => 27,
            Self::TxnOffsetCommit(_) => 28,
            Self::DescribeConfigs(_) => 32,
            Self::DeleteGroups(_) => 42,
            Self::OffsetDelete(_) => 47,
            Self::DescribeCluster(_) => 60,
            Self::DescribeProducers(_) => 61,
            Self::DescribeTransactions(_) => 65,
            Self::ListTransactions(_) => 66,
            Self::ConsumerGroupHeartbeat(_) => 68,
            Self::ConsumerGroupDescribe(_) => 69,
            Self::DescribeTopicPartitions(_) => 75,
        }
    }

    /// Encodes the body at `version`; versions outside `COVERED` are refused.
    pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
        let api_key = self.api_key();
        if !covers(api_key, version) {
            return Err(WireError::UnsupportedVersion { api_key, version });
        }
        match self {
            Self::Produce(m) => m.encode(w, version),
            Self::Fetch(m) => m.encode(w, version),
            Self::ListOffsets(m) => m.encode(w, version),
            Self::Metadata(m) => m.encode(w, version),
            Self::OffsetCommit(m) => m.encode(w, version),
            Self::OffsetFetch(m) => m.encode(w, version),
            Self::FindCoordinator(m) => m.encode(w, version),
            Self::JoinGroup(m) => m.encode(w, version),
            Self::Heartbeat(m) => m.encode(w, version),
            Self::LeaveGroup(m) => m.encode(w, version),
            Self::SyncGroup(m) => m.encode(w, version),
            Self::DescribeGroups(m) => m.encode(w, version),
            Self::ListGroups(m) => m.encode(w, version),
            Self::ApiVersions(m) => m.encode(w, version),
            Self::CreateTopics(m) => m.encode(w, version),
            Self::InitProducerId(m) => m.encode(w, version),
            Self::OffsetForLeaderEpoch(m) => m.encode(w, version),
            Self::AddPartitionsToTxn(m) => m.encode(w, version),
            Self::AddOffsetsToTxn(m) => m.encode(w, version),
            Self::EndTxn(m) => m.encode(w, version),
            Self::WriteTxnMarkers(m) => m.encode(w, version),
            Self::TxnOffsetCommit(m) => m.encode(w, version),
            Self::DescribeConfigs(m) => m.encode(w, version),
            Self::DeleteGroups(m) => m.encode(w, version),
            Self::OffsetDelete(m) => m.encode(w, version),
            Self::DescribeCluster(m) => m.encode(w, version),
            Self::DescribeProducers(m) => m.encode(w, version),
            Self::DescribeTransactions(m) => m.encode(w, version),
            Self::ListTransactions(m) => m.encode(w, version),
            Self::ConsumerGroupHeartbeat(m) => m.encode(w, version),
            Self::ConsumerGroupDescribe(m) => m.encode(w, version),
            Self::DescribeTopicPartitions(m) => m.encode(w, version),
        }
    }

    pub fn dump_json(&self, out: &mut String, version: i16) {
        match self {
            Self::Produce(m) => m.dump_json(out, version),
            Self::Fetch(m) => m.dump_json(out, version),
            Self::ListOffsets(m) => m.dump_json(out, version),
            Self::Metadata(m) => m.dump_json(out, version),
            Self::OffsetCommit(m) => m.dump_json(out, version),
            Self::OffsetFetch(m) => m.dump_json(out, version),
            Self::FindCoordinator(m) => m.dump_json(out, version),
            Self::JoinGroup(m) => m.dump_json(out, version),
            Self::Heartbeat(m) => m.dump_json(out, version),
            Self::LeaveGroup(m) => m.dump_json(out, version),
            Self::SyncGroup(m) => m.dump_json(out, version),
            Self::DescribeGroups(m) => m.dump_json(out, version),
            Self::ListGroups(m) => m.dump_json(out, version),
            Self::ApiVersions(m) => m.dump_json(out, version),
            Self::CreateTopics(m) => m.dump_json(out, version),
            Self::InitProducerId(m) => m.dump_json(out, version),
            Self::OffsetForLeaderEpoch(m) => m.dump_json(out, version),
            Self::AddPartitionsToTxn(m) => m.dump_json(out, version),
            Self::AddOffsetsToTxn(m) => m.dump_json(out, version),
            Self::EndTxn(m) => m.dump_json(out, version),
            Self::WriteTxnMarkers(m) => m.dump_json(out, version),
            Self::TxnOffsetCommit(m) => m.dump_json(out, version),
            Self::DescribeConfigs(m) => m.dump_json(out, version),
            Self::DeleteGroups(m) => m.dump_json(out, version),
            Self::OffsetDelete(m) => m.dump_json(out, version),
            Self::DescribeCluster(m) => m.dump_json(out, version),
            Self::DescribeProducers(m) => m.dump_json(out, version),
            Self::DescribeTransactions(m) => m.dump_json(out, version),
            Self::ListTransactions(m) => m.dump_json(out, version),
            Self::ConsumerGroupHeartbeat(m) => m.dump_json(out, version),
            Self::ConsumerGroupDescribe(m) => m.dump_json(out, version),
            Self::DescribeTopicPartitions(m) => m.dump_json(out, version),
        }
    }
}

/// A response body of any covered API.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Produce(produce::response::ProduceResponse),
    Fetch(fetch::response::FetchResponse),
    ListOffsets(list_offsets::response::ListOffsetsResponse),
    Metadata(metadata::response::MetadataResponse),
    OffsetCommit(offset_commit::response::OffsetCommitResponse),
    OffsetFetch(offset_fetch::response::OffsetFetchResponse),
    FindCoordinator(find_coordinator::response::FindCoordinatorResponse),
    JoinGroup(join_group::response::JoinGroupResponse),
    Heartbeat(heartbeat::response::HeartbeatResponse),
    LeaveGroup(leave_group::response::LeaveGroupResponse),
    SyncGroup(sync_group::response::SyncGroupResponse),
    DescribeGroups(describe_groups::response::DescribeGroupsResponse),
    ListGroups(list_groups::response::ListGroupsResponse),
    ApiVersions(api_versions::response::ApiVersionsResponse),
    CreateTopics(create_topics::response::CreateTopicsResponse),
    InitProducerId(init_producer_id::response::InitProducerIdResponse),
    OffsetForLeaderEpoch(offset_for_leader_epoch::response::OffsetForLeaderEpochResponse),
    AddPartitionsToTxn(add_partitions_to_txn::response::AddPartitionsToTxnResponse),
    AddOffsetsToTxn(add_offsets_to_txn::response::AddOffsetsToTxnResponse),
    EndTxn(end_txn::response::EndTxnResponse),
    WriteTxnMarkers(write_txn_markers::response::WriteTxnMarkersResponse),
    TxnOffsetCommit(txn_offset_commit::response::TxnOffsetCommitResponse),
    DescribeConfigs(describe_configs::response::DescribeConfigsResponse),
    DeleteGroups(delete_groups::response::DeleteGroupsResponse),
    OffsetDelete(offset_delete::response::OffsetDeleteResponse),
    DescribeCluster(describe_cluster::response::DescribeClusterResponse),
    DescribeProducers(describe_producers::response::DescribeProducersResponse),
    DescribeTransactions(describe_transactions::response::DescribeTransactionsResponse),
    ListTransactions(list_transactions::response::ListTransactionsResponse),
    ConsumerGroupHeartbeat(consumer_group_heartbeat::response::ConsumerGroupHeartbeatResponse),
    ConsumerGroupDescribe(consumer_group_describe::response::ConsumerGroupDescribeResponse),
    DescribeTopicPartitions(describe_topic_partitions::response::DescribeTopicPartitionsResponse),
}

impl Response {
    /// Decodes a body of `api_key` at `version`; versions outside `COVERED` are refused.
    pub fn decode(api_key: i16, version: i16, r: &mut Reader<'_>) -> Result<Self, WireError> {
        match (api_key, version) {
            (0, 3..=12) => Ok(Self::Produce(produce::response::ProduceResponse::decode(r, version)?)),
            (1, 4..=16) => Ok(Self::Fetch(fetch::response::FetchResponse::decode(r, version)?)),
            (2, 1..=10) => Ok(Self::ListOffsets(list_offsets::response::ListOffsetsResponse::decode(r, version)?)),
            (3, 1..=13) => Ok(Self::Metadata(metadata::response::MetadataResponse::decode(r, version)?)),
            (8, 2..=9) => Ok(Self::OffsetCommit(offset_commit::response::OffsetCommitResponse::decode(r, version)?)),
            (9, 1..=9) => Ok(Self::OffsetFetch(offset_fetch::response::OffsetFetchResponse::decode(r, version)?)),
            (10, 0..=6) => Ok(Self::FindCoordinator(find_coordinator::response::FindCoordinatorResponse::decode(r, version)?)),
            (11, 2..=7) => Ok(Self::JoinGroup(join_group::response::JoinGroupResponse::decode(r, version)?)),
            (12, 0..=4) => Ok(Self::Heartbeat(heartbeat::response::HeartbeatResponse::decode(r, version)?)),
            (13, 0..=5) => Ok(Self::LeaveGroup(leave_group::response::LeaveGroupResponse::decode(r, version)?)),
            (14, 0..=5) => Ok(Self::SyncGroup(sync_group::response::SyncGroupResponse::decode(r, version)?)),
            (15, 0..=6) => Ok(Self::DescribeGroups(describe_groups::response::DescribeGroupsResponse::decode(r, version)?)),
            (16, 0..=5) => Ok(Self::ListGroups(list_groups::response::ListGroupsResponse::decode(r, version)?)),
            (18, 0..=4) => Ok(Self::ApiVersions(api_versions::response::ApiVersionsResponse::decode(r, version)?)),
            (19, 2..=7) => Ok(Self::CreateTopics(create_topics::response::CreateTopicsResponse::decode(r, version)?)),
            (22, 0..=5) => Ok(Self::InitProducerId(init_producer_id::response::InitProducerIdResponse::decode(r, version)?)),
            (23, 2..=4) => Ok(Self::OffsetForLeaderEpoch(offset_for_leader_epoch::response::OffsetForLeaderEpochResponse::decode(r, version)?)),
            (24, 0..=5) => Ok(Self::AddPartitionsToTxn(add_partitions_to_txn::response::AddPartitionsToTxnResponse::decode(r, version)?)),
            (25, 0..=4) => Ok(Self::AddOffsetsToTxn(add_offsets_to_txn::response::AddOffsetsToTxnResponse::decode(r, version)?)),
            (26, 0..=5) => Ok(Self::EndTxn(end_txn::response::EndTxnResponse::decode(r, version)?)),
            (27, 1..=1) => Ok(Self::WriteTxnMarkers(write_txn_markers::response::WriteTxnMarkersResponse::decode(r, version)?)),
            (28, 0..=5) => Ok(Self::TxnOffsetCommit(txn_offset_commit::response::TxnOffsetCommitResponse::decode(r, version)?)),
            (32, 1..=4) => Ok(Self::DescribeConfigs(describe_configs::response::DescribeConfigsResponse::decode(r, version)?)),
            (42, 0..=2) => Ok(Self::DeleteGroups(delete_groups::response::DeleteGroupsResponse::decode(r, version)?)),
            (47, 0..=0) => Ok(Self::OffsetDelete(offset_delete::response::OffsetDeleteResponse::decode(r, version)?)),
            (60, 0..=1) => Ok(Self::DescribeCluster(describe_cluster::response::DescribeClusterResponse::decode(r, version)?)),
            (61, 0..=0) => Ok(Self::DescribeProducers(describe_producers::response::DescribeProducersResponse::decode(r, version)?)),
            (65, 0..=0) => Ok(Self::DescribeTransactions(describe_transactions::response::DescribeTransactionsResponse::decode(r, version)?)),
            (66, 0..=1) => Ok(Self::ListTransactions(list_transactions::response::ListTransactionsResponse::decode(r, version)?)),
            (68, 0..=1) => Ok(Self::ConsumerGroupHeartbeat(consumer_group_heartbeat::response::ConsumerGroupHeartbeatResponse::decode(r, version)?)),
            (69, 0..=0) => Ok(Self::ConsumerGroupDescribe(consumer_group_describe::response::ConsumerGroupDescribeResponse::decode(r, version)?)),
            (75, 0..=0) => Ok(Self::DescribeTopicPartitions(describe_topic_partitions::response::DescribeTopicPartitionsResponse::decode(r, version)?)),
            _ => Err(WireError::UnsupportedVersion { api_key, version }),
        }
    }

    pub fn api_key(&self) -> i16 {
        match self {
            Self::Produce(_) => 0,
            Self::Fetch(_) => 1,
            Self::ListOffsets(_) => 2,
            Self::Metadata(_) => 3,
            Self::OffsetCommit(_) => 8,
            Self::OffsetFetch(_) => 9,
            Self::FindCoordinator(_) => 10,
            Self::JoinGroup(_) => 11,
            Self::Heartbeat(_) => 12,
            Self::LeaveGroup(_) => 13,
            Self::SyncGroup(_) => 14,
            Self::DescribeGroups(_) => 15,
            Self::ListGroups(_) => 16,
            Self::ApiVersions(_) => 18,
            Self::CreateTopics(_) => 19,
            Self::InitProducerId(_) => 22,
            Self::OffsetForLeaderEpoch(_) => 23,
            Self::AddPartitionsToTxn(_) => 24,
            Self::AddOffsetsToTxn(_) => 25,
            Self::EndTxn(_) => 26,
            Self::WriteTxnMarkers(_) => 27,
            Self::TxnOffsetCommit(_) => 28,
            Self::DescribeConfigs(_) => 32,
            Self::DeleteGroups(_) => 42,
            Self::OffsetDelete(_) => 47,
            Self::DescribeCluster(_) => 60,
            Self::DescribeProducers(_) => 61,
            Self::DescribeTransactions(_) => 65,
            Self::ListTransactions(_) => 66,
            Self::ConsumerGroupHeartbeat(_) => 68,
            Self::ConsumerGroupDescribe(_) => 69,
            Self::DescribeTopicPartitions(_) => 75,
        }
    }

    /// Encodes the body at `version`; versions outside `COVERED` are refused.
    pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
        let api_key = self.api_key();
        if !covers(api_key, version) {
            return Err(WireError::UnsupportedVersion { api_key, version });
        }
        match self {
            Self::Produce(m) => m.encode(w, version),
            Self::Fetch(m) => m.encode(w, version),
            Self::ListOffsets(m) => m.encode(w, version),
            Self::Metadata(m) => m.encode(w, version),
            Self::OffsetCommit(m) => m.encode(w, version),
            Self::OffsetFetch(m) => m.encode(w, version),
            Self::FindCoordinator(m) => m.encode(w, version),
            Self::JoinGroup(m) => m.encode(w, version),
            Self::Heartbeat(m) => m.encode(w, version),
            Self::LeaveGroup(m) => m.encode(w, version),
            Self::SyncGroup(m) => m.encode(w, version),
            Self::DescribeGroups(m) => m.encode(w, version),
            Self::ListGroups(m) => m.encode(w, version),
            Self::ApiVersions(m) => m.encode(w, version),
            Self::CreateTopics(m) => m.encode(w, version),
            Self::InitProducerId(m) => m.encode(w, version),
            Self::OffsetForLeaderEpoch(m) => m.encode(w, version),
            Self::AddPartitionsToTxn(m) => m.encode(w, version),
            Self::AddOffsetsToTxn(m) => m.encode(w, version),
            Self::EndTxn(m) => m.encode(w, version),
            Self::WriteTxnMarkers(m) => m.encode(w, version),
            Self::TxnOffsetCommit(m) => m.encode(w, version),
            Self::DescribeConfigs(m) => m.encode(w, version),
            Self::DeleteGroups(m) => m.encode(w, version),
            Self::OffsetDelete(m) => m.encode(w, version),
            Self::DescribeCluster(m) => m.encode(w, version),
            Self::DescribeProducers(m) => m.encode(w, version),
            Self::DescribeTransactions(m) => m.encode(w, version),
            Self::ListTransactions(m) => m.encode(w, version),
            Self::ConsumerGroupHeartbeat(m) => m.encode(w, version),
            Self::ConsumerGroupDescribe(m) => m.encode(w, version),
            Self::DescribeTopicPartitions(m) => m.encode(w, version),
        }
    }

    pub fn dump_json(&self, out: &mut String, version: i16) {
        match self {
            Self::Produce(m) => m.dump_json(out, version),
            Self::Fetch(m) => m.dump_json(out, version),
            Self::ListOffsets(m) => m.dump_json(out, version),
            Self::Metadata(m) => m.dump_json(out, version),
            Self::OffsetCommit(m) => m.dump_json(out, version),
            Self::OffsetFetch(m) => m.dump_json(out, version),
            Self::FindCoordinator(m) => m.dump_json(out, version),
            Self::JoinGroup(m) => m.dump_json(out, version),
            Self::Heartbeat(m) => m.dump_json(out, version),
            Self::LeaveGroup(m) => m.dump_json(out, version),
            Self::SyncGroup(m) => m.dump_json(out, version),
            Self::DescribeGroups(m) => m.dump_json(out, version),
            Self::ListGroups(m) => m.dump_json(out, version),
            Self::ApiVersions(m) => m.dump_json(out, version),
            Self::CreateTopics(m) => m.dump_json(out, version),
            Self::InitProducerId(m) => m.dump_json(out, version),
            Self::OffsetForLeaderEpoch(m) => m.dump_json(out, version),
            Self::AddPartitionsToTxn(m) => m.dump_json(out, version),
            Self::AddOffsetsToTxn(m) => m.dump_json(out, version),
            Self::EndTxn(m) => m.dump_json(out, version),
            Self::WriteTxnMarkers(m) => m.dump_json(out, version),
            Self::TxnOffsetCommit(m) => m.dump_json(out, version),
            Self::DescribeConfigs(m) => m.dump_json(out, version),
            Self::DeleteGroups(m) => m.dump_json(out, version),
            Self::OffsetDelete(m) => m.dump_json(out, version),
            Self::DescribeCluster(m) => m.dump_json(out, version),
            Self::DescribeProducers(m) => m.dump_json(out, version),
            Self::DescribeTransactions(m) => m.dump_json(out, version),
            Self::ListTransactions(m) => m.dump_json(out, version),
            Self::ConsumerGroupHeartbeat(m) => m.dump_json(out, version),
            Self::ConsumerGroupDescribe(m) => m.dump_json(out, version),
            Self::DescribeTopicPartitions(m) => m.dump_json(out, version),
        }
    }
}
