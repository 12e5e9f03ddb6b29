// Generated from kafka-clients-4.0.2.jar's common/message/*.json by impl/native/wire/gen_codec.py: do not edit.
// Regenerate: `python -m kcoord.impl.native.wire.gen_codec` in the repo root (reads build/kafka/libs/).
// decode starts from the defaults and sets the fields the version has: the others keep their defaults
#![allow(clippy::field_reassign_with_default)]

use crate::codec::*;

pub mod request {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ApiVersionsRequest {
        /// The name of the client.
        /// (versions 3+, ignorable)
        pub client_software_name: String,
        /// The version of the client.
        /// (versions 3+, ignorable)
        pub client_software_version: String,
    }

    impl ApiVersionsRequest {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 3 { this.client_software_name = r.string(flexible, "ClientSoftwareName")?; }
            if version >= 3 { this.client_software_version = r.string(flexible, "ClientSoftwareVersion")?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 3 { put_string(w, flexible, &self.client_software_name)?; }
            if version >= 3 { put_string(w, flexible, &self.client_software_version)?; }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "client_software_name"); dump_str(out, &self.client_software_name); }
            if version >= 3 { json_key(out, &mut first, "client_software_version"); dump_str(out, &self.client_software_version); }
            out.push('}');
        }
    }
}

pub mod response {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct ApiVersionsResponse {
        /// The top-level error code.
        /// (versions 0+)
        pub error_code: i16,
        /// The APIs supported by the broker.
        /// (versions 0+)
        pub api_keys: Vec<ApiVersion>,
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        /// (versions 1+, ignorable)
        pub throttle_time_ms: i32,
        /// Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted.
        /// (versions 3+, tag 0 in 3+, ignorable)
        pub supported_features: Vec<SupportedFeatureKey>,
        /// The monotonically increasing epoch for the finalized features information. Valid values are >= 0. A value of -1 is special and represents unknown epoch.
        /// (versions 3+, tag 1 in 3+, default -1, ignorable)
        pub finalized_features_epoch: i64,
        /// List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0.
        /// (versions 3+, tag 2 in 3+, ignorable)
        pub finalized_features: Vec<FinalizedFeatureKey>,
        /// Set by a KRaft controller if the required configurations for ZK migration are present.
        /// (versions 3+, tag 3 in 3+, default false, ignorable)
        pub zk_migration_ready: bool,
    }

    impl Default for ApiVersionsResponse {
        fn default() -> Self {
            Self {
                error_code: 0,
                api_keys: Vec::new(),
                throttle_time_ms: 0,
                supported_features: Vec::new(),
                finalized_features_epoch: -1,
                finalized_features: Vec::new(),
                zk_migration_ready: false,
            }
        }
    }

    impl ApiVersionsResponse {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.error_code = r.i16()?;
            this.api_keys = { let n = r.array_len(flexible, "ApiKeys")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(ApiVersion::decode(r, version)?); } v };
            if version >= 1 { this.throttle_time_ms = r.i32()?; }
            if flexible { for _ in 0..r.uvarint()? { let tag = r.uvarint()?; let mut t = r.tagged()?; match tag { 0 if version >= 3 => this.supported_features = { let n = t.array_len(true, "SupportedFeatures")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(SupportedFeatureKey::decode(&mut t, version)?); } v }, 1 if version >= 3 => this.finalized_features_epoch = t.i64()?, 2 if version >= 3 => this.finalized_features = { let n = t.array_len(true, "FinalizedFeatures")?; let mut v = Vec::with_capacity(n); for _ in 0..n { v.push(FinalizedFeatureKey::decode(&mut t, version)?); } v }, 3 if version >= 3 => this.zk_migration_ready = t.bool()?, _ => { let _ = &mut t; } } } }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_i16(w, self.error_code);
            put_array_len(w, flexible, self.api_keys.len()); for e in &self.api_keys { e.encode(w, version)?; }
            if version >= 1 { put_i32(w, self.throttle_time_ms); }
            if flexible {
                let mut tags = 0u32;
                if version >= 3 && !self.supported_features.is_empty() { tags += 1; }
                if version >= 3 && self.finalized_features_epoch != -1 { tags += 1; }
                if version >= 3 && !self.finalized_features.is_empty() { tags += 1; }
                if version >= 3 && self.zk_migration_ready { tags += 1; }
                put_uvarint(w, tags);
                if version >= 3 && !self.supported_features.is_empty() { put_uvarint(w, 0); let mut t = Vec::new(); put_array_len(&mut t, true, self.supported_features.len()); for e in &self.supported_features { e.encode(&mut t, version)?; } put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
                if version >= 3 && self.finalized_features_epoch != -1 { put_uvarint(w, 1); let mut t = Vec::new(); put_i64(&mut t, self.finalized_features_epoch); put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
                if version >= 3 && !self.finalized_features.is_empty() { put_uvarint(w, 2); let mut t = Vec::new(); put_array_len(&mut t, true, self.finalized_features.len()); for e in &self.finalized_features { e.encode(&mut t, version)?; } put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
                if version >= 3 && self.zk_migration_ready { put_uvarint(w, 3); let mut t = Vec::new(); put_bool(&mut t, self.zk_migration_ready); put_uvarint(w, t.len() as u32); w.extend_from_slice(&t); }
        }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "error_code"); dump_display(out, self.error_code);
            json_key(out, &mut first, "api_keys"); out.push('['); for (i, e) in self.api_keys.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']');
            if version >= 1 { json_key(out, &mut first, "throttle_time_ms"); dump_display(out, self.throttle_time_ms); }
            if version >= 3 { json_key(out, &mut first, "supported_features"); out.push('['); for (i, e) in self.supported_features.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if version >= 3 { json_key(out, &mut first, "finalized_features_epoch"); dump_display(out, self.finalized_features_epoch); }
            if version >= 3 { json_key(out, &mut first, "finalized_features"); out.push('['); for (i, e) in self.finalized_features.iter().enumerate() { if i > 0 { out.push(','); } e.dump_json(out, version); } out.push(']'); }
            if version >= 3 { json_key(out, &mut first, "zk_migration_ready"); dump_display(out, self.zk_migration_ready); }
            out.push('}');
        }
    }

    /// The APIs supported by the broker.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct ApiVersion {
        /// The API index.
        /// (versions 0+)
        pub api_key: i16,
        /// The minimum supported version, inclusive.
        /// (versions 0+)
        pub min_version: i16,
        /// The maximum supported version, inclusive.
        /// (versions 0+)
        pub max_version: i16,
    }

    impl ApiVersion {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            this.api_key = r.i16()?;
            this.min_version = r.i16()?;
            this.max_version = r.i16()?;
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            put_i16(w, self.api_key);
            put_i16(w, self.min_version);
            put_i16(w, self.max_version);
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, _version: i16) {
            out.push('{');
            let mut first = true;
            json_key(out, &mut first, "api_key"); dump_display(out, self.api_key);
            json_key(out, &mut first, "min_version"); dump_display(out, self.min_version);
            json_key(out, &mut first, "max_version"); dump_display(out, self.max_version);
            out.push('}');
        }
    }

    /// Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct SupportedFeatureKey {
        /// The name of the feature.
        /// (versions 3+)
        pub name: String,
        /// The minimum supported version for the feature.
        /// (versions 3+)
        pub min_version: i16,
        /// The maximum supported version for the feature.
        /// (versions 3+)
        pub max_version: i16,
    }

    impl SupportedFeatureKey {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 3 { this.name = r.string(flexible, "Name")?; }
            if version >= 3 { this.min_version = r.i16()?; }
            if version >= 3 { this.max_version = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 3 { put_string(w, flexible, &self.name)?; } else if !self.name.is_empty() { return Err(WireError::UnsupportedField { field: "ApiVersionsResponse.SupportedFeatureKey.Name", version }); }
            if version >= 3 { put_i16(w, self.min_version); } else if self.min_version != 0 { return Err(WireError::UnsupportedField { field: "ApiVersionsResponse.SupportedFeatureKey.MinVersion", version }); }
            if version >= 3 { put_i16(w, self.max_version); } else if self.max_version != 0 { return Err(WireError::UnsupportedField { field: "ApiVersionsResponse.SupportedFeatureKey.MaxVersion", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "name"); dump_str(out, &self.name); }
            if version >= 3 { json_key(out, &mut first, "min_version"); dump_display(out, self.min_version); }
            if version >= 3 { json_key(out, &mut first, "max_version"); dump_display(out, self.max_version); }
            out.push('}');
        }
    }

    /// List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0.
    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct FinalizedFeatureKey {
        /// The name of the feature.
        /// (versions 3+)
        pub name: String,
        /// The cluster-wide finalized max version level for the feature.
        /// (versions 3+)
        pub max_version_level: i16,
        /// The cluster-wide finalized min version level for the feature.
        /// (versions 3+)
        pub min_version_level: i16,
    }

    impl FinalizedFeatureKey {
        pub fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
            let flexible = version >= 3;
            let mut this = Self::default();
            if version >= 3 { this.name = r.string(flexible, "Name")?; }
            if version >= 3 { this.max_version_level = r.i16()?; }
            if version >= 3 { this.min_version_level = r.i16()?; }
            if flexible { r.skip_tagged_fields()?; }
            Ok(this)
        }
        pub fn encode(&self, w: &mut Vec<u8>, version: i16) -> Result<(), WireError> {
            let flexible = version >= 3;
            if version >= 3 { put_string(w, flexible, &self.name)?; } else if !self.name.is_empty() { return Err(WireError::UnsupportedField { field: "ApiVersionsResponse.FinalizedFeatureKey.Name", version }); }
            if version >= 3 { put_i16(w, self.max_version_level); } else if self.max_version_level != 0 { return Err(WireError::UnsupportedField { field: "ApiVersionsResponse.FinalizedFeatureKey.MaxVersionLevel", version }); }
            if version >= 3 { put_i16(w, self.min_version_level); } else if self.min_version_level != 0 { return Err(WireError::UnsupportedField { field: "ApiVersionsResponse.FinalizedFeatureKey.MinVersionLevel", version }); }
            if flexible { put_uvarint(w, 0); }
            Ok(())
        }
        /// The fields present in `version`, as one JSON object (snake_case names; bytes and uuids in hex).
        pub fn dump_json(&self, out: &mut String, version: i16) {
            out.push('{');
            let mut first = true;
            if version >= 3 { json_key(out, &mut first, "name"); dump_str(out, &self.name); }
            if version >= 3 { json_key(out, &mut first, "max_version_level"); dump_display(out, self.max_version_level); }
            if version >= 3 { json_key(out, &mut first, "min_version_level"); dump_display(out, self.min_version_level); }
            out.push('}');
        }
    }
}
