// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct EndTxnRequest {
        /// The ID of the transaction to end.
        /// (versions 0+)
        pub transactional_id: String,
        /// The producer ID.
        /// (versions 0+)
        pub producer_id: i64,
        /// The current epoch associated with the producer.
        /// (versions 0+)
        pub producer_epoch: i16,
        /// True if the transaction was committed, false if it was aborted.
        /// (versions 0+)
        pub committed: bool,
    }

    impl EndTxnRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.transactional_id = r.string(flexible, "TransactionalId")?;
            this.producer_id = r.i64()?;
            this.producer_epoch = r.i16()?;
            this.committed = r.bool()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_string(w, flexible, &self.transactional_id)?;
            put_i64(w, self.producer_id);
            put_i16(w, self.producer_epoch);
            put_bool(w, self.committed);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "transactional_id"); dump_str(out, &self.transactional_id);
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch);
            json_key(out, &mut first, "committed"); dump_display(out, self.committed);
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct EndTxnResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The producer ID.
        /// (versions 5+, default -1, ignorable)
        pub producer_id: i64,
        /// The current epoch associated with the producer.
        /// (versions 5+, default -1, ignorable)
        pub producer_epoch: i16,
    }

    impl Default for EndTxnResponse {
        fn default() -> Self {
            Self {
                throttle_time_ms: 0,
                error_code: 0,
                producer_id: -1,
                producer_epoch: -1,
            }
        }
    }

    impl EndTxnResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.error_code = r.i16()?;
            if version >= 5 { this.producer_id = r.i64()?; }
            if version >= 5 { this.producer_epoch = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_i32(w, self.throttle_time_ms);
            put_i16(w, self.error_code);
            if version >= 5 { put_i64(w, self.producer_id); }
            if version >= 5 { put_i16(w, self.producer_epoch); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            if version >= 5 { json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id); }
            if version >= 5 { json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch); }
            out.push('}');
        }
    }
}
