// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct HeartbeatRequest {
        /// The group id.
        /// (versions 0+)
        pub group_id: String,
        /// The generation of the group.
        /// (versions 0+)
        pub generation_id: i32,
        /// The member ID.
        /// (versions 0+)
        pub member_id: String,
        /// The unique identifier of the consumer instance provided by end user.
        /// (versions 3+, nullable 3+, default null)
        pub group_instance_id: Option<String>,
    }

    impl HeartbeatRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.group_id = r.string(flexible, "GroupId")?;
            this.generation_id = r.i32()?;
            this.member_id = r.string(flexible, "MemberId")?;
            if version >= 3 { this.group_instance_id = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_string(w, flexible, &self.group_id)?;
            put_i32(w, self.generation_id);
            put_string(w, flexible, &self.member_id)?;
            if version >= 3 { match &self.group_instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.group_instance_id.is_some() { return Err(WireError::UnsupportedField { field: "HeartbeatRequest.GroupInstanceId", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "generation_id"); dump_display(out, self.generation_id);
            json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id);
            if version >= 3 { json_key(out, &mut first, "group_instance_id"); match &self.group_instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct HeartbeatResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 1+, ignorable)
        pub throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
    }

    impl HeartbeatResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            if version >= 1 { this.throttle_time_ms = r.i32()?; }
            this.error_code = r.i16()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            if version >= 1 { put_i32(w, self.throttle_time_ms); }
            put_i16(w, self.error_code);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 1 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            out.push('}');
        }
    }
}
