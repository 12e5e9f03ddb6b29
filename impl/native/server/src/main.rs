//! kcoord's compiled server — issue 31's design, under construction (not yet started by `kcoord serve`): the requests
//! of a transactional producer, Transactions V2 (as Kafka 4.0's Java client sends them) and V1, served by a compiled,
//! single-threaded server. Measured by `benchmarks/compiled_server.sh` beside `kcoord serve` (bench_server.py
//! `--targets kcoord,compiled`), it meets issue 31's transaction targets that the CPython server does not.
//!
//! Its transaction coordinator's decisions are the spec's: the Transaction machine's table is generated from
//! spec/transaction.sm into Rust by `kcoord gen` (impl/_generated/rust/, with every other machine's and Kafka's error
//! codes; `check-tables` holds each table equal to kcoord's Python table on random cases, tests/impl/native), and every
//! InitProducerId, AddPartitions (V1's AddPartitionsToTxn and AddOffsetsToTxn, V2's implicit adds), VerifyPartition
//! (V1's Produce and TxnOffsetCommit), EndTxnV1, EndTxnV2, FenceAbort and CompleteTxn goes through it: the row's answer
//! is the request's, a transition's post-state the instance, its `writes` the transaction-log record (the fields
//! `persist TransactionLogValue` lists).
//!
//! It does the same durable work per committed transaction as `kcoord serve`: every append is a Kafka v2 record batch
//! (its CRC-32C computed; a Produce batch's CRC checked) written with one `write` to its partition's log file; the
//! transaction log gets the Ongoing record of each add, PrepareCommit and CompleteCommit; the offsets partition the
//! transactional commit; every partition of the transaction its COMMIT marker — 10 appends for either workload's
//! transaction, as kcoord. With `fsync` durability an answer waits for the group-commit round covering its
//! writes (one syncfs of the data directory's file system per round, on a thread of its own, rounds back to back, a
//! lone writer never waiting for company), as kcoord's default `--fsync-method auto`; with `os` it is sent at once.
//! Its answers equal `kcoord serve`'s byte for byte (`benchmarks/compiled_server/same_answers.py`, also a test).
//!
//! Every request's header and body are read, and every answer's written, by kcoord-wire (impl/native/wire: the codec
//! generated from Kafka 4.0.2's message declarations, held to kio byte for byte); what is laid out by hand here is
//! the log format — record batches, transaction-log and offset-commit records — on kcoord-wire's primitives.
//!
//! It recovers from its data directory at start-up (recovery.rs): every topic it finds (a data topic's size from the
//! `partition.metadata` files CreateTopics writes in each of its partitions' folders, as kcoord's), each log reopened
//! at its end, a torn tail cut and said on stderr (file, byte position), damage inside a log refused (one line, exit
//! 1, nothing changed); from the transaction log each transactional id's Transaction instance (every field its
//! record carries; `last_producer_epoch` -1, as kcoord and Kafka load it) and the next producer id (above every id a
//! record or batch carries, and kcoord serve's `producer-id-blocks`, which it keeps too: moved on a block of 1,000
//! before an id of the block is handed out); from the offsets
//! partitions the committed offsets and the pending transactional ones (settled by their markers); from the data
//! partitions each producer's epoch and last sequence (what the Produce check keeps) and its open transaction's
//! first offset; then every transaction found in PrepareCommit or PrepareAbort is completed as Kafka's coordinator does
//! at load (markers, then the Complete* record, through the table's CompleteTxn row), before anything is answered. The
//! layout is kcoord's: `kcoord serve` started on a copy of a folder it wrote answers as it does, and the other way
//! round (tests/impl/native/test_native_recovery.py).
//!
//! What it does not have yet, against kcoord serve (the adoption steps are in benchmarks/RESULTS.md, issue 31's
//! twentieth and twenty-first sessions): a recovery point (every batch is checked at each start), groups, fetch,
//! metrics, traces, timeouts, the partition's producer checks, offsets bookkeeping and error translations from
//! generated tables (written by hand here, after impl/'s Python), and every API a transactional producer's set-up and
//! transactions do not send (`SERVED`: ApiVersions v0-4, Metadata v1-13, CreateTopics v4, FindCoordinator v3,
//! InitProducerId v4, Produce v8 and v12, AddPartitionsToTxn v3, AddOffsetsToTxn v3, TxnOffsetCommit v3 and v5,
//! EndTxn v3 and v5; any other request, and one kcoord-wire cannot read, closes its connection; bytes after a body
//! are ignored, as kcoord serve's codec ignores them: librdkafka's Metadata v13 has 3).
//!
//! A client's first requests are answered as kcoord serve answers them (tests/impl/native/test_native_cluster_apis.py,
//! field by field): ApiVersions (its KIP-511 v0 fallback for a version not served, its client software check, its
//! feature flags) listing the ranges this server serves, derived from `SERVED`, not kcoord serve's; Metadata with
//! this node as broker and controller, cluster id `kcoord`, each data topic with the id its `partition.metadata`
//! holds. Against kcoord serve: no topic is auto-created (a topic not known is UNKNOWN_TOPIC_OR_PARTITION even when
//! the request allows creation; kcoord serve's `auto.create.topics.enable` is on), and the leader epoch is always 0
//! (no `leader-epoch-checkpoint`: kcoord serve's moves up one at each restart).
//!
//! Usage: kcoord-native DATA_DIR os|fsync  — prints "127.0.0.1:PORT" once listening.

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::ops::RangeInclusive;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

// the spec's tables and Kafka's error codes, generated by `kcoord gen` (impl/_generated/rust/; rustfmt leaves them
// as generated)
#[rustfmt::skip]
#[path = "../../../_generated/rust/errors.rs"]
mod errors;
#[rustfmt::skip]
#[path = "../../../_generated/rust/machines.rs"]
mod machines;
mod recovery;

use errors::{
    CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, CORRUPT_MESSAGE, INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING, INVALID_REQUEST, INVALID_TXN_STATE, KAFKA_STORAGE_ERROR, NONE, NOT_ENOUGH_REPLICAS,
    OPERATION_NOT_ATTEMPTED, OUT_OF_ORDER_SEQUENCE_NUMBER, PRODUCER_FENCED, TOPIC_ALREADY_EXISTS,
    TRANSACTION_ABORTABLE, UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION,
};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);

const TXN_TOPIC: usize = 0;
const OFFSETS_TOPIC: usize = 1;
const INTERNAL_PARTITIONS: i32 = 50;
const NODE_ID: i32 = 0;

// ------------------------------------------------------------------------------------------------ the wire

// every request's header and body read, every answer's written, by kcoord-wire: the codec generated from Kafka's
// message declarations (impl/native/wire); here only which requests are served and why a connection closes
use kcoord_wire::codec::{put_i16, put_i32, put_i64, put_i8, put_string, put_uvarint};
use kcoord_wire::generated::add_offsets_to_txn::{request::AddOffsetsToTxnRequest, response::AddOffsetsToTxnResponse};
use kcoord_wire::generated::add_partitions_to_txn::request::AddPartitionsToTxnRequest;
use kcoord_wire::generated::add_partitions_to_txn::response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};
use kcoord_wire::generated::api_versions::request::ApiVersionsRequest;
use kcoord_wire::generated::api_versions::response::{
    ApiVersion, ApiVersionsResponse, FinalizedFeatureKey, SupportedFeatureKey,
};
use kcoord_wire::generated::create_topics::request::CreateTopicsRequest;
use kcoord_wire::generated::create_topics::response::{CreatableTopicResult, CreateTopicsResponse};
use kcoord_wire::generated::end_txn::{request::EndTxnRequest, response::EndTxnResponse};
use kcoord_wire::generated::find_coordinator::response::FindCoordinatorResponse;
use kcoord_wire::generated::header::{request_header::RequestHeader, response_header::ResponseHeader};
use kcoord_wire::generated::init_producer_id::{request::InitProducerIdRequest, response::InitProducerIdResponse};
use kcoord_wire::generated::metadata::request::MetadataRequest;
use kcoord_wire::generated::metadata::response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kcoord_wire::generated::produce::request::{PartitionProduceData, ProduceRequest};
use kcoord_wire::generated::produce::response::{PartitionProduceResponse, ProduceResponse, TopicProduceResponse};
use kcoord_wire::generated::txn_offset_commit::request::TxnOffsetCommitRequest;
use kcoord_wire::generated::txn_offset_commit::response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kcoord_wire::generated::{request_header_version, response_header_version};
use kcoord_wire::{Reader, Request, Response, WireError};

/// The requests served, as (api key, versions): a client's first requests (ApiVersions v0-4, Metadata v1-13, as
/// kcoord serve), a transactional producer's set-up (CreateTopics v4, FindCoordinator v3, InitProducerId v4) and its
/// transactions, V2 (Produce v12, TxnOffsetCommit v5, EndTxn v5) and V1 (AddPartitionsToTxn v3, Produce v8,
/// AddOffsetsToTxn v3, TxnOffsetCommit v3, EndTxn v3). ApiVersions advertises, per api key, its newest range here
/// (`advertised`): a range cannot have a gap, so Produce v8, TxnOffsetCommit v3 and EndTxn v3 are answered but not
/// advertised (to the clients that send them without asking, as the bench's V1 workload). Sorted by api key, then
/// version (`advertised` relies on it).
const SERVED: &[(i16, RangeInclusive<i16>)] = &[
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

fn served(api_key: i16, version: i16) -> bool {
    SERVED
        .iter()
        .any(|(key, versions)| *key == api_key && versions.contains(&version))
}

/// What ApiVersions lists: per api key of `SERVED`, its range with the newest version.
fn advertised() -> Vec<ApiVersion> {
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

const API_VERSIONS: i16 = 18;

/// The feature flags ApiVersions v3+ lists, as kcoord serve's `served_features(2)` (impl/server/apis.py): (name,
/// supported min, supported max, finalized level). `group.version` 1 too, though no group API is served here: it
/// says which group protocol the cluster's version allows; a client using it asks ApiVersions for the API first.
const FEATURES: &[(&str, i16, i16, i16)] = &[("group.version", 0, 1, 1), ("transaction.version", 0, 2, 2)];

/// Kafka's ApiVersionsRequest.isValid for a client software name or version (KIP-511):
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
fn valid_software(s: &str) -> bool {
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
enum Refusal {
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

// ------------------------------------------------------------------------------------------------ record batches

/// A record's key and value (either may be null).
type Record<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A record's varint (Kafka's zig-zag int32: its lengths and deltas).
fn zigzag(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

fn varint(out: &mut Vec<u8>, v: i32) {
    put_uvarint(out, zigzag(v));
}

fn varint_len(v: i32) -> usize {
    let mut u = zigzag(v);
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

const TRANSACTIONAL: i16 = 0x10;
const CONTROL: i16 = 0x20;

/// A Kafka v2 record batch of `records` (key, value), base offset 0 (the log sets it), CRC-32C computed.
fn batch(records: &[Record], ts: i64, pid: i64, epoch: i16, seq: i32, attrs: i16) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(61 + records.len() * 64);
    out.resize(61, 0);
    for (delta, (key, value)) in records.iter().enumerate() {
        let field_len = |f: &Option<&[u8]>| match f {
            None => 1,
            Some(b) => varint_len(b.len() as i32) + b.len(),
        };
        let body_len = 2 + varint_len(delta as i32) + field_len(key) + field_len(value) + 1;
        varint(&mut out, body_len as i32);
        out.push(0);
        out.push(0);
        varint(&mut out, delta as i32);
        for f in [key, value] {
            match f {
                None => varint(&mut out, -1),
                Some(b) => {
                    varint(&mut out, b.len() as i32);
                    out.extend_from_slice(b);
                }
            }
        }
        out.push(0);
    }
    let n = records.len();
    let records_len = out.len() - 61;
    let h = &mut out[..61];
    h[8..12].copy_from_slice(&((49 + records_len) as i32).to_be_bytes());
    h[12..16].copy_from_slice(&0i32.to_be_bytes());
    h[16] = 2;
    h[21..23].copy_from_slice(&attrs.to_be_bytes());
    h[23..27].copy_from_slice(&((n - 1) as i32).to_be_bytes());
    h[27..35].copy_from_slice(&ts.to_be_bytes());
    h[35..43].copy_from_slice(&ts.to_be_bytes());
    h[43..51].copy_from_slice(&pid.to_be_bytes());
    h[51..53].copy_from_slice(&epoch.to_be_bytes());
    h[53..57].copy_from_slice(&seq.to_be_bytes());
    h[57..61].copy_from_slice(&(n as i32).to_be_bytes());
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    out
}

/// What a produced batch says about itself (its header, its CRC checked).
struct BatchHead {
    transactional: bool,
    pid: i64,
    epoch: i16,
    seq: i32,
    count: i32,
}

fn batch_head(b: &[u8]) -> Option<BatchHead> {
    if b.len() < 61 || b[16] != 2 {
        return None;
    }
    let length = i32::from_be_bytes(b[8..12].try_into().unwrap());
    if length < 49 || 12 + length as usize != b.len() {
        return None; // one batch per partition, as the Java client sends it
    }
    let crc = u32::from_be_bytes(b[17..21].try_into().unwrap());
    if crc32c::crc32c(&b[21..]) != crc {
        return None;
    }
    let attrs = i16::from_be_bytes(b[21..23].try_into().unwrap());
    Some(BatchHead {
        transactional: attrs & TRANSACTIONAL != 0,
        pid: i64::from_be_bytes(b[43..51].try_into().unwrap()),
        epoch: i16::from_be_bytes(b[51..53].try_into().unwrap()),
        seq: i32::from_be_bytes(b[53..57].try_into().unwrap()),
        count: i32::from_be_bytes(b[57..61].try_into().unwrap()),
    })
}

// ------------------------------------------------------------------------------------------------ logs

struct Log {
    path: PathBuf,
    file: File,
    next: i64,
    position: u64,
}

impl Log {
    fn open(path: PathBuf) -> io::Result<Log> {
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let position = file.metadata()?.len();
        Ok(Log {
            path,
            file,
            next: 0,
            position,
        })
    }

    /// Appends `b` (its base offset set here) with one write; its base offset.
    fn append(&mut self, b: &mut [u8], count: i32) -> Result<i64, i16> {
        let base = self.next;
        b[0..8].copy_from_slice(&base.to_be_bytes());
        if let Err(e) = self.file.write_all(b) {
            eprintln!("kcoord-native: {} at byte {}: {e}", self.path.display(), self.position);
            return Err(KAFKA_STORAGE_ERROR);
        }
        self.position += b.len() as u64;
        self.next += count as i64;
        Ok(base)
    }
}

struct Partition {
    log: Option<Log>,
    producers: HashMap<i64, (i16, i32)>,  // producer id -> (epoch, last sequence)
    txn_first_offsets: HashMap<i64, i64>, // producer id -> its open transaction's first offset (recovery::note_batch)
}

struct Topic {
    name: String,
    id: [u8; 16], // its `partition.metadata`'s topic_id (zero: none found)
    partitions: Vec<Partition>,
}

// ------------------------------------------------------------------------------------------------ coordinators

use machines::transaction;
use transaction::{args, Decision, Instance, Kind, State, TxnResult};

/// transaction.max.timeout.ms's default (15 minutes), as kcoord serve's
const MAX_TIMEOUT_MS: i64 = 900_000;
/// ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE, as kcoord's allocator (impl/storage/producer_ids.py)
const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// Kafka's TransactionState ids, as the transaction log stores them.
fn status(state: State) -> i8 {
    match state {
        State::Empty => 0,
        State::Ongoing => 1,
        State::PrepareCommit => 2,
        State::PrepareAbort => 3,
        State::CompleteCommit => 4,
        State::CompleteAbort => 5,
        State::Dead => 6,
        State::PrepareEpochFence => 7,
    }
}

/// A decision the table refused (no row, a bound, a precondition: a bug of the caller's), said; UNKNOWN_SERVER_ERROR.
fn refused(event: &str, why: &str) -> i16 {
    eprintln!("kcoord-native: Transaction.{event}: {why}");
    -1
}

/// A partition leader's answer to Produce for its verification's refusal, and the group coordinator's to
/// TxnOffsetCommit (both: PRODUCER_FENCED → INVALID_PRODUCER_EPOCH; the rest as the coordinator answered).
fn verification_answer(code: i16) -> i16 {
    if code == PRODUCER_FENCED {
        INVALID_PRODUCER_EPOCH
    } else {
        code
    }
}

/// A Produce's topic: its index among ours (None: unknown) and, per partition, its batch's head or the answer
/// refusing it.
type ProducedTopic = (Option<usize>, Vec<Result<BatchHead, i16>>);

/// A Produce's transactional partitions, each with the transaction's answer and the message answered with it.
type TxnAnswers = HashMap<(usize, i32), (i16, Option<String>)>;

/// An offset's key: (group, topic, partition).
type OffsetKey = (String, String, i32);

/// Java's `String.hashCode`.
fn java_hash(s: &str) -> i32 {
    let mut h: i32 = 0;
    for unit in s.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    h
}

/// Kafka's `Utils.abs(key.hashCode) % partitions` (MIN_VALUE → 0).
fn partition_for(key: &str) -> i32 {
    let h = java_hash(key);
    (if h == i32::MIN { 0 } else { h.abs() }) % INTERNAL_PARTITIONS
}

/// `topic-N` as (topic, N).
fn split_partition(name: &str) -> Option<(&str, i32)> {
    let (topic, partition) = name.rsplit_once('-')?;
    Some((topic, partition.parse().ok()?))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

struct Broker {
    dir: PathBuf,
    topics: Vec<Topic>,
    by_name: HashMap<String, usize>,
    txns: HashMap<String, Instance>, // the Transaction machine's instances, by transactional id
    offsets: HashMap<OffsetKey, i64>, // committed offsets
    pending_offsets: HashMap<i64, Vec<(OffsetKey, i64)>>, // by producer id: its transaction's, until its marker
    next_pid: i64,
    pid_limit: i64, // every id below it is handed out by kcoord serve's `producer-id-blocks` file, none above
    port: i32,
    features_epoch: i64, // ApiVersions v3+'s finalized features epoch: the start's time in ms, as kcoord serve's
    wrote: bool,         // whether the request being handled appended anything (fsync: its answer waits for a round)
}

impl Broker {
    /// CreateTopics for one topic: the topic made, its partitions' folders and `partition.metadata` on disk (so a
    /// restart knows its size).
    fn create_topic(&mut self, name: &str, partitions: i32) -> i16 {
        let code = self.open_topic(name, partitions, [0; 16]);
        if code != NONE {
            return code;
        }
        self.wrote = true;
        match recovery::persist_topic(&self.dir, name.as_bytes(), partitions) {
            Ok(id) => self.topics.last_mut().expect("the topic just opened").id = id,
            Err(e) => {
                eprintln!("kcoord-native: creating topic {name}: {e}");
                self.by_name.remove(name);
                self.topics.pop();
                return KAFKA_STORAGE_ERROR;
            }
        }
        NONE
    }

    /// A topic known from now on (in memory only: at start-up, the coordinator topics and those recovery finds).
    fn open_topic(&mut self, name: &str, partitions: i32, id: [u8; 16]) -> i16 {
        if self.by_name.contains_key(name) {
            return TOPIC_ALREADY_EXISTS;
        }
        if partitions <= 0 || name.is_empty() || name.contains('/') {
            return INVALID_REQUEST;
        }
        self.by_name.insert(name.to_owned(), self.topics.len());
        self.topics.push(Topic {
            name: name.to_owned(),
            id,
            partitions: (0..partitions)
                .map(|_| Partition {
                    log: None,
                    producers: HashMap::new(),
                    txn_first_offsets: HashMap::new(),
                })
                .collect(),
        });
        NONE
    }

    fn log(&mut self, topic: usize, partition: i32) -> Result<&mut Log, i16> {
        if self.topics[topic].partitions[partition as usize].log.is_none() {
            let dir = self.dir.join(self.partition_name(topic, partition));
            let opened = std::fs::create_dir_all(&dir).and_then(|_| Log::open(dir.join("00000000000000000000.log")));
            match opened {
                Ok(log) => self.topics[topic].partitions[partition as usize].log = Some(log),
                Err(e) => {
                    eprintln!("kcoord-native: {}: {e}", dir.display());
                    return Err(KAFKA_STORAGE_ERROR);
                }
            }
        }
        Ok(self.topics[topic].partitions[partition as usize].log.as_mut().unwrap())
    }

    fn append(&mut self, topic: usize, partition: i32, b: &mut [u8], count: i32) -> Result<i64, i16> {
        self.wrote = true;
        let base = self.log(topic, partition)?.append(b, count)?;
        recovery::note_batch(&mut self.topics[topic].partitions[partition as usize], b, base);
        Ok(base)
    }

    /// A partition's name, in the spec's sets and as its log directory's: `topic-N`.
    fn partition_name(&self, t: usize, p: i32) -> String {
        format!("{}-{}", self.topics[t].name, p)
    }

    /// A partition's name in the spec (`topic-N`) as (topic index, partition), if it is one of ours.
    fn partition_of(&self, name: &str) -> Option<(usize, i32)> {
        let (topic, partition) = split_partition(name)?;
        let t = *self.by_name.get(topic)?;
        (partition >= 0 && (partition as usize) < self.topics[t].partitions.len()).then_some((t, partition))
    }

    /// The instance's record in its transaction-log partition (TransactionLogKey v0, TransactionLogValue v1: the
    /// fields `persist TransactionLogValue` lists, the tagged ones written when not at their defaults).
    fn write_txn(&mut self, tid: &str, ts: i64) -> Result<(), i16> {
        let txn = &self.txns[tid];
        let unwritable = |why: WireError| refused("a transaction-log record", &why.to_string());
        let mut key = Vec::with_capacity(4 + tid.len());
        put_i16(&mut key, 0);
        put_string(&mut key, false, tid).map_err(unwritable)?;
        let mut value = Vec::with_capacity(64);
        put_i16(&mut value, 1);
        put_i64(&mut value, txn.producer_id);
        put_i16(&mut value, txn.producer_epoch as i16);
        put_i32(&mut value, txn.txn_timeout_ms as i32);
        put_i8(&mut value, status(txn.state));
        // the partitions by topic (names sorted, as the instance's set is)
        let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
        for name in &txn.partitions {
            let Some((topic, partition)) = split_partition(name) else {
                return Err(refused(
                    "a transaction-log record",
                    "a partition name that is not topic-N",
                ));
            };
            match by_topic.iter_mut().find(|(t, _)| *t == topic) {
                Some((_, ps)) => ps.push(partition),
                None => by_topic.push((topic, vec![partition])),
            }
        }
        put_uvarint(&mut value, by_topic.len() as u32 + 1);
        for (topic, ps) in &by_topic {
            put_string(&mut value, true, topic).map_err(unwritable)?;
            put_uvarint(&mut value, ps.len() as u32 + 1);
            for p in ps {
                put_i32(&mut value, *p);
            }
            put_uvarint(&mut value, 0);
        }
        put_i64(&mut value, ts);
        put_i64(&mut value, txn.txn_start_timestamp_ms);
        let tags: Vec<(u32, Vec<u8>)> = [
            (
                0,
                txn.previous_producer_id != -1,
                txn.previous_producer_id.to_be_bytes().to_vec(),
            ),
            (
                1,
                txn.next_producer_id != -1,
                txn.next_producer_id.to_be_bytes().to_vec(),
            ),
            (
                2,
                txn.client_txn_version != 0,
                (txn.client_txn_version as i16).to_be_bytes().to_vec(),
            ),
        ]
        .into_iter()
        .filter(|(_, present, _)| *present)
        .map(|(tag, _, bytes)| (tag, bytes))
        .collect();
        put_uvarint(&mut value, tags.len() as u32);
        for (tag, bytes) in tags {
            put_uvarint(&mut value, tag);
            put_uvarint(&mut value, bytes.len() as u32);
            value.extend_from_slice(&bytes);
        }
        let mut b = batch(&[(Some(&key), Some(&value))], ts, -1, -1, -1, 0);
        self.append(TXN_TOPIC, partition_for(tid), &mut b, 1).map(|_| ())
    }

    /// `fresh` may be handed out: below the limit kcoord serve's `producer-id-blocks` file records, or the file moved on
    /// a block (1,000 ids, as kcoord's allocator and Kafka's) first — written, synced and renamed into place, so that
    /// no server on this folder hands out an id twice. COORDINATOR_LOAD_IN_PROGRESS (retriable) if it cannot be.
    fn reserve_pid(&mut self, fresh: i64) -> Result<(), i16> {
        if fresh < self.pid_limit {
            return Ok(());
        }
        let limit = (fresh / PRODUCER_ID_BLOCK_SIZE + 1) * PRODUCER_ID_BLOCK_SIZE;
        if let Err(e) = recovery::write_producer_id_blocks(&self.dir, limit) {
            eprintln!(
                "kcoord-native: {}: {e}",
                self.dir.join(recovery::PRODUCER_ID_BLOCKS).display()
            );
            return Err(COORDINATOR_LOAD_IN_PROGRESS);
        }
        self.pid_limit = limit;
        Ok(())
    }

    /// A decision taken: a transition's post-state becomes the instance (its record written when the row says so; a
    /// fresh producer id the post-state holds is taken), a rejection changes nothing. The row's answer.
    fn apply(&mut self, tid: &str, decision: Decision, fresh_pid: Option<i64>, ts: i64) -> Result<i16, i16> {
        let row = decision.row;
        if let Some(post) = decision.post {
            if let Some(fresh) = fresh_pid.filter(|&f| post.producer_id == f || post.next_producer_id == f) {
                self.next_pid = fresh;
            }
            *self.txns.get_mut(tid).unwrap() = post;
            if row.writes {
                self.write_txn(tid, ts)?;
            }
        }
        Ok(row.code)
    }

    /// Markers and the Complete record once the instance is in PrepareCommit or PrepareAbort (at once: the logs are
    /// local, so the markers are written as soon as the Prepare record is; a fence's PrepareEpochFence is aborted
    /// first, by FenceAbort).
    fn finish(&mut self, tid: &str, ts: i64) -> Result<(), i16> {
        if self.txns[tid].state == State::PrepareEpochFence {
            let d = transaction::decide_FenceAbort(
                &self.txns[tid],
                &args::FenceAbort {
                    server_txn_version: 2,
                    now_ms: ts,
                },
                false,
            )
            .map_err(|why| refused("FenceAbort", why))?;
            self.apply(tid, d, None, ts)?;
        }
        let (state, pid, epoch) = {
            let t = &self.txns[tid];
            (t.state, t.producer_id, t.producer_epoch as i16)
        };
        let commit = match state {
            State::PrepareCommit => true,
            State::PrepareAbort => false,
            _ => return Ok(()),
        };
        let mut mkey = Vec::with_capacity(4);
        put_i16(&mut mkey, 0);
        put_i16(&mut mkey, if commit { 1 } else { 0 });
        let mut mvalue = Vec::with_capacity(6);
        put_i16(&mut mvalue, 0);
        put_i32(&mut mvalue, 0);
        let names: Vec<String> = self.txns[tid].partitions.iter().cloned().collect();
        for name in names {
            let Some((t, p)) = self.partition_of(&name) else {
                continue;
            };
            let mut b = batch(
                &[(Some(&mkey), Some(&mvalue))],
                ts,
                pid,
                epoch,
                -1,
                TRANSACTIONAL | CONTROL,
            );
            self.append(t, p, &mut b, 1)?;
            if t == OFFSETS_TOPIC {
                if let Some(offsets) = self.pending_offsets.remove(&pid) {
                    if commit {
                        self.offsets.extend(offsets);
                    }
                }
            }
        }
        let d = transaction::decide_CompleteTxn(&self.txns[tid], &args::CompleteTxn { now_ms: ts }, false)
            .map_err(|why| refused("CompleteTxn", why))?;
        self.apply(tid, d, None, ts).map(|_| ())
    }

    /// AddPartitions (`txn_version` 2: Transactions V2's implicit add by a partition leader or the group
    /// coordinator; 0: AddPartitionsToTxn/AddOffsetsToTxn v3): the answer of the spec's row.
    fn add(&mut self, tid: &str, pid: i64, epoch: i16, parts: &[(usize, i32)], txn_version: i64, ts: i64) -> i16 {
        let Some(instance) = self.txns.get(tid) else {
            return INVALID_PRODUCER_ID_MAPPING;
        };
        let parts = parts.iter().map(|&(t, p)| self.partition_name(t, p)).collect();
        let a = args::AddPartitions {
            pid,
            epoch: epoch as i64,
            parts,
            txn_version,
            now_ms: ts,
        };
        match transaction::decide_AddPartitions(instance, &a, false) {
            Ok(d) => self.apply(tid, d, None, ts).unwrap_or_else(|code| code),
            Err(why) => refused("AddPartitions", why),
        }
    }

    /// Transactions V1's verification (VerifyPartition, KIP-890 part 1): the spec's answer for `(t, p)`.
    fn verify(&mut self, tid: &str, pid: i64, epoch: i16, (t, p): (usize, i32)) -> i16 {
        let Some(instance) = self.txns.get(tid) else {
            return INVALID_PRODUCER_ID_MAPPING;
        };
        let name = self.partition_name(t, p);
        match transaction::decide_VerifyPartition(
            instance,
            &args::VerifyPartition {
                pid,
                epoch: epoch as i64,
                p: name,
            },
            false,
        ) {
            Ok(d) => d.row.code,
            Err(why) => refused("VerifyPartition", why),
        }
    }

    // -------------------------------------------------------------------------------------------- handlers

    /// CreateTopics v4: each topic created with its partition count (its assignments and configs read, not used).
    fn create_topics(&mut self, q: CreateTopicsRequest) -> CreateTopicsResponse {
        let topics = q
            .topics
            .into_iter()
            .map(|topic| CreatableTopicResult {
                error_code: self.create_topic(&topic.name, topic.num_partitions),
                name: topic.name,
                error_message: None,
                ..Default::default()
            })
            .collect();
        CreateTopicsResponse {
            throttle_time_ms: 0,
            topics,
        }
    }

    /// ApiVersions v0-4, as kcoord serve's (impl/server/api_versions.py) but listing what this server serves
    /// (`advertised`): v3+ with a client software name or version Kafka refuses → INVALID_REQUEST, nothing listed;
    /// v3 leaves out the supported features whose minimum is 0 (KAFKA-17492), v4 lists them all.
    fn api_versions(&self, q: ApiVersionsRequest, version: i16) -> ApiVersionsResponse {
        if version >= 3 && !(valid_software(&q.client_software_name) && valid_software(&q.client_software_version)) {
            return ApiVersionsResponse {
                error_code: INVALID_REQUEST,
                ..Default::default()
            };
        }
        let supported =
            FEATURES
                .iter()
                .filter(|f| version >= 4 || f.1 != 0)
                .map(|&(name, min_version, max_version, _)| SupportedFeatureKey {
                    name: name.to_owned(),
                    min_version,
                    max_version,
                });
        let finalized = FEATURES.iter().map(|&(name, _, _, level)| FinalizedFeatureKey {
            name: name.to_owned(),
            max_version_level: level,
            min_version_level: level,
        });
        ApiVersionsResponse {
            error_code: NONE,
            api_keys: advertised(),
            throttle_time_ms: 0,
            supported_features: supported.collect(),
            finalized_features_epoch: self.features_epoch,
            finalized_features: finalized.collect(),
            ..Default::default()
        }
    }

    /// Metadata v1-13, as kcoord serve's for one node: this node the only broker and the controller, cluster id
    /// `kcoord` (kcoord serve's default `--cluster-id`; kept in no file by either); every data topic (names sorted)
    /// or the requested ones (by name, or by id from v10; an id not known is left out, as kcoord serve does); a topic
    /// not known (the coordinator topics among them) → UNKNOWN_TOPIC_OR_PARTITION — none is created (kcoord serve's
    /// `auto.create.topics.enable` is on: there, a request allowing it creates the topic); every partition led by
    /// this node at epoch 0, its only replica and ISR.
    fn metadata(&self, q: MetadataRequest) -> MetadataResponse {
        let data = |t: &usize| *t != TXN_TOPIC && *t != OFFSETS_TOPIC;
        let named: Vec<(String, Option<usize>)> = match q.topics {
            None => {
                let mut all: Vec<usize> = (0..self.topics.len()).filter(data).collect();
                all.sort_by(|a, b| self.topics[*a].name.cmp(&self.topics[*b].name));
                all.into_iter()
                    .map(|t| (self.topics[t].name.clone(), Some(t)))
                    .collect()
            }
            Some(asked) => asked
                .into_iter()
                .filter_map(|topic| match topic.name {
                    Some(name) => {
                        let t = self.by_name.get(&name).copied().filter(data);
                        Some((name, t))
                    }
                    None if topic.topic_id == [0; 16] => None,
                    None => (0..self.topics.len())
                        .filter(data)
                        .find(|t| self.topics[*t].id == topic.topic_id)
                        .map(|t| (self.topics[t].name.clone(), Some(t))),
                })
                .collect(),
        };
        let topics = named
            .into_iter()
            .map(|(name, t)| self.topic_metadata(name, t))
            .collect();
        MetadataResponse {
            throttle_time_ms: 0,
            brokers: vec![MetadataResponseBroker {
                node_id: NODE_ID,
                host: "127.0.0.1".to_owned(),
                port: self.port,
                rack: None,
            }],
            cluster_id: Some("kcoord".to_owned()),
            controller_id: NODE_ID,
            topics,
            cluster_authorized_operations: i32::MIN, // Kafka's "omitted"
            error_code: NONE,
        }
    }

    fn topic_metadata(&self, name: String, t: Option<usize>) -> MetadataResponseTopic {
        let Some(t) = t else {
            return MetadataResponseTopic {
                error_code: UNKNOWN_TOPIC_OR_PARTITION,
                name: Some(name),
                topic_authorized_operations: i32::MIN,
                ..Default::default()
            };
        };
        let partitions = (0..self.topics[t].partitions.len() as i32)
            .map(|p| MetadataResponsePartition {
                error_code: NONE,
                partition_index: p,
                leader_id: NODE_ID,
                leader_epoch: 0,
                replica_nodes: vec![NODE_ID],
                isr_nodes: vec![NODE_ID],
                offline_replicas: vec![],
            })
            .collect();
        MetadataResponseTopic {
            error_code: NONE,
            name: Some(name),
            topic_id: self.topics[t].id,
            is_internal: false,
            partitions,
            topic_authorized_operations: i32::MIN,
        }
    }

    /// FindCoordinator v3: every coordinator is this node, whatever the key and its type.
    fn find_coordinator(&self) -> FindCoordinatorResponse {
        FindCoordinatorResponse {
            throttle_time_ms: 0,
            error_code: NONE,
            error_message: None,
            node_id: NODE_ID,
            host: "127.0.0.1".to_owned(),
            port: self.port,
            ..Default::default()
        }
    }

    /// InitProducerId v4: a fresh producer id for an idempotent producer; a transactional one's through the spec's
    /// InitProducerId (an open transaction it fences aborted at once).
    fn init_producer_id(&mut self, q: InitProducerIdRequest) -> InitProducerIdResponse {
        let answer = |error_code, producer_id, producer_epoch| InitProducerIdResponse {
            throttle_time_ms: 0,
            error_code,
            producer_id,
            producer_epoch,
        };
        let ts = now_ms();
        let fresh = self.next_pid + 1;
        if let Err(code) = self.reserve_pid(fresh) {
            return answer(code, -1, -1);
        }
        let Some(tid) = q.transactional_id else {
            self.next_pid = fresh;
            return answer(NONE, fresh, 0);
        };
        let instance = self
            .txns
            .entry(tid.clone())
            .or_insert_with(|| Instance::fresh(tid.clone()));
        let a = args::InitProducerId {
            expected_producer_id: q.producer_id,
            expected_epoch: q.producer_epoch as i64,
            timeout_ms: q.transaction_timeout_ms as i64,
            max_timeout_ms: MAX_TIMEOUT_MS,
            new_producer_id: fresh,
            now_ms: ts,
        };
        let code = match transaction::decide_InitProducerId(instance, &a, false) {
            Ok(d) => {
                let fences = d.post.as_ref().is_some_and(|p| p.state == State::PrepareEpochFence);
                match self.apply(&tid, d, Some(fresh), ts) {
                    // an open transaction fenced: aborted now, the client told to retry (as Kafka answers)
                    Ok(_) if fences => self
                        .finish(&tid, ts)
                        .map(|_| CONCURRENT_TRANSACTIONS)
                        .unwrap_or_else(|c| c),
                    Ok(code) => code,
                    Err(code) => code,
                }
            }
            Err(why) => refused("InitProducerId", why),
        };
        let t = &self.txns[&tid];
        if code == NONE {
            answer(code, t.producer_id, t.producer_epoch as i16)
        } else {
            answer(code, -1, -1)
        }
    }

    /// Produce v8 (Transactions V1: each transactional partition verified) or v12 (V2: the leader adds them).
    fn produce(&mut self, q: ProduceRequest, v2: bool) -> ProduceResponse {
        let ts = now_ms();
        // per topic its index among ours (None: unknown) and per partition its batch's head or the answer refusing
        // it; the partitions the transaction must hold (V2: the leader adds them)
        let mut heads: Vec<ProducedTopic> = Vec::with_capacity(q.topic_data.len());
        let mut adds: Vec<(usize, i32)> = Vec::new();
        let mut txn_key: Option<(i64, i16)> = None;
        for topic in &q.topic_data {
            let t = self.by_name.get(&topic.name).copied();
            let mut hs = Vec::with_capacity(topic.partition_data.len());
            for part in &topic.partition_data {
                let index = part.index;
                let head = match (t, &part.records) {
                    (Some(t), Some(b)) if index >= 0 && (index as usize) < self.topics[t].partitions.len() => {
                        batch_head(b).ok_or(CORRUPT_MESSAGE).inspect(|h| {
                            if h.transactional {
                                adds.push((t, index));
                                txn_key = Some((h.pid, h.epoch));
                            }
                        })
                    }
                    (Some(_), None) => Err(CORRUPT_MESSAGE),
                    _ => Err(UNKNOWN_TOPIC_OR_PARTITION),
                };
                hs.push(head);
            }
            heads.push((t, hs));
        }
        let txn_errors = match txn_key {
            Some((pid, epoch)) => self.txn_answers(q.transactional_id.as_deref(), pid, epoch, &adds, v2, ts),
            None => HashMap::new(),
        };
        let mut responses = Vec::with_capacity(heads.len());
        for (topic, (t, hs)) in q.topic_data.into_iter().zip(heads) {
            let mut partition_responses = Vec::with_capacity(hs.len());
            for (part, head) in topic.partition_data.into_iter().zip(hs) {
                partition_responses.push(self.append_produced(t, part, head, &txn_errors));
            }
            responses.push(TopicProduceResponse {
                name: topic.name,
                partition_responses,
            });
        }
        ProduceResponse {
            responses,
            throttle_time_ms: 0,
            node_endpoints: Vec::new(),
        }
    }

    /// A Produce's transactional partitions `adds` (of producer `pid` at `epoch`), each with the transaction's answer:
    /// V2 one add of them all, V1 each one verified (and the message kcoord answers with it, as Kafka 4.0.2's
    /// ReplicaManager).
    fn txn_answers(
        &mut self,
        tid: Option<&str>,
        pid: i64,
        epoch: i16,
        adds: &[(usize, i32)],
        v2: bool,
        ts: i64,
    ) -> TxnAnswers {
        let Some(tid) = tid else {
            return adds.iter().map(|&tp| (tp, (INVALID_REQUEST, None))).collect();
        };
        if v2 {
            let code = verification_answer(self.add(tid, pid, epoch, adds, 2, ts));
            return adds.iter().map(|&tp| (tp, (code, None))).collect();
        }
        let mut answers = HashMap::with_capacity(adds.len());
        for &tp in adds {
            let answer = match self.verify(tid, pid, epoch, tp) {
                CONCURRENT_TRANSACTIONS => (
                    NOT_ENOUGH_REPLICAS,
                    Some(
                        "unable to verify the partition has been added to the transaction: CONCURRENT_TRANSACTIONS"
                            .to_owned(),
                    ),
                ), // inconclusive: not an add
                // Produce up to v10, refused before the log
                TRANSACTION_ABORTABLE => (
                    INVALID_TXN_STATE,
                    Some("Partition was not added to the transaction".to_owned()),
                ),
                code => (verification_answer(code), None),
            };
            answers.insert(tp, answer);
        }
        answers
    }

    /// One partition of a Produce (`t`: its topic's index, `head`: its batch's or the answer refusing it): the batch
    /// appended unless the transaction's answer or the partition's producer state refuses it; the partition's answer.
    fn append_produced(
        &mut self,
        t: Option<usize>,
        part: PartitionProduceData,
        head: Result<BatchHead, i16>,
        txn_errors: &TxnAnswers,
    ) -> PartitionProduceResponse {
        let index = part.index;
        // an error and the log start offset answered with it: -1 before the log (Kafka's UNKNOWN_LOG_APPEND_INFO:
        // the topic, the batch, the transaction's verification), the log's own (0 here: nothing is ever deleted) for
        // what the log's producer state refuses
        let mut error_message: Option<String> = None;
        let result = head.map_err(|code| (code, -1)).and_then(|h| {
            let t = t.expect("a batch's head is read only for a known topic");
            if h.transactional {
                let (code, text) = &txn_errors[&(t, index)];
                if *code != NONE {
                    error_message.clone_from(text);
                    return Err((*code, -1));
                }
            }
            let producers = &mut self.topics[t].partitions[index as usize].producers;
            match producers.get(&h.pid) {
                Some(&(e, _)) if h.epoch < e => return Err((INVALID_PRODUCER_EPOCH, 0)),
                Some(&(e, last)) if h.epoch == e && h.seq != last.wrapping_add(1) => {
                    return Err((OUT_OF_ORDER_SEQUENCE_NUMBER, 0))
                }
                Some(&(e, _)) if h.epoch > e && h.seq != 0 => return Err((OUT_OF_ORDER_SEQUENCE_NUMBER, 0)),
                _ => {}
            }
            producers.insert(h.pid, (h.epoch, h.seq + h.count - 1));
            let mut b = part.records.expect("a batch's head is read only from a batch");
            self.append(t, index, &mut b, h.count).map_err(|code| (code, -1))
        });
        let (error_code, base_offset, log_start_offset) = match result {
            Ok(base) => (NONE, base, 0),
            Err((code, log_start)) => (code, -1, log_start),
        };
        PartitionProduceResponse {
            index,
            error_code,
            base_offset,
            log_append_time_ms: -1,
            log_start_offset,
            record_errors: Vec::new(),
            error_message,
            ..Default::default()
        }
    }

    /// TxnOffsetCommit v3 (Transactions V1: the offsets partition verified) or v5 (V2: added).
    fn txn_offset_commit(&mut self, q: TxnOffsetCommitRequest, v2: bool) -> TxnOffsetCommitResponse {
        let ts = now_ms();
        let (tid, pid, epoch) = (q.transactional_id.as_str(), q.producer_id, q.producer_epoch);
        let offsets_partition = partition_for(&q.group_id);
        let offsets = (OFFSETS_TOPIC, offsets_partition);
        let mut code = if v2 {
            verification_answer(self.add(tid, pid, epoch, &[offsets], 2, ts))
        } else {
            match self.verify(tid, pid, epoch, offsets) {
                TRANSACTION_ABORTABLE => INVALID_TXN_STATE, // a client before v4 does not know it
                code => verification_answer(code),
            }
        };
        if code == NONE {
            if let Err(e) = self.write_offsets(&q, offsets_partition, ts) {
                code = e;
            }
        }
        let topics = q
            .topics
            .into_iter()
            .map(|topic| TxnOffsetCommitResponseTopic {
                partitions: (topic.partitions.iter())
                    .map(|p| TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code,
                    })
                    .collect(),
                name: topic.name,
            })
            .collect();
        TxnOffsetCommitResponse {
            throttle_time_ms: 0,
            topics,
        }
    }

    /// A TxnOffsetCommit's offsets in the group's offsets partition — OffsetCommitKey v1 and OffsetCommitValue v3 per
    /// partition, one transactional batch — and pending until the transaction's marker.
    fn write_offsets(&mut self, q: &TxnOffsetCommitRequest, partition: i32, ts: i64) -> Result<(), i16> {
        let unwritable = |why: WireError| refused("an offset-commit record", &why.to_string());
        let mut keys_values: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for topic in &q.topics {
            for p in &topic.partitions {
                let mut key = Vec::with_capacity(8 + q.group_id.len() + topic.name.len());
                put_i16(&mut key, 1);
                put_string(&mut key, false, &q.group_id).map_err(unwritable)?;
                put_string(&mut key, false, &topic.name).map_err(unwritable)?;
                put_i32(&mut key, p.partition_index);
                let mut value = Vec::with_capacity(32);
                put_i16(&mut value, 3);
                put_i64(&mut value, p.committed_offset);
                put_i32(&mut value, p.committed_leader_epoch);
                put_string(&mut value, false, p.committed_metadata.as_deref().unwrap_or("")).map_err(unwritable)?;
                put_i64(&mut value, ts);
                keys_values.push((key, value));
            }
        }
        if keys_values.is_empty() {
            return Ok(());
        }
        let records: Vec<Record> = keys_values
            .iter()
            .map(|(k, v)| (Some(k.as_slice()), Some(v.as_slice())))
            .collect();
        let mut b = batch(&records, ts, q.producer_id, q.producer_epoch, -1, TRANSACTIONAL);
        self.append(OFFSETS_TOPIC, partition, &mut b, records.len() as i32)?;
        let pending = self.pending_offsets.entry(q.producer_id).or_default();
        for topic in &q.topics {
            for p in &topic.partitions {
                let key = (q.group_id.clone(), topic.name.clone(), p.partition_index);
                pending.push((key, p.committed_offset));
            }
        }
        Ok(())
    }

    /// AddPartitionsToTxn v3 (Transactions V1): the partitions added (AddPartitions, txn_version 0), every partition
    /// answered with the row's answer; an unknown one makes the others OPERATION_NOT_ATTEMPTED.
    fn add_partitions_to_txn(&mut self, q: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
        // each partition as (topic index, partition) when it is one of ours
        let known: Vec<Vec<Option<(usize, i32)>>> = (q.v3_and_below_topics.iter())
            .map(|topic| {
                let t = self.by_name.get(&topic.name).copied();
                (topic.partitions.iter())
                    .map(|&p| {
                        t.filter(|&t| p >= 0 && (p as usize) < self.topics[t].partitions.len())
                            .map(|t| (t, p))
                    })
                    .collect()
            })
            .collect();
        let code = match known.iter().flatten().copied().collect::<Option<Vec<(usize, i32)>>>() {
            Some(parts) => self.add(
                &q.v3_and_below_transactional_id,
                q.v3_and_below_producer_id,
                q.v3_and_below_producer_epoch,
                &parts,
                0,
                now_ms(),
            ),
            None => OPERATION_NOT_ATTEMPTED,
        };
        let results = (q.v3_and_below_topics.into_iter().zip(&known))
            .map(|(topic, ks)| AddPartitionsToTxnTopicResult {
                results_by_partition: (topic.partitions.iter().zip(ks))
                    .map(|(&p, k)| AddPartitionsToTxnPartitionResult {
                        partition_index: p,
                        partition_error_code: if k.is_some() { code } else { UNKNOWN_TOPIC_OR_PARTITION },
                    })
                    .collect(),
                name: topic.name,
            })
            .collect();
        AddPartitionsToTxnResponse {
            throttle_time_ms: 0,
            results_by_topic_v3_and_below: results,
            ..Default::default()
        }
    }

    /// AddOffsetsToTxn v3: the group's offsets partition added (AddPartitions, txn_version 0).
    fn add_offsets_to_txn(&mut self, q: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
        let offsets = (OFFSETS_TOPIC, partition_for(&q.group_id));
        let code = self.add(
            &q.transactional_id,
            q.producer_id,
            q.producer_epoch,
            &[offsets],
            0,
            now_ms(),
        );
        AddOffsetsToTxnResponse {
            throttle_time_ms: 0,
            error_code: code,
        }
    }

    /// EndTxn v3 (Transactions V1: EndTxnV1, no epoch bump, no producer id in the answer) or v5 (V2: EndTxnV2, the
    /// epoch bumped, the answer carrying the producer id and epoch to use next).
    fn end_txn(&mut self, q: EndTxnRequest, v2: bool) -> EndTxnResponse {
        let tid = q.transactional_id.as_str();
        let result = if q.committed {
            TxnResult::COMMIT
        } else {
            TxnResult::ABORT
        };
        let code = self.end(tid, q.producer_id, q.producer_epoch as i64, result, v2);
        let (producer_id, producer_epoch) = match (v2, code, self.txns.get(tid)) {
            (true, NONE, Some(t)) => (t.producer_id, t.producer_epoch as i16),
            _ => (-1, -1), // v3 has neither field
        };
        EndTxnResponse {
            throttle_time_ms: 0,
            error_code: code,
            producer_id,
            producer_epoch,
        }
    }

    /// The spec's EndTxnV1 or EndTxnV2, then the markers and the Complete record: the answer.
    fn end(&mut self, tid: &str, pid: i64, epoch: i64, result: TxnResult, v2: bool) -> i16 {
        if !self.txns.contains_key(tid) {
            return INVALID_PRODUCER_ID_MAPPING;
        }
        let fresh = self.next_pid + 1;
        if let Err(code) = self.reserve_pid(fresh) {
            return code;
        }
        let instance = &self.txns[tid];
        let now_ms = now_ms();
        let decided = if v2 {
            let a = args::EndTxnV2 {
                pid,
                epoch,
                result,
                new_producer_id: fresh,
                now_ms,
            };
            transaction::decide_EndTxnV2(instance, &a, false)
        } else {
            let a = args::EndTxnV1 {
                pid,
                epoch,
                result,
                now_ms,
            };
            transaction::decide_EndTxnV1(instance, &a, false)
        };
        match decided {
            Ok(d) => {
                let transition = d.row.kind != Kind::Reject;
                match self.apply(tid, d, v2.then_some(fresh), now_ms) {
                    Ok(code) if transition => self.finish(tid, now_ms).map(|_| code).unwrap_or_else(|c| c),
                    Ok(code) => code,
                    Err(code) => code,
                }
            }
            Err(why) => refused(if v2 { "EndTxnV2" } else { "EndTxnV1" }, why),
        }
    }

    /// One request frame (without its size): the answer's frame (with its size), or why the connection closes.
    /// The header and the body are read, the answer's header and body written, by kcoord-wire.
    fn handle(&mut self, frame: &[u8]) -> Result<Vec<u8>, Refusal> {
        let (api_key, version) = match frame {
            [k0, k1, v0, v1, ..] => (i16::from_be_bytes([*k0, *k1]), i16::from_be_bytes([*v0, *v1])),
            _ => return Err(Refusal::Short { length: frame.len() }),
        };
        if api_key == API_VERSIONS && !served(api_key, version) {
            // checked before the body is read, as Kafka and kcoord serve do: a newer version's need not be readable
            return self.unsupported_api_versions(frame);
        }
        if !served(api_key, version) {
            return Err(Refusal::Unserved { api_key, version });
        }
        let covered = "kcoord-wire covers every request SERVED lists";
        let unreadable = |why| Refusal::Unreadable { api_key, version, why };
        let mut r = Reader::new(frame);
        let header_version = request_header_version(api_key, version).expect(covered);
        let header = RequestHeader::decode(&mut r, header_version).map_err(unreadable)?;
        let request = Request::decode(api_key, version, &mut r).map_err(unreadable)?;
        // bytes after the body (librdkafka 2.16's Metadata v13 has 3) are ignored, as kcoord serve's codec does
        self.wrote = false;
        let response = match request {
            Request::Produce(q) => Response::Produce(self.produce(q, version >= 12)),
            Request::FindCoordinator(_) => Response::FindCoordinator(self.find_coordinator()),
            Request::ApiVersions(q) => Response::ApiVersions(self.api_versions(q, version)),
            Request::Metadata(q) => Response::Metadata(self.metadata(q)),
            Request::CreateTopics(q) => Response::CreateTopics(self.create_topics(q)),
            Request::InitProducerId(q) => Response::InitProducerId(self.init_producer_id(q)),
            Request::AddPartitionsToTxn(q) => Response::AddPartitionsToTxn(self.add_partitions_to_txn(q)),
            Request::AddOffsetsToTxn(q) => Response::AddOffsetsToTxn(self.add_offsets_to_txn(q)),
            Request::EndTxn(q) => Response::EndTxn(self.end_txn(q, version >= 5)),
            Request::TxnOffsetCommit(q) => Response::TxnOffsetCommit(self.txn_offset_commit(q, version >= 5)),
            _ => unreachable!("SERVED lists only the APIs answered here"),
        };
        let header_version = response_header_version(api_key, version).expect(covered);
        framed(header.correlation_id, header_version, &response, version).map_err(|why| Refusal::Unwritable {
            api_key,
            version,
            why,
        })
    }

    /// An ApiVersions request of a version not served: kcoord serve's KIP-511 fallback, a v0 answer (v0 header)
    /// carrying UNSUPPORTED_VERSION and every advertised range, so the client retries with the newest listed.
    fn unsupported_api_versions(&self, frame: &[u8]) -> Result<Vec<u8>, Refusal> {
        let Some(id) = frame.get(4..8) else {
            return Err(Refusal::Short { length: frame.len() });
        };
        let correlation_id = i32::from_be_bytes(id.try_into().expect("4 bytes"));
        let response = Response::ApiVersions(ApiVersionsResponse {
            error_code: UNSUPPORTED_VERSION,
            api_keys: advertised(),
            ..Default::default()
        });
        framed(correlation_id, 0, &response, 0).map_err(|why| Refusal::Unwritable {
            api_key: API_VERSIONS,
            version: 0,
            why,
        })
    }
}

/// An answer's frame: its size, its header (`header_version`), its body (`version`).
fn framed(correlation_id: i32, header_version: i16, response: &Response, version: i16) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&[0; 4]);
    ResponseHeader { correlation_id }.encode(&mut out, header_version)?;
    response.encode(&mut out, version)?;
    let size = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&size.to_be_bytes());
    Ok(out)
}

// ------------------------------------------------------------------------------------------------ the loop

struct Conn {
    stream: TcpStream,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    held: VecDeque<(u64, Vec<u8>)>, // answers waiting for the round numbered here
    want_write: bool,
}

impl Conn {
    /// Writes what it can; false if the peer is gone.
    fn flush(&mut self) -> bool {
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(0) => return false,
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
        true
    }

    fn release(&mut self, durable: u64) {
        while let Some((round, _)) = self.held.front() {
            if *round > durable {
                break;
            }
            let (_, answer) = self.held.pop_front().unwrap();
            self.out.extend_from_slice(&answer);
        }
    }
}

struct Rounds {
    started: u64,
    durable: u64,
    dirty: bool,
    go: mpsc::Sender<()>,
    done: mpsc::Receiver<()>,
}

fn sync_thread(dir: &Path, waker: Arc<Waker>) -> io::Result<(mpsc::Sender<()>, mpsc::Receiver<()>)> {
    let anchor = File::open(dir)?;
    let (go, rounds) = mpsc::channel::<()>();
    let (finished, done) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        for () in rounds {
            if unsafe { libc::syncfs(anchor.as_raw_fd()) } != 0 {
                eprintln!("kcoord-native: syncfs: {}", io::Error::last_os_error());
                std::process::exit(1);
            }
            if finished.send(()).is_err() {
                return;
            }
            let _ = waker.wake();
        }
    });
    Ok((go, done))
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 || !matches!(args[2].as_str(), "os" | "fsync") {
        eprintln!("usage: kcoord-native DATA_DIR os|fsync");
        std::process::exit(2);
    }
    let dir = PathBuf::from(&args[1]);
    std::fs::create_dir_all(&dir)?;
    let fsync = args[2] == "fsync";
    let mut poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let mut rounds = if fsync {
        let (go, done) = sync_thread(&dir, waker.clone())?;
        Some(Rounds {
            started: 0,
            durable: 0,
            dirty: false,
            go,
            done,
        })
    } else {
        None
    };
    let mut listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let port = listener.local_addr()?.port();
    let mut broker = Broker {
        dir: dir.clone(),
        topics: Vec::new(),
        by_name: HashMap::new(),
        txns: HashMap::new(),
        offsets: HashMap::new(),
        pending_offsets: HashMap::new(),
        next_pid: -1,
        pid_limit: 0,
        port: port as i32,
        features_epoch: now_ms(),
        wrote: false,
    };
    broker.open_topic("__transaction_state", INTERNAL_PARTITIONS, [0; 16]);
    broker.open_topic("__consumer_offsets", INTERNAL_PARTITIONS, [0; 16]);
    if let Err(refusal) = recovery::recover(&mut broker) {
        eprintln!("kcoord-native: {refusal}");
        std::process::exit(1);
    }
    if broker.wrote && fsync {
        // what recovery wrote (completed transactions) durable before anything is answered
        if unsafe { libc::syncfs(File::open(&dir)?.as_raw_fd()) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    println!("127.0.0.1:{port}");
    io::stdout().flush()?;

    let mut conns: HashMap<usize, Conn> = HashMap::new();
    let mut next_token = 0usize;
    let mut waiting: Vec<usize> = Vec::new(); // connections holding answers for a round
    let mut events = Events::with_capacity(256);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let mut touched: Vec<usize> = Vec::new();
        for event in events.iter() {
            match event.token() {
                LISTENER => loop {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            let _ = stream.set_nodelay(true);
                            let token = next_token;
                            next_token += 1;
                            poll.registry()
                                .register(&mut stream, Token(token), Interest::READABLE)?;
                            conns.insert(
                                token,
                                Conn {
                                    stream,
                                    inbuf: Vec::new(),
                                    out: Vec::new(),
                                    held: VecDeque::new(),
                                    want_write: false,
                                },
                            );
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                },
                WAKER => {
                    if let Some(rs) = rounds.as_mut() {
                        while rs.done.try_recv().is_ok() {
                            rs.durable += 1;
                        }
                        waiting.retain(|&token| {
                            let Some(c) = conns.get_mut(&token) else { return false };
                            c.release(rs.durable);
                            touched.push(token);
                            !c.held.is_empty()
                        });
                    }
                }
                Token(token) => {
                    let Some(c) = conns.get_mut(&token) else { continue };
                    let mut closed = false;
                    if event.is_readable() {
                        loop {
                            match c.stream.read(&mut buf) {
                                Ok(0) => {
                                    closed = true;
                                    break;
                                }
                                Ok(n) => c.inbuf.extend_from_slice(&buf[..n]),
                                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                                Err(_) => {
                                    closed = true;
                                    break;
                                }
                            }
                        }
                        let mut at = 0;
                        while c.inbuf.len() - at >= 4 {
                            let size = i32::from_be_bytes(c.inbuf[at..at + 4].try_into().unwrap());
                            if !(0..=100 << 20).contains(&size) {
                                eprintln!("kcoord-native: a frame of {size} bytes; closing");
                                closed = true;
                                break;
                            }
                            let end = at + 4 + size as usize;
                            if c.inbuf.len() < end {
                                break;
                            }
                            match broker.handle(&c.inbuf[at + 4..end]) {
                                Ok(answer) => match rounds.as_mut() {
                                    Some(rs) if broker.wrote || !c.held.is_empty() => {
                                        if broker.wrote {
                                            rs.dirty = true;
                                        }
                                        let round = if broker.wrote { rs.started + 1 } else { 0 };
                                        let round = round.max(c.held.back().map_or(0, |h| h.0));
                                        c.held.push_back((round, answer));
                                        if !waiting.contains(&token) {
                                            waiting.push(token);
                                        }
                                    }
                                    _ => c.out.extend_from_slice(&answer),
                                },
                                Err(why) => {
                                    eprintln!("kcoord-native: {why}; closing the connection");
                                    closed = true;
                                    break;
                                }
                            }
                            at = end;
                        }
                        c.inbuf.drain(..at);
                    }
                    if closed {
                        let mut c = conns.remove(&token).unwrap();
                        let _ = poll.registry().deregister(&mut c.stream);
                        continue;
                    }
                    touched.push(token);
                }
            }
        }
        if let Some(rs) = rounds.as_mut() {
            if rs.dirty && rs.started == rs.durable {
                rs.started += 1;
                rs.dirty = false;
                rs.go.send(()).expect("the sync thread is gone");
            }
        }
        for token in touched {
            let Some(c) = conns.get_mut(&token) else { continue };
            if !c.flush() {
                let mut c = conns.remove(&token).unwrap();
                let _ = poll.registry().deregister(&mut c.stream);
                continue;
            }
            let want = !c.out.is_empty();
            if want != c.want_write {
                c.want_write = want;
                let interest = if want {
                    Interest::READABLE | Interest::WRITABLE
                } else {
                    Interest::READABLE
                };
                poll.registry().reregister(&mut c.stream, Token(token), interest)?;
            }
        }
    }
}
