// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ConsumerGroupDescribeRequest {
        /// The ids of the groups to describe.
        /// (versions 0+)
        pub group_ids: Vec<String>,
        /// Whether to include authorized operations.
        /// (versions 0+)
        pub include_authorized_operations: bool,
    }

    impl ConsumerGroupDescribeRequest {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.group_ids = { let n = r.array_len(flexible, "GroupIds")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "GroupIds")?); } v };
            this.include_authorized_operations = r.bool()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_array_len(w, flexible, self.group_ids.len()); for e in &self.group_ids { put_string(w, flexible, e)?; }
            put_bool(w, self.include_authorized_operations);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "group_ids"); out.push('['); for (i, e) in self.group_ids.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']');
            json_key(out, &mut first, "include_authorized_operations"); dump_display(out, self.include_authorized_operations);
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ConsumerGroupDescribeResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 0+)
        pub throttle_time_ms: i32,
        /// Each described group.
        /// (versions 0+)
        pub groups: Vec<DescribedGroup>,
    }

    impl ConsumerGroupDescribeResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.throttle_time_ms = r.i32()?;
            this.groups = { let n = r.array_len(flexible, "Groups")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(DescribedGroup::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i32(w, self.throttle_time_ms);
            put_array_len(w, flexible, self.groups.len()); for e in &self.groups { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms);
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
        /// The top-level error message, or null if there was no error.
        /// (versions 0+, nullable 0+, default null)
        pub error_message: Option<String>,
        /// The group ID string.
        /// (versions 0+)
        pub group_id: String,
        /// The group state string, or the empty string.
        /// (versions 0+)
        pub group_state: String,
        /// The group epoch.
        /// (versions 0+)
        pub group_epoch: i32,
        /// The assignment epoch.
        /// (versions 0+)
        pub assignment_epoch: i32,
        /// The selected assignor.
        /// (versions 0+)
        pub assignor_name: String,
        /// The members.
        /// (versions 0+)
        pub members: Vec<Member>,
        /// 32-bit bitfield to represent authorized operations for this group.
        /// (versions 0+, default -2147483648)
        pub authorized_operations: i32,
    }

    impl Default for DescribedGroup {
        fn default() -> Self {
            Self {
                error_code: 0,
                error_message: None,
                group_id: String::new(),
                group_state: String::new(),
                group_epoch: 0,
                assignment_epoch: 0,
                assignor_name: String::new(),
                members: Vec::new(),
                authorized_operations: -2147483648,
            }
        }
    }

    impl DescribedGroup {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.error_message = r.nullable_string(flexible)?;
            this.group_id = r.string(flexible, "GroupId")?;
            this.group_state = r.string(flexible, "GroupState")?;
            this.group_epoch = r.i32()?;
            this.assignment_epoch = r.i32()?;
            this.assignor_name = r.string(flexible, "AssignorName")?;
            this.members = { let n = r.array_len(flexible, "Members")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(Member::decode(r, version)?); } v };
            this.authorized_operations = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i16(w, self.error_code);
            match &self.error_message { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_string(w, flexible, &self.group_id)?;
            put_string(w, flexible, &self.group_state)?;
            put_i32(w, self.group_epoch);
            put_i32(w, self.assignment_epoch);
            put_string(w, flexible, &self.assignor_name)?;
            put_array_len(w, flexible, self.members.len()); for e in &self.members { e.encode(w, version)?; }
            put_i32(w, self.authorized_operations);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "error_message"); match &self.error_message { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "group_id"); dump_str(out, &self.group_id);
            json_key(out, &mut first, "group_state"); dump_str(out, &self.group_state);
            json_key(out, &mut first, "group_epoch"); dump_display(out, self.group_epoch);
            json_key(out, &mut first, "assignment_epoch"); dump_display(out, self.assignment_epoch);
            json_key(out, &mut first, "assignor_name"); dump_str(out, &self.assignor_name);
            json_key(out, &mut first, "members"); out.push('['); for (i, e) in self.members.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "authorized_operations"); dump_display(out, self.authorized_operations);
            out.push('}');
        }
    }

    /// The members.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Member {
        /// The member ID.
        /// (versions 0+)
        pub member_id: String,
        /// The member instance ID.
        /// (versions 0+, nullable 0+, default null)
        pub instance_id: Option<String>,
        /// The member rack ID.
        /// (versions 0+, nullable 0+, default null)
        pub rack_id: Option<String>,
        /// The current member epoch.
        /// (versions 0+)
        pub member_epoch: i32,
        /// The client ID.
        /// (versions 0+)
        pub client_id: String,
        /// The client host.
        /// (versions 0+)
        pub client_host: String,
        /// The subscribed topic names.
        /// (versions 0+)
        pub subscribed_topic_names: Vec<String>,
        /// the subscribed topic regex otherwise or null of not provided.
        /// (versions 0+, nullable 0+, default null)
        pub subscribed_topic_regex: Option<String>,
        /// The current assignment.
        /// (versions 0+)
        pub assignment: Assignment,
        /// The target assignment.
        /// (versions 0+)
        pub target_assignment: Assignment,
        /// -1 for unknown. 0 for classic member. +1 for consumer member.
        /// (versions 1+, default -1, ignorable)
        pub member_type: i8,
    }

    impl Default for Member {
        fn default() -> Self {
            Self {
                member_id: String::new(),
                instance_id: None,
                rack_id: None,
                member_epoch: 0,
                client_id: String::new(),
                client_host: String::new(),
                subscribed_topic_names: Vec::new(),
                subscribed_topic_regex: None,
                assignment: Assignment::default(),
                target_assignment: Assignment::default(),
                member_type: -1,
            }
        }
    }

    impl Member {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.member_id = r.string(flexible, "MemberId")?;
            this.instance_id = r.nullable_string(flexible)?;
            this.rack_id = r.nullable_string(flexible)?;
            this.member_epoch = r.i32()?;
            this.client_id = r.string(flexible, "ClientId")?;
            this.client_host = r.string(flexible, "ClientHost")?;
            this.subscribed_topic_names = { let n = r.array_len(flexible, "SubscribedTopicNames")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.string(flexible, "SubscribedTopicNames")?); } v };
            this.subscribed_topic_regex = r.nullable_string(flexible)?;
            this.assignment = Assignment::decode(r, version)?;
            this.target_assignment = Assignment::decode(r, version)?;
            if version >= 1 { this.member_type = r.i8()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.member_id)?;
            match &self.instance_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            match &self.rack_id { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            put_i32(w, self.member_epoch);
            put_string(w, flexible, &self.client_id)?;
            put_string(w, flexible, &self.client_host)?;
            put_array_len(w, flexible, self.subscribed_topic_names.len()); for e in &self.subscribed_topic_names { put_string(w, flexible, e)?; }
            match &self.subscribed_topic_regex { Some(v) => { put_string(w, flexible, v)?; } None => { put_null_string(w, flexible); } }
            self.assignment.encode(w, version)?;
            self.target_assignment.encode(w, version)?;
            if version >= 1 { put_i8(w, self.member_type); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "member_id"); dump_str(out, &self.member_id);
            json_key(out, &mut first, "instance_id"); match &self.instance_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "rack_id"); match &self.rack_id { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "member_epoch"); dump_display(out, self.member_epoch);
            json_key(out, &mut first, "client_id"); dump_str(out, &self.client_id);
            json_key(out, &mut first, "client_host"); dump_str(out, &self.client_host);
            json_key(out, &mut first, "subscribed_topic_names"); out.push('['); for (i, e) in self.subscribed_topic_names.iter().enumerate() { if i > 0 { out.push(','); } dump_str(out, e); } out.push(']');
            json_key(out, &mut first, "subscribed_topic_regex"); match &self.subscribed_topic_regex { Some(v) => { dump_str(out, v); } None => out.push_str("null"), }
            json_key(out, &mut first, "assignment"); self.assignment.dump_json(out, version);
            json_key(out, &mut first, "target_assignment"); self.target_assignment.dump_json(out, version);
            if version >= 1 { json_key(out, &mut first, "member_type"); dump_display(out, self.member_type); }
            out.push('}');
        }
    }

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct TopicPartitions {
        /// The topic ID.
        /// (versions 0+)
        pub topic_id: [u8; 16],
        /// The topic name.
        /// (versions 0+)
        pub topic_name: String,
        /// The partitions.
        /// (versions 0+)
        pub partitions: Vec<i32>,
    }

    impl TopicPartitions {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.topic_id = r.uuid()?;
            this.topic_name = r.string(flexible, "TopicName")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_uuid(w, &self.topic_id);
            put_string(w, flexible, &self.topic_name)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { put_i32(w, *e); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topic_id"); dump_hex(out, &self.topic_id);
            json_key(out, &mut first, "topic_name"); dump_str(out, &self.topic_name);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            out.push('}');
        }
    }

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct Assignment {
        /// The assigned topic-partitions to the member.
        /// (versions 0+)
        pub topic_partitions: Vec<TopicPartitions>,
    }

    impl Assignment {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.topic_partitions = { let n = r.array_len(flexible, "TopicPartitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(TopicPartitions::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_array_len(w, flexible, self.topic_partitions.len()); for e in &self.topic_partitions { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "topic_partitions"); out.push('['); for (i, e) in self.topic_partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }
}
