// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct WriteTxnMarkersRequest {
        /// The transaction markers to be written.
        /// (versions 0+)
        pub markers: Vec<WritableTxnMarker>,
    }

    impl WriteTxnMarkersRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.markers = { let n = r.array_len(flexible, "Markers")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(WritableTxnMarker::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_array_len(w, flexible, self.markers.len()); for e in &self.markers { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "markers"); out.push('['); for (i, e) in self.markers.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The transaction markers to be written.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct WritableTxnMarker {
        /// The current producer ID.
        /// (versions 0+)
        pub producer_id: i64,
        /// The current epoch associated with the producer ID.
        /// (versions 0+)
        pub producer_epoch: i16,
        /// The result of the transaction to write to the partitions (false = ABORT, true = COMMIT).
        /// (versions 0+)
        pub transaction_result: bool,
        /// Each topic that we want to write transaction marker(s) for.
        /// (versions 0+)
        pub topics: Vec<WritableTxnMarkerTopic>,
        /// Epoch associated with the transaction state partition hosted by this transaction coordinator.
        /// (versions 0+)
        pub coordinator_epoch: i32,
    }

    impl WritableTxnMarker {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.producer_id = r.i64()?;
            this.producer_epoch = r.i16()?;
            this.transaction_result = r.bool()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(WritableTxnMarkerTopic::decode(r, version)?); } v };
            this.coordinator_epoch = r.i32()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i64(w, self.producer_id);
            put_i16(w, self.producer_epoch);
            put_bool(w, self.transaction_result);
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            put_i32(w, self.coordinator_epoch);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "producer_epoch"); dump_display(out, self.producer_epoch);
            json_key(out, &mut first, "transaction_result"); dump_display(out, self.transaction_result);
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            json_key(out, &mut first, "coordinator_epoch"); dump_display(out, self.coordinator_epoch);
            out.push('}');
        }
    }

    /// Each topic that we want to write transaction marker(s) for.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct WritableTxnMarkerTopic {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The indexes of the partitions to write transaction markers for.
        /// (versions 0+)
        pub partition_indexes: Vec<i32>,
    }

    impl WritableTxnMarkerTopic {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partition_indexes = { let n = r.array_len(flexible, "PartitionIndexes")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(r.i32()?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partition_indexes.len()); for e in &self.partition_indexes { put_i32(w, *e); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "partition_indexes"); out.push('['); for (i, e) in self.partition_indexes.iter().enumerate() { if i > 0 { out.push(','); } dump_display(out, *e); } out.push(']');
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct WriteTxnMarkersResponse {
        /// The results for writing makers.
        /// (versions 0+)
        pub markers: Vec<WritableTxnMarkerResult>,
    }

    impl WriteTxnMarkersResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.markers = { let n = r.array_len(flexible, "Markers")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(WritableTxnMarkerResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_array_len(w, flexible, self.markers.len()); for e in &self.markers { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "markers"); out.push('['); for (i, e) in self.markers.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The results for writing makers.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct WritableTxnMarkerResult {
        /// The current producer ID in use by the transactional ID.
        /// (versions 0+)
        pub producer_id: i64,
        /// The results by topic.
        /// (versions 0+)
        pub topics: Vec<WritableTxnMarkerTopicResult>,
    }

    impl WritableTxnMarkerResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.producer_id = r.i64()?;
            this.topics = { let n = r.array_len(flexible, "Topics")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(WritableTxnMarkerTopicResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i64(w, self.producer_id);
            put_array_len(w, flexible, self.topics.len()); for e in &self.topics { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "producer_id"); dump_display(out, self.producer_id);
            json_key(out, &mut first, "topics"); out.push('['); for (i, e) in self.topics.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The results by topic.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct WritableTxnMarkerTopicResult {
        /// The topic name.
        /// (versions 0+)
        pub name: String,
        /// The results by partition.
        /// (versions 0+)
        pub partitions: Vec<WritableTxnMarkerPartitionResult>,
    }

    impl WritableTxnMarkerTopicResult {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.name = r.string(flexible, "Name")?;
            this.partitions = { let n = r.array_len(flexible, "Partitions")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(WritableTxnMarkerPartitionResult::decode(r, version)?); } v };
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_string(w, flexible, &self.name)?;
            put_array_len(w, flexible, self.partitions.len()); for e in &self.partitions { e.encode(w, version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "name"); dump_str(out, &self.name);
            json_key(out, &mut first, "partitions"); out.push('['); for (i, e) in self.partitions.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            out.push('}');
        }
    }

    /// The results by partition.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct WritableTxnMarkerPartitionResult {
        /// The partition index.
        /// (versions 0+)
        pub partition_index: i32,
        /// The error code, or 0 if there was no error.
        /// (versions 0+)
        pub error_code: i16,
    }

    impl WritableTxnMarkerPartitionResult {
        pub fn decode(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
            let flexible = true;
            let mut this = Self::default();
            this.partition_index = r.i32()?;
            this.error_code = r.i16()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, _version: i16) -> Result<(), WireError> {
            let flexible = true;
            put_i32(w, self.partition_index);
            put_i16(w, self.error_code);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "partition_index"); dump_display(out, self.partition_index);
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            out.push('}');
        }
    }
}
