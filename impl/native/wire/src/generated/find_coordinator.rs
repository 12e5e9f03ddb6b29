// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct FindCoordinatorRequest {
        /// The coordinator key.
        /// (versions 0-3)
        pub key: String,
        /// The coordinator key type. (group, transaction, share).
        /// (versions 1+, default 0)
        pub key_type: i8,
        /// The coordinator keys.
        /// (versions 4+)
        pub coordinator_keys: Vec<String>,
    }

    impl FindCoordinatorRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version <= 3 { this.key = r.string(flexible, "Key")?; }
            if version >= 1 { this.key_type = r.i8()?; }
            if version >= 4 { this.coordinator_keys = { let n = r.array_len(flexible, "CoordinatorKeys")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "CoordinatorKeys")?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version <= 3 { put_string(w, flexible, &self.key)?; } else if !self.key.is_empty() { return Err(WireError::UnsupportedField { field: "FindCoordinatorRequest.Key", version }); }
            if version >= 1 { put_i8(w, self.key_type); } else if self.key_type != 0 { return Err(WireError::UnsupportedField { field: "FindCoordinatorRequest.KeyType", version }); }
            if version >= 4 { put_array_len(w, flexible, self.coordinator_keys.len()); for e in &self.coordinator_keys { put_string(w, flexible, e)?; } } else if !self.coordinator_keys.is_empty() { return Err(WireError::UnsupportedField { field: "FindCoordinatorRequest.CoordinatorKeys", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version <= 3 { json_key(out, &mut first, "key"); dump_str(out, &self.key); }
            if version >= 1 { json_key(out, &mut first, "key_type"); dump_display(out, self.key_type); }
            if version >= 4 { json_key(out, &mut first, "coordinator_keys"); out.push('['); for (i, e) in self.coordinator_keys.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']'); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct FindCoordinatorResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 1+, ignorable)
        pub throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0-3)
        pub error_code: i16,
        /// The error message, or null if there was no error.
        /// (versions 1-3, nullable 1-3, ignorable)
        pub error_message: Option<String>,
        /// The node id.
        /// (versions 0-3)
        pub node_id: i32,
        /// The host name.
        /// (versions 0-3)
        pub host: String,
        /// The port.
        /// (versions 0-3)
        pub port: i32,
        /// Each coordinator result in the response.
        /// (versions 4+)
        pub coordinators: Vec<Coordinator>,
    }

    impl Default for FindCoordinatorResponse {
        fn default() -> Self {
            Self {
                throttle_time_ms: 0,
                error_code: 0,
                error_message: Some(String::new()),
                node_id: 0,
                host: String::new(),
                port: 0,
                coordinators: Vec::new(),
            }
        }
    }

    impl FindCoordinatorResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 1 { this.throttle_time_ms = r.i32()?; }
            if version <= 3 { this.error_code = r.i16()?; }
            if (1..=3).contains(&version) { this.error_message = r.nullable_string(flexible)?; }
            if version <= 3 { this.node_id = r.i32()?; }
            if version <= 3 { this.host = r.string(flexible, "Host")?; }
            if version <= 3 { this.port = r.i32()?; }
            if version >= 4 { this.coordinators = { let n = r.array_len(flexible, "Coordinators")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(Coordinator::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 1 { put_i32(w, self.throttle_time_ms); }
            if version <= 3 { put_i16(w, self.error_code); } else if self.error_code != 0 { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.ErrorCode", version }); }
            if (1..=3).contains(&version) { match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if version <= 3 { put_i32(w, self.node_id); } else if self.node_id != 0 { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.NodeId", version }); }
            if version <= 3 { put_string(w, flexible, &self.host)?; } else if !self.host.is_empty() { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.Host", version }); }
            if version <= 3 { put_i32(w, self.port); } else if self.port != 0 { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.Port", version }); }
            if version >= 4 { put_array_len(w, flexible, self.coordinators.len()); for e in &self.coordinators { e.encode(w, version)?; } } else if !self.coordinators.is_empty() { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.Coordinators", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 1 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            if version <= 3 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            if (1..=3).contains(&version) { json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version <= 3 { json_key(out, &mut first, "node_id"); dump_display(out, self.node_id); }
            if version <= 3 { json_key(out, &mut first, "host"); dump_str(out, &self.host); }
            if version <= 3 { json_key(out, &mut first, "port"); dump_display(out, self.port); }
            if version >= 4 { json_key(out, &mut first, "coordinators"); out.push('['); for (i, e) in self.coordinators.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// Each coordinator result in the response.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Coordinator {
        /// The coordinator key.
        /// (versions 4+)
        pub key: String,
        /// The node id.
        /// (versions 4+)
        pub node_id: i32,
        /// The host name.
        /// (versions 4+)
        pub host: String,
        /// The port.
        /// (versions 4+)
        pub port: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 4+)
        pub error_code: i16,
        /// The error message, or null if there was no error.
        /// (versions 4+, nullable 4+, ignorable)
        pub error_message: Option<String>,
    }

    impl Default for Coordinator {
        fn default() -> Self {
            Self {
                key: String::new(),
                node_id: 0,
                host: String::new(),
                port: 0,
                error_code: 0,
                error_message: Some(String::new()),
            }
        }
    }

    impl Coordinator {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 4 { this.key = r.string(flexible, "Key")?; }
            if version >= 4 { this.node_id = r.i32()?; }
            if version >= 4 { this.host = r.string(flexible, "Host")?; }
            if version >= 4 { this.port = r.i32()?; }
            if version >= 4 { this.error_code = r.i16()?; }
            if version >= 4 { this.error_message = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 4 { put_string(w, flexible, &self.key)?; } else if !self.key.is_empty() { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.Coordinator.Key", version }); }
            if version >= 4 { put_i32(w, self.node_id); } else if self.node_id != 0 { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.Coordinator.NodeId", version }); }
            if version >= 4 { put_string(w, flexible, &self.host)?; } else if !self.host.is_empty() { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.Coordinator.Host", version }); }
            if version >= 4 { put_i32(w, self.port); } else if self.port != 0 { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.Coordinator.Port", version }); }
            if version >= 4 { put_i16(w, self.error_code); } else if self.error_code != 0 { return Err(WireError::UnsupportedField { field: "FindCoordinatorResponse.Coordinator.ErrorCode", version }); }
            if version >= 4 { match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 4 { json_key(out, &mut first, "key"); dump_str(out, &self.key); }
            if version >= 4 { json_key(out, &mut first, "node_id"); dump_display(out, self.node_id); }
            if version >= 4 { json_key(out, &mut first, "host"); dump_str(out, &self.host); }
            if version >= 4 { json_key(out, &mut first, "port"); dump_display(out, self.port); }
            if version >= 4 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            if version >= 4 { json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }
}
