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
//! Modules: main.rs (the broker's state, topics and partitions, the event loop, group commit), wire.rs (which requests
//! are served, refusals), handlers.rs (`Broker::handle` and each API's handler), txn.rs (the transaction
//! coordinator's records, producer ids, decisions applied, markers), logs.rs (record batches, a partition's log
//! file), recovery.rs (the start from a data directory).
//!
//! Usage: kcoord-native DATA_DIR os|fsync  — prints "127.0.0.1:PORT" once listening.

pub(crate) use std::collections::{HashMap, VecDeque};
pub(crate) use std::fs::{File, OpenOptions};
pub(crate) use std::io::{self, ErrorKind, Read, Write};
pub(crate) use std::ops::RangeInclusive;
pub(crate) use std::os::fd::AsRawFd;
pub(crate) use std::path::{Path, PathBuf};
pub(crate) use std::sync::mpsc;
pub(crate) use std::sync::Arc;
pub(crate) use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) use mio::net::{TcpListener, TcpStream};
pub(crate) use mio::{Events, Interest, Poll, Token, Waker};

// the spec's tables and Kafka's error codes, generated by `kcoord gen` (impl/_generated/rust/; rustfmt leaves them
// as generated)
#[rustfmt::skip]
#[path = "../../../_generated/rust/errors.rs"]
mod errors;
#[rustfmt::skip]
#[path = "../../../_generated/rust/machines.rs"]
mod machines;
mod recovery;

pub(crate) use errors::{
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

pub(crate) use kcoord_wire::codec::{put_i16, put_i32, put_i64, put_i8, put_string, put_uvarint};
pub(crate) use kcoord_wire::generated::add_offsets_to_txn::{
    request::AddOffsetsToTxnRequest, response::AddOffsetsToTxnResponse,
};
pub(crate) use kcoord_wire::generated::add_partitions_to_txn::request::AddPartitionsToTxnRequest;
pub(crate) use kcoord_wire::generated::add_partitions_to_txn::response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};
pub(crate) use kcoord_wire::generated::api_versions::request::ApiVersionsRequest;
pub(crate) use kcoord_wire::generated::api_versions::response::{
    ApiVersion, ApiVersionsResponse, FinalizedFeatureKey, SupportedFeatureKey,
};
pub(crate) use kcoord_wire::generated::create_topics::request::CreateTopicsRequest;
pub(crate) use kcoord_wire::generated::create_topics::response::{CreatableTopicResult, CreateTopicsResponse};
pub(crate) use kcoord_wire::generated::end_txn::{request::EndTxnRequest, response::EndTxnResponse};
pub(crate) use kcoord_wire::generated::find_coordinator::response::FindCoordinatorResponse;
pub(crate) use kcoord_wire::generated::header::{request_header::RequestHeader, response_header::ResponseHeader};
pub(crate) use kcoord_wire::generated::init_producer_id::{
    request::InitProducerIdRequest, response::InitProducerIdResponse,
};
pub(crate) use kcoord_wire::generated::metadata::request::MetadataRequest;
pub(crate) use kcoord_wire::generated::metadata::response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
pub(crate) use kcoord_wire::generated::produce::request::{PartitionProduceData, ProduceRequest};
pub(crate) use kcoord_wire::generated::produce::response::{
    PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
pub(crate) use kcoord_wire::generated::txn_offset_commit::request::TxnOffsetCommitRequest;
pub(crate) use kcoord_wire::generated::txn_offset_commit::response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
pub(crate) use kcoord_wire::generated::{request_header_version, response_header_version};
pub(crate) use kcoord_wire::{Reader, Request, Response, WireError};

mod handlers;
mod logs;
mod txn;
mod wire;

use logs::*;
use wire::*;

// ------------------------------------------------------------------------------------------------ coordinators

pub(crate) use machines::transaction;
pub(crate) use transaction::{args, Decision, Instance, Kind, State, TxnResult};

/// transaction.max.timeout.ms's default (15 minutes), as kcoord serve's
const MAX_TIMEOUT_MS: i64 = 900_000;
/// ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE, as kcoord's allocator (impl/storage/producer_ids.py)
const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// Kafka's TransactionState ids, as the transaction log stores them.
pub(crate) const TRANSACTION_STATUS: [(State, i8); 8] = [
    (State::Empty, 0),
    (State::Ongoing, 1),
    (State::PrepareCommit, 2),
    (State::PrepareAbort, 3),
    (State::CompleteCommit, 4),
    (State::CompleteAbort, 5),
    (State::Dead, 6),
    (State::PrepareEpochFence, 7),
];

/// The state's TransactionState id, as the transaction log stores it.
fn status(state: State) -> i8 {
    TRANSACTION_STATUS
        .iter()
        .find(|&&(s, _)| s == state)
        .map(|&(_, id)| id)
        .expect("every state has an id")
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
