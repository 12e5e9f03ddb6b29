// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ListGroupsRequest {
        /// The states of the groups we want to list. If empty, all groups are returned with their state.
        /// (versions 4+)
        pub states_filter: Vec<String>,
        /// The types of the groups we want to list. If empty, all groups are returned with their type.
        /// (versions 5+)
        pub types_filter: Vec<String>,
    }

    impl ListGroupsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 4 { this.states_filter = { let n = r.array_len(flexible, "StatesFilter")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "StatesFilter")?); } v }; }
            if version >= 5 { this.types_filter = { let n = r.array_len(flexible, "TypesFilter")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "TypesFilter")?); } v }; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 4 { put_array_len(w, flexible, self.states_filter.len()); for e in &self.states_filter { put_string(w, flexible, e)?; } } else if !self.states_filter.is_empty() { return Err(WireError::UnsupportedField { field: "ListGroupsRequest.StatesFilter", version }); }
            if version >= 5 { put_array_len(w, flexible, self.types_filter.len()); for e in &self.types_filter { put_string(w, flexible, e)?; } } else if !self.types_filter.is_empty() { return Err(WireError::UnsupportedField { field: "ListGroupsRequest.TypesFilter", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 4 { json_key(out, &mut first, "states_filter"); out.push('['); for (i, e) in self.states_filter.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']'); }
            if version >= 5 { json_key(out, &mut first, "types_filter"); out.push('['); for (i, e) in self.types_filter.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']'); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ListGroupsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 1+, ignorable)
        pub throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
        /// Each group in the response.
        /// (versions 0+)
        pub groups: Vec<ListedGroup>,
    }

    impl ListGroupsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 1 { this.throttle_time_ms = r.i32()?; }
            this.error_code = r.i16()?;
            this.groups = { let n = r.array_len(flexible, "Groups")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(ListedGroup::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 1 { put_i32(w, self.throttle_time_ms); }
            put_i16(w, self.error_code);
            put_array_len(w, flexible, self.groups.len()); for e in &self.groups { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 1 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "groups"); out.push('['); for (i, e) in self.groups.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// Each group in the response.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ListedGroup {
        /// The group ID.
        /// (versions 0+)
        pub group_id: String,
        /// The group protocol type.
        /// (versions 0+)
        pub protocol_type: String,
        /// The group state name.
        /// (versions 4+, ignorable)
        pub group_state: String,
        /// The group type name.
        /// (versions 5+, ignorable)
        pub group_type: String,
    }

    impl ListedGroup {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.group_id = r.string(flexible, "GroupId")?;
            this.protocol_type = r.string(flexible, "ProtocolType")?;
            if version >= 4 { this.group_state = r.string(flexible, "GroupState")?; }
            if version >= 5 { this.group_type = r.string(flexible, "GroupType")?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_string(w, flexible, &self.group_id)?;
            put_string(w, flexible, &self.protocol_type)?;
            if version >= 4 { put_string(w, flexible, &self.group_state)?; }
            if version >= 5 { put_string(w, flexible, &self.group_type)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "protocol_type"); dump_str(out, &self.protocol_type);
            if version >= 4 { json_key(out, &mut first, "group_state"); dump_str(out, &self.group_state); }
            if version >= 5 { json_key(out, &mut first, "group_type"); dump_str(out, &self.group_type); }
            out.push('}');
        }
    }
}
