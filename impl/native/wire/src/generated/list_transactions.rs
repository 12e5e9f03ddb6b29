// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct ListTransactionsRequest {
        /// The transaction states to filter by: if empty, all transactions are returned; if non-empty, then only transactions matching one of the filtered states will be returned.
        /// (versions 0+)
        pub state_filters: Vec<String>,
        /// The producerIds to filter by: if empty, all transactions will be returned; if non-empty, only transactions which match one of the filtered producerIds will be returned.
        /// (versions 0+)
        pub producer_id_filters: Vec<i64>,
        /// Duration (in millis) to filter by: if < 0, all transactions will be returned; otherwise, only transactions running longer than this duration will be returned.
        /// (versions 1+, default -1)
        pub duration_filter: i64,
    }

    impl Default for ListTransactionsRequest {
        fn default() -> Self {
            Self {
                state_filters: Vec::new(),
                producer_id_filters: Vec::new(),
                duration_filter: -1,
            }
        }
    }

    impl ListTransactionsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.state_filters = { let n = r.array_len(flexible, "StateFilters")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "StateFilters")?); } v };
            this.producer_id_filters = { let n = r.array_len(flexible, "ProducerIdFilters")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i64()?); } v };
            if version >= 1 { this.duration_filter = r.i64()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_array_len(w, flexible, self.state_filters.len()); for e in &self.state_filters { put_string(w, flexible, e)?; }
            put_array_len(w, flexible, self.producer_id_filters.len()); for e in &self.producer_id_filters { put_i64(w, *e); }
            if version >= 1 { put_i64(w, self.duration_filter); } else if self.duration_filter != -1 { return Err(WireError::UnsupportedField { field: "ListTransactionsRequest.DurationFilter", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "state_filters"); out.push('['); for (i, e) in self.state_filters.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']');
            json_key(out, &mut first, "producer_id_filters"); out.push('['); for (i, e) in self.producer_id_filters.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            if version >= 1 { json_key(out, &mut first, "duration_filter"); dump_display(out, self.duration_filter); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ListTransactionsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// Set of state filters provided in the request which were unknown to the transaction coordinator.
        /// (versions 0+)
        pub unknown_state_filters: Vec<String>,
        /// The current state of the transaction for the transactional id.
        /// (versions 0+)
        pub transaction_states: Vec<TransactionState>,
    }

    impl ListTransactionsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.error_code = r.i16()?;
            this.unknown_state_filters = { let n = r.array_len(flexible, "UnknownStateFilters")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "UnknownStateFilters")?); } v };
            this.transaction_states = { let n = r.array_len(flexible, "TransactionStates")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TransactionState::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i32(w, self.throttle_time_ms);
            put_i16(w, self.error_code);
            put_array_len(w, flexible, self.unknown_state_filters.len()); for e in &self.unknown_state_filters { put_string(w, flexible, e)?; }
            put_array_len(w, flexible, self.transaction_states.len()); for e in &self.transaction_states { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "unknown_state_filters"); out.push('['); for (i, e) in self.unknown_state_filters.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']');
            json_key(out, &mut first, "transaction_states"); out.push('['); for (i, e) in self.transaction_states.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The current state of the transaction for the transactional id.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TransactionState {
        /// The transactional id.
        /// (versions 0+)
        pub transactional_id: String,
        /// The producer id.
        /// (versions 0+)
        pub producer_id: i64,
        /// The current transaction state of the producer.
        /// (versions 0+)
        pub transaction_state: String,
    }

    impl TransactionState {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.transactional_id = r.string(flexible, "TransactionalId")?;
            this.producer_id = r.i64()?;
            this.transaction_state = r.string(flexible, "TransactionState")?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.transactional_id)?;
            put_i64(w, self.producer_id);
            put_string(w, flexible, &self.transaction_state)?;
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "transactional_id"); dump_str(out, &self.transactional_id);
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "transaction_state"); dump_str(out, &self.transaction_state);
            out.push('}');
        }
    }
}
