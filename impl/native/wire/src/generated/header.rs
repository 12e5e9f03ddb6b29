// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request_header {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct RequestHeader {
        /// The API key of this request.
        /// (versions 0+)
        pub request_api_key: i16,
        /// The API version of this request.
        /// (versions 0+)
        pub request_api_version: i16,
        /// The correlation ID of this request.
        /// (versions 0+)
        pub correlation_id: i32,
        /// The client ID string.
        /// (versions 1+, nullable 1+)
        pub client_id: Option<String>,
    }

    impl Default for RequestHeader {
        fn default() -> Self {
            Self {
                request_api_key: 0,
                request_api_version: 0,
                correlation_id: 0,
                client_id: Some(String::new()),
            }
        }
    }

    impl RequestHeader {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 2;
            let mut this = Self::default();
            this.request_api_key = r.i16()?;
            this.request_api_version = r.i16()?;
            this.correlation_id = r.i32()?;
            this.client_id = r.nullable_string(false)?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 2;
            put_i16(w, self.request_api_key);
            put_i16(w, self.request_api_version);
            put_i32(w, self.correlation_id);
            match &self.client_id { Some(v) => { put_string(w, false, v)?; } None => { put_null_string(w, false); } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "request_api_key"); dump_display(out, self.request_api_key);
            json_key(out, &mut first, "request_api_version"); dump_display(out, self.request_api_version);
            json_key(out, &mut first, "correlation_id"); dump_display(out, self.correlation_id);
            json_key(out, &mut first, "client_id"); match &self.client_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            out.push('}');
        }
    }
}

pub mod response_header {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ResponseHeader {
        /// The correlation ID of this response.
        /// (versions 0+)
        pub correlation_id: i32,
    }

    impl ResponseHeader {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 1;
            let mut this = Self::default();
            this.correlation_id = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 1;
            put_i32(w, self.correlation_id);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "correlation_id"); dump_display(out, self.correlation_id);
            out.push('}');
        }
    }
}
