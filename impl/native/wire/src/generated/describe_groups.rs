// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeGroupsRequest {
        /// The names of the groups to describe.
        /// (versions 0+)
        pub groups: Vec<String>,
        /// Whether to include authorized operations.
        /// (versions 3+)
        pub include_authorized_operations: bool,
    }

    impl DescribeGroupsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.groups = { let n = r.array_len(flexible, "Groups")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "Groups")?); } v };
            if version >= 3 { this.include_authorized_operations = r.bool()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_array_len(w, flexible, self.groups.len()); for e in &self.groups { put_string(w, flexible, e)?; }
            if version >= 3 { put_bool(w, self.include_authorized_operations); } else if self.include_authorized_operations { return Err(WireError::UnsupportedField { field: "DescribeGroupsRequest.IncludeAuthorizedOperations", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "groups"); out.push('['); for (i, e) in self.groups.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']');
            if version >= 3 { json_key(out, &mut first, "include_authorized_operations"); dump_display(out, self.include_authorized_operations); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribeGroupsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 1+, ignorable)
        pub throttle_time_ms: i32,
        /// Each described group.
        /// (versions 0+)
        pub groups: Vec<DescribedGroup>,
    }

    impl DescribeGroupsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            if version >= 1 { this.throttle_time_ms = r.i32()?; }
            this.groups = { let n = r.array_len(flexible, "Groups")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribedGroup::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            if version >= 1 { put_i32(w, self.throttle_time_ms); }
            put_array_len(w, flexible, self.groups.len()); for e in &self.groups { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 1 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            json_key(out, &mut first, "groups"); out.push('['); for (i, e) in self.groups.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each described group.
    #[derive(Debug, Clone, PartialEq)]
    pub struct DescribedGroup {
        /// The describe error, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The describe error message, or null if there was no error.
        /// (versions 6+, nullable 6+, default null)
        pub error_message: Option<String>,
        /// The group ID string.
        /// (versions 0+)
        pub group_id: String,
        /// The group state string, or the empty string.
        /// (versions 0+)
        pub group_state: String,
        /// The group protocol type, or the empty string.
        /// (versions 0+)
        pub protocol_type: String,
        /// The group protocol data, or the empty string.
        /// (versions 0+)
        pub protocol_data: String,
        /// The group members.
        /// (versions 0+)
        pub members: Vec<DescribedGroupMember>,
        /// 32-bit bitfield to represent authorized operations for this group.
        /// (versions 3+, default -2147483648)
        pub authorized_operations: i32,
    }

    impl Default for DescribedGroup {
        fn default() -> Self {
            Self {
                error_code: 0,
                error_message: None,
                group_id: String::new(),
                group_state: String::new(),
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: Vec::new(),
                authorized_operations: -2147483648,
            }
        }
    }

    impl DescribedGroup {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            if version >= 6 { this.error_message = r.nullable_string(flexible)?; }
            this.group_id = r.string(flexible, "GroupId")?;
            this.group_state = r.string(flexible, "GroupState")?;
            this.protocol_type = r.string(flexible, "ProtocolType")?;
            this.protocol_data = r.string(flexible, "ProtocolData")?;
            this.members = { let n = r.array_len(flexible, "Members")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribedGroupMember::decode(r, version)?); } v };
            if version >= 3 { this.authorized_operations = r.i32()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_i16(w, self.error_code);
            if version >= 6 { match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.error_message.is_some() { return Err(WireError::UnsupportedField { field: "DescribeGroupsResponse.DescribedGroup.ErrorMessage", version }); }
            put_string(w, flexible, &self.group_id)?;
            put_string(w, flexible, &self.group_state)?;
            put_string(w, flexible, &self.protocol_type)?;
            put_string(w, flexible, &self.protocol_data)?;
            put_array_len(w, flexible, self.members.len()); for e in &self.members { e.encode(w, version)?; }
            if version >= 3 { put_i32(w, self.authorized_operations); } else if self.authorized_operations != -2147483648 { return Err(WireError::UnsupportedField { field: "DescribeGroupsResponse.DescribedGroup.AuthorizedOperations", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            if version >= 6 { json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "group_state"); dump_str(out, &self.group_state);
            json_key(out, &mut first, "protocol_type"); dump_str(out, &self.protocol_type);
            json_key(out, &mut first, "protocol_data"); dump_str(out, &self.protocol_data);
            json_key(out, &mut first, "members"); out.push('['); for (i, e) in self.members.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 3 { json_key(out, &mut first, "authorized_operations"); dump_display(out, self.authorized_operations); }
            out.push('}');
        }
    }

    /// The group members.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DescribedGroupMember {
        /// The member id.
        /// (versions 0+)
        pub member_id: String,
        /// The unique identifier of the consumer instance provided by end user.
        /// (versions 4+, nullable 4+, default null, ignorable)
        pub group_instance_id: Option<String>,
        /// The client ID used in the member's latest join group request.
        /// (versions 0+)
        pub client_id: String,
        /// The client host.
        /// (versions 0+)
        pub client_host: String,
        /// The metadata corresponding to the current group protocol in use.
        /// (versions 0+)
        pub member_metadata: Vec<u8>,
        /// The current assignment provided by the group leader.
        /// (versions 0+)
        pub member_assignment: Vec<u8>,
    }

    impl DescribedGroupMember {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 5;
            let mut this = Self::default();
            this.member_id = r.string(flexible, "MemberId")?;
            if version >= 4 { this.group_instance_id = r.nullable_string(flexible)?; }
            this.client_id = r.string(flexible, "ClientId")?;
            this.client_host = r.string(flexible, "ClientHost")?;
            this.member_metadata = r.bytes(flexible, "MemberMetadata")?;
            this.member_assignment = r.bytes(flexible, "MemberAssignment")?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 5;
            put_string(w, flexible, &self.member_id)?;
            if version >= 4 { match &self.group_instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            put_string(w, flexible, &self.client_id)?;
            put_string(w, flexible, &self.client_host)?;
            put_bytes(w, flexible, &self.member_metadata);
            put_bytes(w, flexible, &self.member_assignment);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id);
            if version >= 4 { json_key(out, &mut first, "group_instance_id"); match &self.group_instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            json_key(out, &mut first, "client_id"); dump_str(out, &self.client_id);
            json_key(out, &mut first, "client_host"); dump_str(out, &self.client_host);
            json_key(out, &mut first, "member_metadata"); dump_hex(out, &self.member_metadata);
            json_key(out, &mut first, "member_assignment"); dump_hex(out, &self.member_assignment);
            out.push('}');
        }
    }
}
