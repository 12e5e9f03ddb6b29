// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct JoinGroupRequest {
        /// The group identifier.
        /// (versions 0+)
        pub group_id: String,
        /// The coordinator considers the consumer dead if it receives no heartbeat after this timeout in milliseconds.
        /// (versions 0+)
        pub session_timeout_ms: i32,
        /// The maximum time in milliseconds that the coordinator will wait for each member to rejoin when rebalancing the group.
        /// (versions 1+, default -1, ignorable)
        pub rebalance_timeout_ms: i32,
        /// The member id assigned by the group coordinator.
        /// (versions 0+)
        pub member_id: String,
        /// The unique identifier of the consumer instance provided by end user.
        /// (versions 5+, nullable 5+, default null)
        pub group_instance_id: Option<String>,
        /// The unique name the for class of protocols implemented by the group we want to join.
        /// (versions 0+)
        pub protocol_type: String,
        /// The list of protocols that the member supports.
        /// (versions 0+)
        pub protocols: Vec<JoinGroupRequestProtocol>,
        /// The reason why the member (re-)joins the group.
        /// (versions 8+, nullable 8+, default null, ignorable)
        pub reason: Option<String>,
    }

    impl Default for JoinGroupRequest {
        fn default() -> Self {
            Self {
                group_id: String::new(),
                session_timeout_ms: 0,
                rebalance_timeout_ms: -1,
                member_id: String::new(),
                group_instance_id: None,
                protocol_type: String::new(),
                protocols: Vec::new(),
                reason: None,
            }
        }
    }

    impl JoinGroupRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            this.group_id = r.string(flexible, "GroupId")?;
            this.session_timeout_ms = r.i32()?;
            if version >= 1 { this.rebalance_timeout_ms = r.i32()?; }
            this.member_id = r.string(flexible, "MemberId")?;
            if version >= 5 { this.group_instance_id = r.nullable_string(flexible)?; }
            this.protocol_type = r.string(flexible, "ProtocolType")?;
            this.protocols = { let n = r.array_len(flexible, "Protocols")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(JoinGroupRequestProtocol::decode(r, version)?); } v };
            if version >= 8 { this.reason = r.nullable_string(flexible)?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            put_string(w, flexible, &self.group_id)?;
            put_i32(w, self.session_timeout_ms);
            if version >= 1 { put_i32(w, self.rebalance_timeout_ms); }
            put_string(w, flexible, &self.member_id)?;
            if version >= 5 { match &self.group_instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else if self.group_instance_id.is_some() { return Err(WireError::UnsupportedField { field: "JoinGroupRequest.GroupInstanceId", version }); }
            put_string(w, flexible, &self.protocol_type)?;
            put_array_len(w, flexible, self.protocols.len()); for e in &self.protocols { e.encode(w, version)?; }
            if version >= 8 { match &self.reason { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "session_timeout_ms"); dump_display(out, self.session_timeout_ms);
            if version >= 1 { json_key(out, &mut first, "rebalance_timeout_ms"); dump_display(out, self.rebalance_timeout_ms); }
            json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id);
            if version >= 5 { json_key(out, &mut first, "group_instance_id"); match &self.group_instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            json_key(out, &mut first, "protocol_type"); dump_str(out, &self.protocol_type);
            json_key(out, &mut first, "protocols"); out.push('['); for (i, e) in self.protocols.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 8 { json_key(out, &mut first, "reason"); match &self.reason { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            out.push('}');
        }
    }

    /// The list of protocols that the member supports.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct JoinGroupRequestProtocol {
        /// The protocol name.
        /// (versions 0+)
        pub name: String,
        /// The protocol metadata.
        /// (versions 0+)
        pub metadata: Vec<u8>,
    }

    impl JoinGroupRequestProtocol {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.metadata = r.bytes(flexible, "Metadata")?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            put_string(w, flexible, &self.name)?;
            put_bytes(w, flexible, &self.metadata);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "metadata"); dump_hex(out, &self.metadata);
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct JoinGroupResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 2+, ignorable)
        pub throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// The generation ID of the group.
        /// (versions 0+, default -1)
        pub generation_id: i32,
        /// The group protocol name.
        /// (versions 7+, nullable 7+, default null, ignorable)
        pub protocol_type: Option<String>,
        /// The group protocol selected by the coordinator.
        /// (versions 0+, nullable 7+)
        pub protocol_name: Option<String>,
        /// The leader of the group.
        /// (versions 0+)
        pub leader: String,
        /// True if the leader must skip running the assignment.
        /// (versions 9+, default false)
        pub skip_assignment: bool,
        /// The member ID assigned by the group coordinator.
        /// (versions 0+)
        pub member_id: String,
        /// The group members.
        /// (versions 0+)
        pub members: Vec<JoinGroupResponseMember>,
    }

    impl Default for JoinGroupResponse {
        fn default() -> Self {
            Self {
                throttle_time_ms: 0,
                error_code: 0,
                generation_id: -1,
                protocol_type: None,
                protocol_name: Some(String::new()),
                leader: String::new(),
                skip_assignment: false,
                member_id: String::new(),
                members: Vec::new(),
            }
        }
    }

    impl JoinGroupResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            if version >= 2 { this.throttle_time_ms = r.i32()?; }
            this.error_code = r.i16()?;
            this.generation_id = r.i32()?;
            if version >= 7 { this.protocol_type = r.nullable_string(flexible)?; }
            this.protocol_name = if version >= 7 { r.nullable_string(flexible)? } else { Some(r.string(flexible, "ProtocolName")?) };
            this.leader = r.string(flexible, "Leader")?;
            if version >= 9 { this.skip_assignment = r.bool()?; }
            this.member_id = r.string(flexible, "MemberId")?;
            this.members = { let n = r.array_len(flexible, "Members")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(JoinGroupResponseMember::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            if version >= 2 { put_i32(w, self.throttle_time_ms); }
            put_i16(w, self.error_code);
            put_i32(w, self.generation_id);
            if version >= 7 { match &self.protocol_type { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            if version >= 7 { match &self.protocol_name { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } } else { match &self.protocol_name { Some(v) => { put_string(w, flexible, v)?; } None => return Err(WireError::NullNotAllowed { field: "JoinGroupResponse.ProtocolName", version }), } }
            put_string(w, flexible, &self.leader)?;
            if version >= 9 { put_bool(w, self.skip_assignment); } else if self.skip_assignment { return Err(WireError::UnsupportedField { field: "JoinGroupResponse.SkipAssignment", version }); }
            put_string(w, flexible, &self.member_id)?;
            put_array_len(w, flexible, self.members.len()); for e in &self.members { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 2 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "generation_id"); dump_display(out, self.generation_id);
            if version >= 7 { json_key(out, &mut first, "protocol_type"); match &self.protocol_type { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            json_key(out, &mut first, "protocol_name"); match &self.protocol_name { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "leader"); dump_str(out, &self.leader);
            if version >= 9 { json_key(out, &mut first, "skip_assignment"); dump_display(out, self.skip_assignment); }
            json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id);
            json_key(out, &mut first, "members"); out.push('['); for (i, e) in self.members.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The group members.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct JoinGroupResponseMember {
        /// The group member ID.
        /// (versions 0+)
        pub member_id: String,
        /// The unique identifier of the consumer instance provided by end user.
        /// (versions 5+, nullable 5+, default null, ignorable)
        pub group_instance_id: Option<String>,
        /// The group member metadata.
        /// (versions 0+)
        pub metadata: Vec<u8>,
    }

    impl JoinGroupResponseMember {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 6;
            let mut this = Self::default();
            this.member_id = r.string(flexible, "MemberId")?;
            if version >= 5 { this.group_instance_id = r.nullable_string(flexible)?; }
            this.metadata = r.bytes(flexible, "Metadata")?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 6;
            put_string(w, flexible, &self.member_id)?;
            if version >= 5 { match &self.group_instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } } }
            put_bytes(w, flexible, &self.metadata);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id);
            if version >= 5 { json_key(out, &mut first, "group_instance_id"); match &self.group_instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), } }
            json_key(out, &mut first, "metadata"); dump_hex(out, &self.metadata);
            out.push('}');
        }
    }
}
