//! A measuring prototype for issue 31 (not part of kcoord): the requests of `bench_clients.py`'s two transaction
//! workloads — `txn2` (Transactions V2, as Kafka 4.0's Java client sends them) and `txn` (V1) — served by a compiled,
//! single-threaded server, so that `bench_server.py --targets kcoord,compiled` measures what a server written in a
//! compiled language reaches on this machine with the same clients — the design the eighteenth and nineteenth
//! sessions named and did not measure.
//!
//! Its transaction coordinator's decisions are the spec's: the Transaction machine's table is generated from
//! spec/transaction.sm into Rust at build time (`gen_rust.py`, run by build.rs; `check-tables` holds it equal to
//! kcoord's Python table on random cases), and every InitProducerId, AddPartitions (V1's AddPartitionsToTxn and
//! AddOffsetsToTxn, V2's implicit adds), VerifyPartition (V1's Produce and TxnOffsetCommit), EndTxnV1, EndTxnV2,
//! FenceAbort and CompleteTxn goes through it: the row's answer is the request's, a transition's post-state the
//! instance, its `writes` the transaction-log record (the fields `persist TransactionLogValue` lists).
//!
//! It does the same durable work per committed transaction as `kcoord serve`: every append is a Kafka v2 record batch
//! (its CRC-32C computed; a Produce batch's CRC checked) written with one `write` to its partition's log file; the
//! transaction log gets the Ongoing record of each add, PrepareCommit and CompleteCommit; the offsets partition the
//! transactional commit; every partition of the transaction its COMMIT marker — 10 appends for either workload's
//! transaction, as kcoord. With `fsync` durability an answer waits for the group-commit round covering its
//! writes (one syncfs of the data directory's file system per round, on a thread of its own, rounds back to back, a
//! lone writer never waiting for company), as kcoord's default `--fsync-method auto`; with `os` it is sent at once.
//!
//! What it does not have, against kcoord: the other machines' tables (the partition's producer checks, the offsets
//! bookkeeping and the error translations are written by hand here), groups, fetch, recovery, metrics, traces,
//! timeouts, the record checks kcoord runs only when told, and every API the workloads do not send (CreateTopics v4,
//! FindCoordinator v3, InitProducerId v4, Produce v8 and v12, AddPartitionsToTxn v3, AddOffsetsToTxn v3,
//! TxnOffsetCommit v3 and v5, EndTxn v3 and v5 are served; any other request closes its connection). Its figures
//! are a bound for the compiled design, not a second implementation.
//!
//! Usage: kcoord-compiled-proto DATA_DIR os|fsync  — prints "127.0.0.1:PORT" once listening.

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);

const NONE: i16 = 0;
const CORRUPT_MESSAGE: i16 = 2;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const TOPIC_ALREADY_EXISTS: i16 = 36;
const INVALID_REQUEST: i16 = 42;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const KAFKA_STORAGE_ERROR: i16 = 56;
const NOT_ENOUGH_REPLICAS: i16 = 19;
const OPERATION_NOT_ATTEMPTED: i16 = 55;
const INVALID_TXN_STATE: i16 = 48;
const TRANSACTION_ABORTABLE: i16 = 120;

const TXN_TOPIC: usize = 0;
const OFFSETS_TOPIC: usize = 1;
const INTERNAL_PARTITIONS: i32 = 50;
const NODE_ID: i32 = 0;

// ------------------------------------------------------------------------------------------------ the wire

type R<T> = Result<T, &'static str>;

struct Rd<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        if self.b.len() - self.p < n {
            return Err("a field runs past the end of the request");
        }
        let s = &self.b[self.p..self.p + n];
        self.p += n;
        Ok(s)
    }
    fn i8(&mut self) -> R<i8> {
        Ok(self.take(1)?[0] as i8)
    }
    fn i16(&mut self) -> R<i16> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> R<i32> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> R<i64> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn uvarint(&mut self) -> R<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err("a varint longer than 10 bytes")
    }
    /// A compact array's or string's length (None: null).
    fn compact_len(&mut self) -> R<Option<usize>> {
        let n = self.uvarint()?;
        if n == 0 {
            return Ok(None);
        }
        let n = (n - 1) as usize;
        if n > self.b.len() - self.p {
            return Err("a length claims more than the request holds");
        }
        Ok(Some(n))
    }
    fn compact_nbytes(&mut self) -> R<Option<&'a [u8]>> {
        match self.compact_len()? {
            None => Ok(None),
            Some(n) => Ok(Some(self.take(n)?)),
        }
    }
    fn compact_str(&mut self) -> R<&'a [u8]> {
        self.compact_nbytes()?.ok_or("null where a string is required")
    }
    fn compact_array(&mut self) -> R<usize> {
        self.compact_len()?.ok_or("null where an array is required")
    }
    fn nstr16(&mut self) -> R<Option<&'a [u8]>> {
        let n = self.i16()?;
        if n < 0 {
            return Ok(None);
        }
        Ok(Some(self.take(n as usize)?))
    }
    fn str16(&mut self) -> R<&'a [u8]> {
        self.nstr16()?.ok_or("null where a string is required")
    }
    fn array32(&mut self) -> R<usize> {
        let n = self.i32()?;
        if n < 0 || n as usize > self.b.len() - self.p {
            return Err("a bad array length");
        }
        Ok(n as usize)
    }
    /// A string in the request's encoding (`flex`: compact) — and the same for the helpers below.
    fn string(&mut self, flex: bool) -> R<&'a [u8]> {
        if flex {
            self.compact_str()
        } else {
            self.str16()
        }
    }
    fn nullable_string(&mut self, flex: bool) -> R<Option<&'a [u8]>> {
        if flex {
            self.compact_nbytes()
        } else {
            self.nstr16()
        }
    }
    fn nullable_bytes(&mut self, flex: bool) -> R<Option<&'a [u8]>> {
        if flex {
            return self.compact_nbytes();
        }
        let n = self.i32()?;
        if n < 0 {
            Ok(None)
        } else {
            Ok(Some(self.take(n as usize)?))
        }
    }
    fn array(&mut self, flex: bool) -> R<usize> {
        if flex {
            self.compact_array()
        } else {
            self.array32()
        }
    }
    fn tags(&mut self, flex: bool) -> R<()> {
        if flex {
            self.tagged()
        } else {
            Ok(())
        }
    }
    fn tagged(&mut self) -> R<()> {
        let n = self.uvarint()?;
        for _ in 0..n {
            self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}

trait Wr {
    fn i8(&mut self, v: i8);
    fn i16(&mut self, v: i16);
    fn i32(&mut self, v: i32);
    fn i64(&mut self, v: i64);
    fn uvarint(&mut self, v: u64);
    fn compact_str(&mut self, s: &[u8]);
    fn str16(&mut self, s: &[u8]);
    /// In the answer's encoding (`flex`: compact): a string, an array's length, a null string, no tagged fields.
    fn string(&mut self, flex: bool, s: &[u8]) {
        if flex {
            self.compact_str(s)
        } else {
            self.str16(s)
        }
    }
    fn array(&mut self, flex: bool, n: usize) {
        if flex {
            self.uvarint(n as u64 + 1)
        } else {
            self.i32(n as i32)
        }
    }
    fn null_string(&mut self, flex: bool) {
        if flex {
            self.uvarint(0)
        } else {
            self.i16(-1)
        }
    }
    fn no_tags(&mut self, flex: bool) {
        if flex {
            self.uvarint(0);
        }
    }
}

impl Wr for Vec<u8> {
    fn i8(&mut self, v: i8) {
        self.push(v as u8);
    }
    fn i16(&mut self, v: i16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.push(v as u8);
    }
    fn compact_str(&mut self, s: &[u8]) {
        self.uvarint(s.len() as u64 + 1);
        self.extend_from_slice(s);
    }
    fn str16(&mut self, s: &[u8]) {
        self.i16(s.len() as i16);
        self.extend_from_slice(s);
    }
}

/// Whether (api key, version) uses the flexible request header (v2) and response header (v1).
fn flexible(api: i16, version: i16) -> bool {
    match api {
        0 => version >= 9,  // Produce
        24 => version >= 3, // AddPartitionsToTxn
        25 => version >= 3, // AddOffsetsToTxn
        10 => version >= 3, // FindCoordinator
        19 => version >= 5, // CreateTopics
        22 => version >= 2, // InitProducerId
        26 => version >= 3, // EndTxn
        28 => version >= 3, // TxnOffsetCommit
        _ => true,
    }
}

// ------------------------------------------------------------------------------------------------ record batches

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn varint(out: &mut Vec<u8>, v: i64) {
    out.uvarint(zigzag(v));
}

fn varint_len(v: i64) -> usize {
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
fn batch(records: &[(Option<&[u8]>, Option<&[u8]>)], ts: i64, pid: i64, epoch: i16, seq: i32, attrs: i16) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(61 + records.len() * 64);
    out.resize(61, 0);
    for (delta, (key, value)) in records.iter().enumerate() {
        let field_len = |f: &Option<&[u8]>| match f {
            None => 1,
            Some(b) => varint_len(b.len() as i64) + b.len(),
        };
        let body_len = 2 + varint_len(delta as i64) + field_len(key) + field_len(value) + 1;
        varint(&mut out, body_len as i64);
        out.push(0);
        out.push(0);
        varint(&mut out, delta as i64);
        for f in [key, value] {
            match f {
                None => varint(&mut out, -1),
                Some(b) => {
                    varint(&mut out, b.len() as i64);
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
            eprintln!(
                "kcoord-compiled-proto: {} at byte {}: {e}",
                self.path.display(),
                self.position
            );
            return Err(KAFKA_STORAGE_ERROR);
        }
        self.position += b.len() as u64;
        self.next += count as i64;
        Ok(base)
    }
}

struct Partition {
    log: Option<Log>,
    producers: HashMap<i64, (i16, i32)>, // producer id -> (epoch, last sequence)
}

struct Topic {
    name: Vec<u8>,
    partitions: Vec<Partition>,
}

// ------------------------------------------------------------------------------------------------ coordinators

#[allow(
    non_camel_case_types,
    non_snake_case,
    clippy::all,
    unused_parens,
    dead_code,
    unused_variables
)]
mod transaction {
    include!(concat!(env!("OUT_DIR"), "/transaction.rs"));
}

use transaction::{args, Decision, Instance, Kind, State, TxnResult};

const PRODUCER_FENCED: i16 = 90;
/// transaction.max.timeout.ms's default (15 minutes), as kcoord serve's
const MAX_TIMEOUT_MS: i64 = 900_000;

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
    eprintln!("kcoord-compiled-proto: Transaction.{event}: {why}");
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

/// An offset's key: (group, topic, partition).
type OffsetKey = (Vec<u8>, Vec<u8>, i32);

fn java_hash(s: &[u8]) -> i32 {
    let mut h: i32 = 0;
    match std::str::from_utf8(s) {
        Ok(text) => {
            for unit in text.encode_utf16() {
                h = h.wrapping_mul(31).wrapping_add(unit as i32);
            }
        }
        Err(_) => {
            for &b in s {
                h = h.wrapping_mul(31).wrapping_add(b as i32);
            }
        }
    }
    h
}

/// Kafka's `Utils.abs(key.hashCode) % partitions` (MIN_VALUE → 0).
fn partition_for(key: &[u8]) -> i32 {
    let h = java_hash(key);
    (if h == i32::MIN { 0 } else { h.abs() }) % INTERNAL_PARTITIONS
}

/// The answer TxnOffsetCommit (v3+) and AddPartitionsToTxn v3 both give: no throttle, then each topic's partitions
/// with their error codes.
fn partition_answers(out: &mut Vec<u8>, topics: &[(&[u8], Vec<(i32, i16)>)]) {
    out.i32(0);
    out.uvarint(topics.len() as u64 + 1);
    for (name, parts) in topics {
        out.compact_str(name);
        out.uvarint(parts.len() as u64 + 1);
        for &(index, code) in parts {
            out.i32(index);
            out.i16(code);
            out.push(0);
        }
        out.push(0);
    }
    out.push(0);
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
    by_name: HashMap<Vec<u8>, usize>,
    txns: HashMap<Vec<u8>, Instance>, // the Transaction machine's instances, by transactional id
    offsets: HashMap<OffsetKey, i64>, // committed offsets
    pending_offsets: HashMap<i64, Vec<(OffsetKey, i64)>>, // by producer id: its transaction's, until its marker
    next_pid: i64,
    port: i32,
    wrote: bool, // whether the request being handled appended anything (fsync: its answer waits for a round)
}

impl Broker {
    fn create_topic(&mut self, name: &[u8], partitions: i32) -> i16 {
        if self.by_name.contains_key(name) {
            return TOPIC_ALREADY_EXISTS;
        }
        if partitions <= 0 || name.is_empty() || name.contains(&b'/') {
            return INVALID_REQUEST;
        }
        self.by_name.insert(name.to_vec(), self.topics.len());
        self.topics.push(Topic {
            name: name.to_vec(),
            partitions: (0..partitions)
                .map(|_| Partition {
                    log: None,
                    producers: HashMap::new(),
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
                    eprintln!("kcoord-compiled-proto: {}: {e}", dir.display());
                    return Err(KAFKA_STORAGE_ERROR);
                }
            }
        }
        Ok(self.topics[topic].partitions[partition as usize].log.as_mut().unwrap())
    }

    fn append(&mut self, topic: usize, partition: i32, b: &mut [u8], count: i32) -> Result<i64, i16> {
        self.wrote = true;
        self.log(topic, partition)?.append(b, count)
    }

    /// A partition's name, in the spec's sets and as its log directory's: `topic-N`.
    fn partition_name(&self, t: usize, p: i32) -> String {
        format!("{}-{}", String::from_utf8_lossy(&self.topics[t].name), p)
    }

    /// A partition's name in the spec (`topic-N`) as (topic index, partition), if it is one of ours.
    fn partition_of(&self, name: &str) -> Option<(usize, i32)> {
        let (topic, partition) = split_partition(name)?;
        let t = *self.by_name.get(topic.as_bytes())?;
        (partition >= 0 && (partition as usize) < self.topics[t].partitions.len()).then_some((t, partition))
    }

    /// The instance's record in its transaction-log partition (TransactionLogKey v0, TransactionLogValue v1: the
    /// fields `persist TransactionLogValue` lists, the tagged ones written when not at their defaults).
    fn write_txn(&mut self, tid: &[u8], ts: i64) -> Result<(), i16> {
        let txn = &self.txns[tid];
        let mut key = Vec::with_capacity(4 + tid.len());
        key.i16(0);
        key.str16(tid);
        let mut value = Vec::with_capacity(64);
        value.i16(1);
        value.i64(txn.producer_id);
        value.i16(txn.producer_epoch as i16);
        value.i32(txn.txn_timeout_ms as i32);
        value.i8(status(txn.state));
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
        value.uvarint(by_topic.len() as u64 + 1);
        for (topic, ps) in &by_topic {
            value.compact_str(topic.as_bytes());
            value.uvarint(ps.len() as u64 + 1);
            for p in ps {
                value.i32(*p);
            }
            value.push(0);
        }
        value.i64(ts);
        value.i64(txn.txn_start_timestamp_ms);
        let tags: Vec<(u64, Vec<u8>)> = [
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
        value.uvarint(tags.len() as u64);
        for (tag, bytes) in tags {
            value.uvarint(tag);
            value.uvarint(bytes.len() as u64);
            value.extend_from_slice(&bytes);
        }
        let mut b = batch(&[(Some(&key), Some(&value))], ts, -1, -1, -1, 0);
        self.append(TXN_TOPIC, partition_for(tid), &mut b, 1).map(|_| ())
    }

    /// A decision taken: a transition's post-state becomes the instance (its record written when the row says so; a
    /// fresh producer id the post-state holds is taken), a rejection changes nothing. The row's answer.
    fn apply(&mut self, tid: &[u8], decision: Decision, fresh_pid: Option<i64>, ts: i64) -> Result<i16, i16> {
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
    fn finish(&mut self, tid: &[u8], ts: i64) -> Result<(), i16> {
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
        mkey.i16(0);
        mkey.i16(if commit { 1 } else { 0 });
        let mut mvalue = Vec::with_capacity(6);
        mvalue.i16(0);
        mvalue.i32(0);
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
    fn add(&mut self, tid: &[u8], pid: i64, epoch: i16, parts: &[(usize, i32)], txn_version: i64, ts: i64) -> i16 {
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
    fn verify(&mut self, tid: &[u8], pid: i64, epoch: i16, (t, p): (usize, i32)) -> i16 {
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

    fn create_topics(&mut self, r: &mut Rd, out: &mut Vec<u8>) -> R<()> {
        let n = r.array32()?;
        let mut results = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.str16()?.to_vec();
            let partitions = r.i32()?;
            r.i16()?;
            for _ in 0..r.array32()? {
                r.i32()?;
                for _ in 0..r.array32()? {
                    r.i32()?;
                }
            }
            for _ in 0..r.array32()? {
                r.str16()?;
                r.nstr16()?;
            }
            let code = self.create_topic(&name, partitions);
            results.push((name, code));
        }
        r.i32()?;
        r.i8()?;
        out.i32(0);
        out.i32(results.len() as i32);
        for (name, code) in results {
            out.str16(&name);
            out.i16(code);
            out.i16(-1);
        }
        Ok(())
    }

    fn find_coordinator(&mut self, r: &mut Rd, out: &mut Vec<u8>) -> R<()> {
        r.compact_str()?;
        r.i8()?;
        r.tagged()?;
        out.i32(0);
        out.i16(NONE);
        out.uvarint(0);
        out.i32(NODE_ID);
        out.compact_str(b"127.0.0.1");
        out.i32(self.port);
        out.push(0);
        Ok(())
    }

    fn init_producer_id(&mut self, r: &mut Rd, out: &mut Vec<u8>) -> R<()> {
        let tid = r.compact_nbytes()?.map(|t| t.to_vec());
        let timeout_ms = r.i32()?;
        let expected_pid = r.i64()?;
        let expected_epoch = r.i16()?;
        r.tagged()?;
        let ts = now_ms();
        let Some(tid) = tid else {
            self.next_pid += 1;
            return self.init_answer(out, NONE, self.next_pid, 0);
        };
        let instance = self
            .txns
            .entry(tid.clone())
            .or_insert_with(|| Instance::fresh(String::from_utf8_lossy(&tid).into_owned()));
        let fresh = self.next_pid + 1;
        let a = args::InitProducerId {
            expected_producer_id: expected_pid,
            expected_epoch: expected_epoch as i64,
            timeout_ms: timeout_ms as i64,
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
            self.init_answer(out, code, t.producer_id, t.producer_epoch as i16)
        } else {
            self.init_answer(out, code, -1, -1)
        }
    }

    fn init_answer(&self, out: &mut Vec<u8>, code: i16, pid: i64, epoch: i16) -> R<()> {
        out.i32(0);
        out.i16(code);
        out.i64(pid);
        out.i16(epoch);
        out.push(0);
        Ok(())
    }

    /// Produce v8 (Transactions V1: each transactional partition verified) or v12 (V2: the leader adds them).
    fn produce(&mut self, r: &mut Rd, out: &mut Vec<u8>, v2: bool) -> R<()> {
        let flex = v2;
        let tid = r.nullable_string(flex)?;
        r.i16()?;
        r.i32()?;
        // (topic index or None, name, [(partition, batch)])
        let mut topics: Vec<(Option<usize>, &[u8], Vec<(i32, Option<&[u8]>)>)> = Vec::new();
        for _ in 0..r.array(flex)? {
            let name = r.string(flex)?;
            let mut parts = Vec::new();
            for _ in 0..r.array(flex)? {
                let index = r.i32()?;
                let records = r.nullable_bytes(flex)?;
                r.tags(flex)?;
                parts.push((index, records));
            }
            r.tags(flex)?;
            let t = self.by_name.get(name).copied();
            topics.push((t, name, parts));
        }
        r.tags(flex)?;
        let ts = now_ms();
        // the batches' heads, and the partitions the transaction must hold (V2: the leader adds them)
        let mut heads: Vec<Vec<Result<BatchHead, i16>>> = Vec::with_capacity(topics.len());
        let mut adds: Vec<(usize, i32)> = Vec::new();
        let mut txn_key: Option<(i64, i16)> = None;
        for (t, _, parts) in &topics {
            let mut hs = Vec::with_capacity(parts.len());
            for (index, records) in parts {
                let head = match (t, records) {
                    (Some(t), Some(b)) if *index >= 0 && (*index as usize) < self.topics[*t].partitions.len() => {
                        batch_head(b).ok_or(CORRUPT_MESSAGE).map(|h| {
                            if h.transactional {
                                adds.push((*t, *index));
                                txn_key = Some((h.pid, h.epoch));
                            }
                            h
                        })
                    }
                    (Some(_), None) => Err(CORRUPT_MESSAGE),
                    _ => Err(UNKNOWN_TOPIC_OR_PARTITION),
                };
                hs.push(head);
            }
            heads.push(hs);
        }
        // the transaction's answer per transactional partition: V2 one add of them all, V1 each one verified
        // (and the message kcoord answers with it, as Kafka 4.0.2's ReplicaManager)
        let mut txn_errors: HashMap<(usize, i32), (i16, Option<String>)> = HashMap::new();
        if let Some((pid, epoch)) = txn_key {
            match tid {
                None => txn_errors.extend(adds.iter().map(|&tp| (tp, (INVALID_REQUEST, None)))),
                Some(tid) if v2 => {
                    let code = verification_answer(self.add(tid, pid, epoch, &adds, 2, ts));
                    txn_errors.extend(adds.iter().map(|&tp| (tp, (code, None))));
                }
                Some(tid) => {
                    for &tp in &adds {
                        let answer = match self.verify(tid, pid, epoch, tp) {
                            CONCURRENT_TRANSACTIONS => (
                                NOT_ENOUGH_REPLICAS,
                                Some(
                                    "unable to verify the partition has been added to the transaction: \
                                 CONCURRENT_TRANSACTIONS"
                                        .to_string(),
                                ),
                            ), // inconclusive: not an add
                            // Produce up to v10, refused before the log
                            TRANSACTION_ABORTABLE => (
                                INVALID_TXN_STATE,
                                Some("Partition was not added to the transaction".to_string()),
                            ),
                            code => (verification_answer(code), None),
                        };
                        txn_errors.insert(tp, answer);
                    }
                }
            }
        }
        out.array(flex, topics.len());
        for ((t, name, parts), hs) in topics.iter().zip(heads) {
            out.string(flex, name);
            out.array(flex, parts.len());
            for ((index, records), head) in parts.iter().zip(hs) {
                // an error and the log start offset answered with it: -1 before the log (Kafka's
                // UNKNOWN_LOG_APPEND_INFO: the topic, the batch, the transaction's verification), the log's own
                // (0 here: nothing is ever deleted) for what the log's producer state refuses
                let mut message: Option<String> = None;
                let result = head.map_err(|code| (code, -1)).and_then(|h| {
                    let (t, p) = (t.unwrap(), *index);
                    if h.transactional {
                        let (code, text) = txn_errors[&(t, p)].clone();
                        if code != NONE {
                            message = text;
                            return Err((code, -1));
                        }
                    }
                    let part = &mut self.topics[t].partitions[p as usize];
                    match part.producers.get(&h.pid) {
                        Some(&(e, _)) if h.epoch < e => return Err((INVALID_PRODUCER_EPOCH, 0)),
                        Some(&(e, last)) if h.epoch == e && h.seq != last.wrapping_add(1) => {
                            return Err((OUT_OF_ORDER_SEQUENCE_NUMBER, 0))
                        }
                        Some(&(e, _)) if h.epoch > e && h.seq != 0 => return Err((OUT_OF_ORDER_SEQUENCE_NUMBER, 0)),
                        _ => {}
                    }
                    part.producers.insert(h.pid, (h.epoch, h.seq + h.count - 1));
                    let mut b = records.unwrap().to_vec();
                    self.append(t, p, &mut b, h.count).map_err(|code| (code, -1))
                });
                out.i32(*index);
                match result {
                    Ok(base) => {
                        out.i16(NONE);
                        out.i64(base);
                        out.i64(-1); // log append time
                        out.i64(0); // log start offset
                    }
                    Err((code, log_start)) => {
                        out.i16(code);
                        out.i64(-1);
                        out.i64(-1);
                        out.i64(log_start);
                    }
                }
                out.array(flex, 0); // no record errors
                match &message {
                    Some(text) => out.string(flex, text.as_bytes()),
                    None => out.null_string(flex),
                }
                out.no_tags(flex);
            }
            out.no_tags(flex);
        }
        out.i32(0);
        out.no_tags(flex);
        Ok(())
    }

    /// TxnOffsetCommit v3 (Transactions V1: the offsets partition verified) or v5 (V2: added).
    fn txn_offset_commit(&mut self, r: &mut Rd, out: &mut Vec<u8>, v2: bool) -> R<()> {
        let tid = r.compact_str()?;
        let group = r.compact_str()?;
        let pid = r.i64()?;
        let epoch = r.i16()?;
        r.i32()?;
        r.compact_str()?;
        r.compact_nbytes()?;
        let mut topics: Vec<(&[u8], Vec<(i32, i64, i32, Option<&[u8]>)>)> = Vec::new();
        for _ in 0..r.compact_array()? {
            let name = r.compact_str()?;
            let mut parts = Vec::new();
            for _ in 0..r.compact_array()? {
                let index = r.i32()?;
                let offset = r.i64()?;
                let leader_epoch = r.i32()?;
                let metadata = r.compact_nbytes()?;
                r.tagged()?;
                parts.push((index, offset, leader_epoch, metadata));
            }
            r.tagged()?;
            topics.push((name, parts));
        }
        r.tagged()?;
        let ts = now_ms();
        let offsets_partition = partition_for(group);
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
            // OffsetCommitKey v1 and OffsetCommitValue v3 per partition, one transactional batch
            let mut keys_values: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for (name, parts) in &topics {
                for (index, offset, leader_epoch, metadata) in parts {
                    let mut key = Vec::with_capacity(8 + group.len() + name.len());
                    key.i16(1);
                    key.str16(group);
                    key.str16(name);
                    key.i32(*index);
                    let mut value = Vec::with_capacity(32);
                    value.i16(3);
                    value.i64(*offset);
                    value.i32(*leader_epoch);
                    value.str16(metadata.unwrap_or(b""));
                    value.i64(ts);
                    keys_values.push((key, value));
                }
            }
            if !keys_values.is_empty() {
                let records: Vec<(Option<&[u8]>, Option<&[u8]>)> = keys_values
                    .iter()
                    .map(|(k, v)| (Some(k.as_slice()), Some(v.as_slice())))
                    .collect();
                let mut b = batch(&records, ts, pid, epoch, -1, TRANSACTIONAL);
                match self.append(OFFSETS_TOPIC, offsets_partition, &mut b, records.len() as i32) {
                    Ok(_) => {
                        let pending = self.pending_offsets.entry(pid).or_default();
                        for (name, parts) in &topics {
                            for (index, offset, _, _) in parts {
                                pending.push(((group.to_vec(), name.to_vec(), *index), *offset));
                            }
                        }
                    }
                    Err(e) => code = e,
                }
            }
        }
        let answers: Vec<(&[u8], Vec<(i32, i16)>)> = topics
            .iter()
            .map(|(name, parts)| (*name, parts.iter().map(|p| (p.0, code)).collect()))
            .collect();
        partition_answers(out, &answers);
        Ok(())
    }

    /// AddPartitionsToTxn v3 (Transactions V1): the partitions added (AddPartitions, txn_version 0), every partition
    /// answered with the row's answer; an unknown one makes the others OPERATION_NOT_ATTEMPTED.
    fn add_partitions_to_txn(&mut self, r: &mut Rd, out: &mut Vec<u8>) -> R<()> {
        let tid = r.compact_str()?;
        let pid = r.i64()?;
        let epoch = r.i16()?;
        let mut topics: Vec<(&[u8], Vec<i32>)> = Vec::new();
        for _ in 0..r.compact_array()? {
            let name = r.compact_str()?;
            let mut parts = Vec::new();
            for _ in 0..r.compact_array()? {
                parts.push(r.i32()?);
            }
            r.tagged()?;
            topics.push((name, parts));
        }
        r.tagged()?;
        // each partition as (topic index, partition) when it is one of ours
        let known: Vec<Vec<Option<(usize, i32)>>> = topics
            .iter()
            .map(|(name, ps)| {
                let t = self.by_name.get(*name).copied();
                ps.iter()
                    .map(|&p| {
                        t.filter(|&t| p >= 0 && (p as usize) < self.topics[t].partitions.len())
                            .map(|t| (t, p))
                    })
                    .collect()
            })
            .collect();
        let code = match known.iter().flatten().copied().collect::<Option<Vec<(usize, i32)>>>() {
            Some(parts) => self.add(tid, pid, epoch, &parts, 0, now_ms()),
            None => OPERATION_NOT_ATTEMPTED,
        };
        let answers: Vec<(&[u8], Vec<(i32, i16)>)> = topics
            .iter()
            .zip(&known)
            .map(|((name, ps), ks)| {
                let codes = ps
                    .iter()
                    .zip(ks)
                    .map(|(&p, k)| (p, if k.is_some() { code } else { UNKNOWN_TOPIC_OR_PARTITION }));
                (*name, codes.collect())
            })
            .collect();
        partition_answers(out, &answers);
        Ok(())
    }

    /// AddOffsetsToTxn v3: the group's offsets partition added (AddPartitions, txn_version 0).
    fn add_offsets_to_txn(&mut self, r: &mut Rd, out: &mut Vec<u8>) -> R<()> {
        let tid = r.compact_str()?;
        let pid = r.i64()?;
        let epoch = r.i16()?;
        let group = r.compact_str()?;
        r.tagged()?;
        let code = self.add(tid, pid, epoch, &[(OFFSETS_TOPIC, partition_for(group))], 0, now_ms());
        out.i32(0);
        out.i16(code);
        out.push(0);
        Ok(())
    }

    /// EndTxn v3 (Transactions V1: EndTxnV1, no epoch bump, no producer id in the answer) or v5 (V2: EndTxnV2, the
    /// epoch bumped, the answer carrying the producer id and epoch to use next).
    fn end_txn(&mut self, r: &mut Rd, out: &mut Vec<u8>, v2: bool) -> R<()> {
        let tid = r.compact_str()?;
        let pid = r.i64()?;
        let epoch = r.i16()? as i64;
        let result = if r.i8()? != 0 {
            TxnResult::COMMIT
        } else {
            TxnResult::ABORT
        };
        r.tagged()?;
        let now_ms = now_ms();
        let code = match self.txns.get(tid) {
            None => INVALID_PRODUCER_ID_MAPPING,
            Some(instance) => {
                let fresh = self.next_pid + 1;
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
                    transaction::decide_EndTxnV1(
                        instance,
                        &args::EndTxnV1 {
                            pid,
                            epoch,
                            result,
                            now_ms,
                        },
                        false,
                    )
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
        };
        out.i32(0);
        out.i16(code);
        if v2 {
            let (pid, epoch) = match (code, self.txns.get(tid)) {
                (NONE, Some(t)) => (t.producer_id, t.producer_epoch as i16),
                _ => (-1, -1),
            };
            out.i64(pid);
            out.i16(epoch);
        }
        out.push(0);
        Ok(())
    }

    /// One request frame (without its size): the answer's frame (with its size), or why the connection closes.
    fn handle(&mut self, frame: &[u8]) -> R<Vec<u8>> {
        let mut r = Rd { b: frame, p: 0 };
        let api = r.i16()?;
        let version = r.i16()?;
        let correlation = r.i32()?;
        r.nstr16()?;
        let flex = flexible(api, version);
        if flex {
            r.tagged()?;
        }
        let mut out = Vec::with_capacity(128);
        out.i32(0);
        out.i32(correlation);
        if flex {
            out.push(0);
        }
        self.wrote = false;
        match (api, version) {
            (0, 8) => self.produce(&mut r, &mut out, false)?,
            (0, 12) => self.produce(&mut r, &mut out, true)?,
            (24, 3) => self.add_partitions_to_txn(&mut r, &mut out)?,
            (25, 3) => self.add_offsets_to_txn(&mut r, &mut out)?,
            (26, 3) => self.end_txn(&mut r, &mut out, false)?,
            (10, 3) => self.find_coordinator(&mut r, &mut out)?,
            (19, 4) => self.create_topics(&mut r, &mut out)?,
            (22, 4) => self.init_producer_id(&mut r, &mut out)?,
            (26, 5) => self.end_txn(&mut r, &mut out, true)?,
            (28, 3) => self.txn_offset_commit(&mut r, &mut out, false)?,
            (28, 5) => self.txn_offset_commit(&mut r, &mut out, true)?,
            _ => return Err("an API or version this prototype does not serve"),
        }
        if r.p != frame.len() {
            return Err("bytes left after the request");
        }
        let size = (out.len() - 4) as i32;
        out[0..4].copy_from_slice(&size.to_be_bytes());
        Ok(out)
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
                eprintln!("kcoord-compiled-proto: syncfs: {}", io::Error::last_os_error());
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
        eprintln!("usage: kcoord-compiled-proto DATA_DIR os|fsync");
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
        port: port as i32,
        wrote: false,
    };
    broker.create_topic(b"__transaction_state", INTERNAL_PARTITIONS);
    broker.create_topic(b"__consumer_offsets", INTERNAL_PARTITIONS);
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
                            if size < 0 || size > 100 << 20 {
                                eprintln!("kcoord-compiled-proto: a frame of {size} bytes; closing");
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
                                    eprintln!("kcoord-compiled-proto: {why}; closing the connection");
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
