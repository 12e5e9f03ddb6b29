// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeClusterRequest {
        /// Whether to include cluster authorized operations.
        /// (versions 0+)
        pub include_cluster_authorized_operations: bool,
        /// The endpoint type to describe. 1=brokers, 2=controllers.
        /// (versions 1+, default 1)
        pub endpoint_type: i8,
        /// Whether to include fenced brokers when listing brokers.
        /// (versions 2+)
        pub include_fenced_brokers: bool,
    }

    impl Default for DescribeClusterRequest {
        fn default() -> Self {
            Self {
                include_cluster_authorized_operations: false,
                endpoint_type: 1,
                include_fenced_brokers: false,
            }
        }
    }

    impl DescribeClusterRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.include_cluster_authorized_operations = r.bool()?;
            if version >= 1 { this.endpoint_type = r.i8()?; }
            if version >= 2 { this.include_fenced_brokers = r.bool()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_bool(w, self.include_cluster_authorized_operations);
            if version >= 1 { put_i8(w, self.endpoint_type); } else if self.endpoint_type != 1 { return Err(WireError::UnsupportedField { field: "DescribeClusterRequest.EndpointType", version }); }
            if version >= 2 { put_bool(w, self.include_fenced_brokers); } else if self.include_fenced_brokers { return Err(WireError::UnsupportedField { field: "DescribeClusterRequest.IncludeFencedBrokers", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "include_cluster_authorized_operations"); dump_display(out, self.include_cluster_authorized_operations);
            if version >= 1 { json_key(out, &mut first, "endpoint_type"); dump_display(out, self.endpoint_type); }
            if version >= 2 { json_key(out, &mut first, "include_fenced_brokers"); dump_display(out, self.include_fenced_brokers); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribeClusterResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// The top-level error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The top-level error message, or null if there was no error.
        /// (versions 0+, nullable 0+, default null)
        pub error_message: Option<String>,
        /// The endpoint type that was described. 1=brokers, 2=controllers.
        /// (versions 1+, default 1)
        pub endpoint_type: i8,
        /// The cluster ID that responding broker belongs to.
        /// (versions 0+)
        pub cluster_id: String,
        /// The ID of the controller broker.
        /// (versions 0+, default -1)
        pub controller_id: i32,
        /// Each broker in the response.
        /// (versions 0+)
        pub brokers: Vec<DescribeClusterBroker>,
        /// 32-bit bitfield to represent authorized operations for this cluster.
        /// (versions 0+, default -2147483648)
        pub cluster_authorized_operations: i32,
    }

    impl Default for DescribeClusterResponse {
        fn default() -> Self {
            Self {
                throttle_time_ms: 0,
                error_code: 0,
                error_message: None,
                endpoint_type: 1,
                cluster_id: String::new(),
                controller_id: -1,
                brokers: Vec::new(),
                cluster_authorized_operations: -2147483648,
            }
        }
    }

    impl DescribeClusterResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.error_code = r.i16()?;
            this.error_message = r.nullable_string(flexible)?;
            if version >= 1 { this.endpoint_type = r.i8()?; }
            this.cluster_id = r.string(flexible, "ClusterId")?;
            this.controller_id = r.i32()?;
            this.brokers = { let n = r.array_len(flexible, "Brokers")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribeClusterBroker::decode(r, version)?); } v };
            this.cluster_authorized_operations = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i32(w, self.throttle_time_ms);
            put_i16(w, self.error_code);
            match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            if version >= 1 { put_i8(w, self.endpoint_type); } else if self.endpoint_type != 1 { return Err(WireError::UnsupportedField { field: "DescribeClusterResponse.EndpointType", version }); }
            put_string(w, flexible, &self.cluster_id)?;
            put_i32(w, self.controller_id);
            put_array_len(w, flexible, self.brokers.len()); for e in &self.brokers { e.encode(w, version)?; }
            put_i32(w, self.cluster_authorized_operations);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            if version >= 1 { json_key(out, &mut first, "endpoint_type"); dump_display(out, self.endpoint_type); }
            json_key(out, &mut first, "cluster_id"); dump_str(out, &self.cluster_id);
            json_key(out, &mut first, "controller_id"); dump_display(out, self.controller_id);
            json_key(out, &mut first, "brokers"); out.push('['); for (i, e) in self.brokers.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "cluster_authorized_operations"); dump_display(out, self.cluster_authorized_operations);
            out.push('}');
        }
    }

    /// Each broker in the response.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeClusterBroker {
        /// The broker ID.
        /// (versions 0+)
        pub broker_id: i32,
        /// The broker hostname.
        /// (versions 0+)
        pub host: String,
        /// The broker port.
        /// (versions 0+)
        pub port: i32,
        /// The rack of the broker, or null if it has not been assigned to a rack.
        /// (versions 0+, nullable 0+, default null)
        pub rack: Option<String>,
        /// Whether the broker is fenced
        /// (versions 2+)
        pub is_fenced: bool,
    }

    impl DescribeClusterBroker {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.broker_id = r.i32()?;
            this.host = r.string(flexible, "Host")?;
            this.port = r.i32()?;
            this.rack = r.nullable_string(flexible)?;
            if version >= 2 { this.is_fenced = r.bool()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i32(w, self.broker_id);
            put_string(w, flexible, &self.host)?;
            put_i32(w, self.port);
            match &self.rack { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            if version >= 2 { put_bool(w, self.is_fenced); } else if self.is_fenced { return Err(WireError::UnsupportedField { field: "DescribeClusterResponse.DescribeClusterBroker.IsFenced", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "broker_id"); dump_display(out, self.broker_id);
            json_key(out, &mut first, "host"); dump_str(out, &self.host);
            json_key(out, &mut first, "port"); dump_display(out, self.port);
            json_key(out, &mut first, "rack"); match &self.rack { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            if version >= 2 { json_key(out, &mut first, "is_fenced"); dump_display(out, self.is_fenced); }
            out.push('}');
        }
    }
}
