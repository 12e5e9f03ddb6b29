// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct InitProducerIdRequest {
        /// The transactional id, or null if the producer is not transactional.
        /// (versions 0+, nullable 0+)
        pub transactional_id: Option<String>,
        /// The time in ms to wait before aborting idle transactions sent by this producer. This is only relevant if a TransactionalId has been defined.
        /// (versions 0+)
        pub transaction_timeout_ms: i32,
        /// The producer id. This is used to disambiguate requests if a transactional id is reused following its expiration.
        /// (versions 3+, default -1)
        pub producer_id: i64,
        /// The producer's current epoch. This will be checked against the producer epoch on the broker, and the request will return an error if they do not match.
        /// (versions 3+, default -1)
        pub producer_epoch: i16,
    }

    impl Default for InitProducerIdRequest {
        fn default() -> Self {
            Self {
                transactional_id: Some(String::new()),
                transaction_timeout_ms: 0,
                producer_id: -1,
                producer_epoch: -1,
            }
        }
    }

    impl InitProducerIdRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 2;
            let mut this = Self::default();
            this.transactional_id = r.nullable_string(flexible)?;
            this.transaction_timeout_ms = r.i32()?;
            if version >= 3 { this.producer_id = r.i64()?; }
            if version >= 3 { this.producer_epoch = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 2;
            match &self.transactional_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_i32(w, self.transaction_timeout_ms);
            if version >= 3 { put_i64(w, self.producer_id); } else if self.producer_id != -1 { return Err(WireError::UnsupportedField { field: "InitProducerIdRequest.ProducerId", version }); }
            if version >= 3 { put_i16(w, self.producer_epoch); } else if self.producer_epoch != -1 { return Err(WireError::UnsupportedField { field: "InitProducerIdRequest.ProducerEpoch", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "transactional_id"); match &self.transactional_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "transaction_timeout_ms"); dump_display(out, self.transaction_timeout_ms);
            if version >= 3 { json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id); }
            if version >= 3 { json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct InitProducerIdResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+, ignorable)
        pub throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The current producer id.
        /// (versions 0+, default -1)
        pub producer_id: i64,
        /// The current epoch associated with the producer id.
        /// (versions 0+)
        pub producer_epoch: i16,
    }

    impl Default for InitProducerIdResponse {
        fn default() -> Self {
            Self {
                throttle_time_ms: 0,
                error_code: 0,
                producer_id: -1,
                producer_epoch: 0,
            }
        }
    }

    impl InitProducerIdResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 2;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.error_code = r.i16()?;
            this.producer_id = r.i64()?;
            this.producer_epoch = r.i16()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 2;
            put_i32(w, self.throttle_time_ms);
            put_i16(w, self.error_code);
            put_i64(w, self.producer_id);
            put_i16(w, self.producer_epoch);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch);
            out.push('}');
        }
    }
}
