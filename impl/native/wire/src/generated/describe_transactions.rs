// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeTransactionsRequest {
        /// Array of transactionalIds to include in describe results. If empty, then no results will be returned.
        /// (versions 0+)
        pub transactional_ids: Vec<String>,
    }

    impl DescribeTransactionsRequest {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.transactional_ids = { let n = r.array_len(flexible, "TransactionalIds")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "TransactionalIds")?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_array_len(w, flexible, self.transactional_ids.len()); for e in &self.transactional_ids { put_string(w, flexible, e)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "transactional_ids"); out.push('['); for (i, e) in self.transactional_ids.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']');
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeTransactionsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// The current state of the transaction.
        /// (versions 0+)
        pub transaction_states: Vec<TransactionState>,
    }

    impl DescribeTransactionsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.transaction_states = { let n = r.array_len(flexible, "TransactionStates")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TransactionState::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i32(w, self.throttle_time_ms);
            put_array_len(w, flexible, self.transaction_states.len()); for e in &self.transaction_states { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "transaction_states"); out.push('['); for (i, e) in self.transaction_states.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The current state of the transaction.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TransactionState {
        /// The error code.
        /// (versions 0+)
        pub error_code: i16,
        /// The transactional id.
        /// (versions 0+)
        pub transactional_id: String,
        /// The current transaction state of the producer.
        /// (versions 0+)
        pub transaction_state: String,
        /// The timeout in milliseconds for the transaction.
        /// (versions 0+)
        pub transaction_timeout_ms: i32,
        /// The start time of the transaction in milliseconds.
        /// (versions 0+)
        pub transaction_start_time_ms: i64,
        /// The current producer id associated with the transaction.
        /// (versions 0+)
        pub producer_id: i64,
        /// The current epoch associated with the producer id.
        /// (versions 0+)
        pub producer_epoch: i16,
        /// The set of partitions included in the current transaction (if active). When a transaction is preparing to commit or abort, this will include only partitions which do not have markers.
        /// (versions 0+)
        pub topics: Vec<TopicData>,
    }

    impl TransactionState {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.transactional_id = r.string(flexible, "TransactionalId")?;
            this.transaction_state = r.string(flexible, "TransactionState")?;
            this.transaction_timeout_ms = r.i32()?;
            this.transaction_start_time_ms = r.i64()?;
            this.producer_id = r.i64()?;
            this.producer_epoch = r.i16()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TopicData::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i16(w, self.error_code);
            put_string(w, flexible, &self.transactional_id)?;
            put_string(w, flexible, &self.transaction_state)?;
            put_i32(w, self.transaction_timeout_ms);
            put_i64(w, self.transaction_start_time_ms);
            put_i64(w, self.producer_id);
            put_i16(w, self.producer_epoch);
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "transactional_id"); dump_str(out, &self.transactional_id);
            json_key(out, &mut first, "transaction_state"); dump_str(out, &self.transaction_state);
            json_key(out, &mut first, "transaction_timeout_ms"); dump_display(out, self.transaction_timeout_ms);
            json_key(out, &mut first, "transaction_start_time_ms"); dump_display(out, self.transaction_start_time_ms);
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch);
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The set of partitions included in the current transaction (if active). When a transaction is preparing to commit or abort, this will include only partitions which do not have markers.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TopicData {
        /// The topic name.
        /// (versions 0+)
        pub topic: String,
        /// The partition ids included in the current transaction.
        /// (versions 0+)
        pub partitions: Vec<i32>,
    }

    impl TopicData {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.topic = r.string(flexible, "Topic")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.topic)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { put_i32(w, *e); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topic"); dump_str(out, &self.topic);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            out.push('}');
        }
    }
}
