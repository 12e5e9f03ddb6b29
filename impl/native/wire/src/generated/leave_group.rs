// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct LeaveGroupRequest {
        /// The ID of the group to leave.
        /// (versions 0+)
        pub group_id: String,
        /// The member ID to remove from the group.
        /// (versions 0-2)
        pub member_id: String,
        /// List of leaving member identities.
        /// (versions 3+)
        pub members: Vec<MemberIdentity>,
    }

    impl LeaveGroupRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            this.group_id = r.string(flexible, "GroupId")?;
            if version <= 2 { this.member_id = r.string(flexible, "MemberId")?; }
            if version >= 3 { this.members = { let n = r.array_len(flexible, "Members")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(MemberIdentity::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            put_string(w, flexible, &self.group_id)?;
            if version <= 2 { put_string(w, flexible, &self.member_id)?; } else if !self.member_id.is_empty() { return Err(WireError::UnsupportedField { field: "LeaveGroupRequest.MemberId", version }); }
            if version >= 3 { put_array_len(w, flexible, self.members.len()); for e in &self.members { e.encode(w, version)?; } } else if !self.members.is_empty() { return Err(WireError::UnsupportedField { field: "LeaveGroupRequest.Members", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            if version <= 2 { json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id); }
            if version >= 3 { json_key(out, &mut first, "members"); out.push('['); for (i, e) in self.members.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// List of leaving member identities.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct MemberIdentity {
        /// The member ID to remove from the group.
        /// (versions 3+)
        pub member_id: String,
        /// The group instance ID to remove from the group.
        /// (versions 3+, nullable 3+, default null)
        pub group_instance_id: Option<String>,
        /// The reason why the member left the group.
        /// (versions 5+, nullable 5+, default null, ignorable)
        pub reason: Option<String>,
    }

    impl MemberIdentity {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            if version >= 3 { this.member_id = r.string(flexible, "MemberId")?; }
            if version >= 3 { this.group_instance_id = r.nullable_string(flexible)?; }
            if version >= 5 { this.reason = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            if version >= 3 { put_string(w, flexible, &self.member_id)?; } else if !self.member_id.is_empty() { return Err(WireError::UnsupportedField { field: "LeaveGroupRequest.MemberIdentity.MemberId", version }); }
            if version >= 3 { match &self.group_instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.group_instance_id.is_some() { return Err(WireError::UnsupportedField { field: "LeaveGroupRequest.MemberIdentity.GroupInstanceId", version }); }
            if version >= 5 { match &self.reason { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id); }
            if version >= 3 { json_key(out, &mut first, "group_instance_id"); match &self.group_instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version >= 5 { json_key(out, &mut first, "reason"); match &self.reason { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct LeaveGroupResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 1+, ignorable)
        pub throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// List of leaving member responses.
        /// (versions 3+)
        pub members: Vec<MemberResponse>,
    }

    impl LeaveGroupResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            if version >= 1 { this.throttle_time_ms = r.i32()?; }
            this.error_code = r.i16()?;
            if version >= 3 { this.members = { let n = r.array_len(flexible, "Members")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(MemberResponse::decode(r, version)?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            if version >= 1 { put_i32(w, self.throttle_time_ms); }
            put_i16(w, self.error_code);
            if version >= 3 { put_array_len(w, flexible, self.members.len()); for e in &self.members { e.encode(w, version)?; } } else if !self.members.is_empty() { return Err(WireError::UnsupportedField { field: "LeaveGroupResponse.Members", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 1 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            if version >= 3 { json_key(out, &mut first, "members"); out.push('['); for (i, e) in self.members.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            out.push('}');
        }
    }

    /// List of leaving member responses.
    #[derive(Debug, Clone, PartialEq)]
    pub struct MemberResponse {
        /// The member ID to remove from the group.
        /// (versions 3+)
        pub member_id: String,
        /// The group instance ID to remove from the group.
        /// (versions 3+, nullable 3+)
        pub group_instance_id: Option<String>,
        /// The error code, or 0 if there was no error.
        /// (versions 3+)
        pub error_code: i16,
    }

    impl Default for MemberResponse {
        fn default() -> Self {
            Self {
                member_id: String::new(),
                group_instance_id: Some(String::new()),
                error_code: 0,
            }
        }
    }

    impl MemberResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 4;
            let mut this = Self::default();
            if version >= 3 { this.member_id = r.string(flexible, "MemberId")?; }
            if version >= 3 { this.group_instance_id = r.nullable_string(flexible)?; }
            if version >= 3 { this.error_code = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 4;
            if version >= 3 { put_string(w, flexible, &self.member_id)?; } else if !self.member_id.is_empty() { return Err(WireError::UnsupportedField { field: "LeaveGroupResponse.MemberResponse.MemberId", version }); }
            if version >= 3 { match &self.group_instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.group_instance_id.as_ref().is_none_or(|v| !v.is_empty()) { return Err(WireError::UnsupportedField { field: "LeaveGroupResponse.MemberResponse.GroupInstanceId", version }); }
            if version >= 3 { put_i16(w, self.error_code); } else if self.error_code != 0 { return Err(WireError::UnsupportedField { field: "LeaveGroupResponse.MemberResponse.ErrorCode", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id); }
            if version >= 3 { json_key(out, &mut first, "group_instance_id"); match &self.group_instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            if version >= 3 { json_key(out, &mut first, "error_code"); dump_display(out, self.error_code); }
            out.push('}');
        }
    }
}
