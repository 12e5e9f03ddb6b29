// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct AddPartitionsToTxnRequest {
        /// List of transactions to add partitions to.
        /// (versions 4+)
        pub transactions: Vec<AddPartitionsToTxnTransaction>,
        /// The transactional id corresponding to the transaction.
        /// (versions 0-3)
        pub v3_and_below_transactional_id: String,
        /// Current producer id in use by the transactional id.
        /// (versions 0-3)
        pub v3_and_below_producer_id: i64,
        /// Current epoch associated with the producer id.
        /// (versions 0-3)
        pub v3_and_below_producer_epoch: i16,
        /// The partitions to add to the transaction.
        /// (versions 0-3)
        pub v3_and_below_topics: Vec<AddPartitionsToTxnTopic>,
    }

    impl AddPartitionsToTxnRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 4 { this.transactions = { let n = r.array_len(flexible, "Transactions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(AddPartitionsToTxnTransaction::decode(r, version)?); } v }; }
            if version <= 3 { this.v3_and_below_transactional_id = r.string(flexible, "V3AndBelowTransactionalId")?; }
            if version <= 3 { this.v3_and_below_producer_id = r.i64()?; }
            if version <= 3 { this.v3_and_below_producer_epoch = r.i16()?; }
            if version <= 3 { this.v3_and_below_topics = { let n = r.array_len(flexible, "V3AndBelowTopics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(AddPartitionsToTxnTopic::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 4 { put_array_len(w, flexible, self.transactions.len()); for e in &self.transactions { e.encode(w, version)?; } } else if !self.transactions.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.Transactions", version }); }
            if version <= 3 { put_string(w, flexible, &self.v3_and_below_transactional_id)?; } else if !self.v3_and_below_transactional_id.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.V3AndBelowTransactionalId", version }); }
            if version <= 3 { put_i64(w, self.v3_and_below_producer_id); } else if self.v3_and_below_producer_id != 0 { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.V3AndBelowProducerId", version }); }
            if version <= 3 { put_i16(w, self.v3_and_below_producer_epoch); } else if self.v3_and_below_producer_epoch != 0 { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.V3AndBelowProducerEpoch", version }); }
            if version <= 3 { put_array_len(w, flexible, self.v3_and_below_topics.len()); for e in &self.v3_and_below_topics { e.encode(w, version)?; } } else if !self.v3_and_below_topics.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.V3AndBelowTopics", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 4 { json_key(out, &mut first, "transactions"); out.push('['); for (i, e) in self.transactions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if version <= 3 { json_key(out, &mut first, "v3_and_below_transactional_id"); dump_str(out, &self.v3_and_below_transactional_id); }
            if version <= 3 { json_key(out, &mut first, "v3_and_below_producer_id"); dump_display(out, self.v3_and_below_producer_id); }
            if version <= 3 { json_key(out, &mut first, "v3_and_below_producer_epoch"); dump_display(out, self.v3_and_below_producer_epoch); }
            if version <= 3 { json_key(out, &mut first, "v3_and_below_topics"); out.push('['); for (i, e) in self.v3_and_below_topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// List of transactions to add partitions to.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct AddPartitionsToTxnTransaction {
        /// The transactional id corresponding to the transaction.
        /// (versions 4+)
        pub transactional_id: String,
        /// Current producer id in use by the transactional id.
        /// (versions 4+)
        pub producer_id: i64,
        /// Current epoch associated with the producer id.
        /// (versions 4+)
        pub producer_epoch: i16,
        /// Boolean to signify if we want to check if the partition is in the transaction rather than add it.
        /// (versions 4+, default False)
        pub verify_only: bool,
        /// The partitions to add to the transaction.
        /// (versions 4+)
        pub topics: Vec<AddPartitionsToTxnTopic>,
    }

    impl AddPartitionsToTxnTransaction {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 4 { this.transactional_id = r.string(flexible, "TransactionalId")?; }
            if version >= 4 { this.producer_id = r.i64()?; }
            if version >= 4 { this.producer_epoch = r.i16()?; }
            if version >= 4 { this.verify_only = r.bool()?; }
            if version >= 4 { this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(AddPartitionsToTxnTopic::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 4 { put_string(w, flexible, &self.transactional_id)?; } else if !self.transactional_id.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction.TransactionalId", version }); }
            if version >= 4 { put_i64(w, self.producer_id); } else if self.producer_id != 0 { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction.ProducerId", version }); }
            if version >= 4 { put_i16(w, self.producer_epoch); } else if self.producer_epoch != 0 { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction.ProducerEpoch", version }); }
            if version >= 4 { put_bool(w, self.verify_only); } else if self.verify_only { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction.VerifyOnly", version }); }
            if version >= 4 { put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; } } else if !self.topics.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction.Topics", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 4 { json_key(out, &mut first, "transactional_id"); dump_str(out, &self.transactional_id); }
            if version >= 4 { json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id); }
            if version >= 4 { json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch); }
            if version >= 4 { json_key(out, &mut first, "verify_only"); dump_display(out, self.verify_only); }
            if version >= 4 { json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct AddPartitionsToTxnTopic {
        /// The name of the topic.
        /// (versions 0+)
        pub name: String,
        /// The partition indexes to add to the transaction.
        /// (versions 0+)
        pub partitions: Vec<i32>,
    }

    impl AddPartitionsToTxnTopic {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { put_i32(w, *e); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct AddPartitionsToTxnResponse {
        /// Duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// The response top level error code.
        /// (versions 4+, ignorable)
        pub error_code: i16,
        /// Results categorized by transactional ID.
        /// (versions 4+)
        pub results_by_transaction: Vec<AddPartitionsToTxnResult>,
        /// The results for each topic.
        /// (versions 0-3)
        pub results_by_topic_v3_and_below: Vec<AddPartitionsToTxnTopicResult>,
    }

    impl AddPartitionsToTxnResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            if version >= 4 { this.error_code = r.i16()?; }
            if version >= 4 { this.results_by_transaction = { let n = r.array_len(flexible, "ResultsByTransaction")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(AddPartitionsToTxnResult::decode(r, version)?); } v }; }
            if version <= 3 { this.results_by_topic_v3_and_below = { let n = r.array_len(flexible, "ResultsByTopicV3AndBelow")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(AddPartitionsToTxnTopicResult::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_i32(w, self.throttle_time_ms);
            if version >= 4 { put_i16(w, self.error_code); }
            if version >= 4 { put_array_len(w, flexible, self.results_by_transaction.len()); for e in &self.results_by_transaction { e.encode(w, version)?; } } else if !self.results_by_transaction.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnResponse.ResultsByTransaction", version }); }
            if version <= 3 { put_array_len(w, flexible, self.results_by_topic_v3_and_below.len()); for e in &self.results_by_topic_v3_and_below { e.encode(w, version)?; } } else if !self.results_by_topic_v3_and_below.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnResponse.ResultsByTopicV3AndBelow", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            if version >= 4 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            if version >= 4 { json_key(out, &mut first, "results_by_transaction"); out.push('['); for (i, e) in self.results_by_transaction.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if version <= 3 { json_key(out, &mut first, "results_by_topic_v3_and_below"); out.push('['); for (i, e) in self.results_by_topic_v3_and_below.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// Results categorized by transactional ID.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct AddPartitionsToTxnResult {
        /// The transactional id corresponding to the transaction.
        /// (versions 4+)
        pub transactional_id: String,
        /// The results for each topic.
        /// (versions 4+)
        pub topic_results: Vec<AddPartitionsToTxnTopicResult>,
    }

    impl AddPartitionsToTxnResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 4 { this.transactional_id = r.string(flexible, "TransactionalId")?; }
            if version >= 4 { this.topic_results = { let n = r.array_len(flexible, "TopicResults")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(AddPartitionsToTxnTopicResult::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 4 { put_string(w, flexible, &self.transactional_id)?; } else if !self.transactional_id.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnResponse.AddPartitionsToTxnResult.TransactionalId", version }); }
            if version >= 4 { put_array_len(w, flexible, self.topic_results.len()); for e in &self.topic_results { e.encode(w, version)?; } } else if !self.topic_results.is_empty() { return Err(WireError::UnsupportedField { field: "AddPartitionsToTxnResponse.AddPartitionsToTxnResult.TopicResults", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 4 { json_key(out, &mut first, "transactional_id"); dump_str(out, &self.transactional_id); }
            if version >= 4 { json_key(out, &mut first, "topic_results"); out.push('['); for (i, e) in self.topic_results.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct AddPartitionsToTxnTopicResult {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The results for each partition.
        /// (versions 0+)
        pub results_by_partition: Vec<AddPartitionsToTxnPartitionResult>,
    }

    impl AddPartitionsToTxnTopicResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.results_by_partition = { let n = r.array_len(flexible, "ResultsByPartition")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(AddPartitionsToTxnPartitionResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.results_by_partition.len()); for e in &self.results_by_partition { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "results_by_partition"); out.push('['); for (i, e) in self.results_by_partition.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct AddPartitionsToTxnPartitionResult {
        /// The partition indexes.
        /// (versions 0+)
        pub partition_index: i32,
        /// The response error code.
        /// (versions 0+)
        pub partition_error_code: i16,
    }

    impl AddPartitionsToTxnPartitionResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.partition_error_code = r.i16()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_i32(w, self.partition_index);
            put_i16(w, self.partition_error_code);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "partition_error_code"); dump_display(out, self.partition_error_code);
            out.push('}');
        }
    }
}
