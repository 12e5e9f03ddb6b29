// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DeleteGroupsRequest {
        /// The group names to delete.
        /// (versions 0+)
        pub groups_names: Vec<String>,
    }

    impl DeleteGroupsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 2;
            let mut this = Self::default();
            this.groups_names = { let n = r.array_len(flexible, "GroupsNames")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "GroupsNames")?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 2;
            put_array_len(w, flexible, self.groups_names.len()); for e in &self.groups_names { put_string(w, flexible, e)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "groups_names"); out.push('['); for (i, e) in self.groups_names.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']');
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DeleteGroupsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// The deletion results.
        /// (versions 0+)
        pub results: Vec<DeletableGroupResult>,
    }

    impl DeleteGroupsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 2;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.results = { let n = r.array_len(flexible, "Results")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DeletableGroupResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 2;
            put_i32(w, self.throttle_time_ms);
            put_array_len(w, flexible, self.results.len()); for e in &self.results { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
            json_key(out, &mut first, "results"); out.push('['); for (i, e) in self.results.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The deletion results.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct DeletableGroupResult {
        /// The group id.
        /// (versions 0+)
        pub group_id: String,
        /// The deletion error, or 0 if the deletion succeeded.
        /// (versions 0+)
        pub error_code: i16,
    }

    impl DeletableGroupResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 2;
            let mut this = Self::default();
            this.group_id = r.string(flexible, "GroupId")?;
            this.error_code = r.i16()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 2;
            put_string(w, flexible, &self.group_id)?;
            put_i16(w, self.error_code);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            out.push('}');
        }
    }
}
