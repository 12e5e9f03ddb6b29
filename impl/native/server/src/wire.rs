//! The wire: which requests are served, and why a connection closes (kcoord-wire reads and writes the messages).

use super::*;

// every request's header and body read, every answer's written, by kcoord-wire: the codec generated from Kafka's
// message declarations (impl/native/wire); here only which requests are served and why a connection closes

/// The requests served, as (api key, versions): a client's first requests (ApiVersions v0-4, Metadata v1-13, as
/// kcoord serve), a transactional producer's set-up (CreateTopics v4, FindCoordinator v3, InitProducerId v4) and its
/// transactions, V2 (Produce v12, TxnOffsetCommit v5, EndTxn v5) and V1 (AddPartitionsToTxn v3, Produce v8,
/// AddOffsetsToTxn v3, TxnOffsetCommit v3, EndTxn v3). ApiVersions advertises, per api key, its newest range here
/// (`advertised`): a range cannot have a gap, so Produce v8, TxnOffsetCommit v3 and EndTxn v3 are answered but not
/// advertised (to the clients that send them without asking, as the bench's V1 workload). Sorted by api key, then
/// version (`advertised` relies on it).
pub(crate) const SERVED: &[(i16, RangeInclusive<i16>)] = &[
    (0, 8..=8),
    (0, 12..=12),
    (3, 1..=13),
    (10, 3..=3),
    (18, 0..=4),
    (19, 4..=4),
    (22, 4..=4),
    (24, 3..=3),
    (25, 3..=3),
    (26, 3..=3),
    (26, 5..=5),
    (28, 3..=3),
    (28, 5..=5),
];

pub(crate) fn served(api_key: i16, version: i16) -> bool {
    SERVED
        .iter()
        .any(|(key, versions)| *key == api_key && versions.contains(&version))
}

/// What ApiVersions lists: per api key of `SERVED`, its range with the newest version.
pub(crate) fn advertised() -> Vec<ApiVersion> {
    let mut out: Vec<ApiVersion> = Vec::new();
    for (api_key, versions) in SERVED {
        let range = ApiVersion {
            api_key: *api_key,
            min_version: *versions.start(),
            max_version: *versions.end(),
        };
        match out.last_mut() {
            Some(last) if last.api_key == *api_key => {
                if last.max_version < range.max_version {
                    *last = range;
                }
            }
            _ => out.push(range),
        }
    }
    out
}

pub(crate) const API_VERSIONS: i16 = 18;

/// The feature flags ApiVersions v3+ lists, as kcoord serve's `served_features(2)` (impl/server/apis.py): (name,
/// supported min, supported max, finalized level). `group.version` 1 too, though no group API is served here: it
/// says which group protocol the cluster's version allows; a client using it asks ApiVersions for the API first.
pub(crate) const FEATURES: &[(&str, i16, i16, i16)] = &[("group.version", 0, 1, 1), ("transaction.version", 0, 2, 2)];

/// Kafka's ApiVersionsRequest.isValid for a client software name or version (KIP-511):
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
pub(crate) fn valid_software(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.';
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() && b.iter().all(inner)
        }
        _ => false,
    }
}

/// Why a connection closes instead of its request being answered.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// A frame too short to hold an api key and version.
    Short { length: usize },
    /// An api key and version not in `SERVED`.
    Unserved { api_key: i16, version: i16 },
    /// A request header or body kcoord-wire could not read.
    Unreadable { api_key: i16, version: i16, why: WireError },
    /// An answer kcoord-wire could not write (a bug of this server's: it built a field the version does not have).
    Unwritable { api_key: i16, version: i16, why: WireError },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Short { length } => write!(f, "a frame of {length} bytes, expected at least 4 (api key, version)"),
            Self::Unserved { api_key, version } => {
                write!(
                    f,
                    "api key {api_key} version {version}, not one of {SERVED:?} this server serves"
                )
            }
            Self::Unreadable { api_key, version, why } => {
                write!(f, "api key {api_key} version {version}: the request: {why}")
            }
            Self::Unwritable { api_key, version, why } => {
                write!(f, "api key {api_key} version {version}: the answer: {why}")
            }
        }
    }
}
