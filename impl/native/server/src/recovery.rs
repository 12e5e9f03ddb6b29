//! Recovery: the server's state rebuilt from its data directory at start-up, and the one file that makes a topic's
//! size recoverable (`partition.metadata`, written for every partition when the topic is created).
//!
//! Owns: finding the topics (`topic-N/` folders: the two coordinator topics' 50 partitions each; a data topic's size
//! is its highest partition holding a `partition.metadata`, as kcoord's `PartitionManager._discover`), reading each
//! partition's segments (`<20 digits>.log`) batch by batch, the cut of a torn tail, and the replay of what the logs
//! say into the broker: the transaction log's last value per transactional id (a tombstone drops the id) as the
//! Transaction instance (`last_producer_epoch` -1 and `has_failed_epoch_fence` false: not persisted, loaded so by
//! kcoord's `impl/txn/records.py` and by Kafka), the next producer id (above every id a record or batch carries, and
//! every id kcoord serve's `producer-id-blocks` file says it may have handed out, when there is one), the
//! committed offsets and the pending transactional ones (settled by the markers in the offsets partitions), each
//! data partition's producers (epoch, last sequence: what the live Produce check keeps) and the first offset of
//! each producer's open transaction; then the transactions found in PrepareCommit or PrepareAbort are completed as
//! Kafka's coordinator does at load: their markers and the Complete* record, through `Broker::finish` (the generated
//! table's CompleteTxn row), as on the live path.
//!
//! What a start may cut and what it refuses (kcoord-native keeps no recovery point, so every batch is checked, as
//! kcoord's `impl/storage/recovery.py` does when its `recovery-point` vouches for nothing): the first batch of the
//! last segment that is short, has a bad length, magic or CRC-32C, or goes back in offsets is cut, with everything
//! after it, and the cut is said on stderr (file, byte position, bytes dropped, the first offset lost, why) — unless
//! a whole valid batch follows the damaged one (damage inside the log, not a torn write) or the damage is in a
//! segment before the last: then, as for a file that cannot be read or a record that does not decode, the start
//! is refused with one line naming the file and position, and nothing is changed.
//! Must not be imported by anything but main.rs, whose private items it uses (a child module sees them).

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::{
    now_ms, split_partition, transaction, BatchHead, Broker, Log, OffsetKey, Partition, State, INTERNAL_PARTITIONS,
    OFFSETS_TOPIC, TRANSACTION_STATUS, TXN_TOPIC,
};
use transaction::Instance;

type R<T> = Result<T, &'static str>;

/// A record's string as the names are kept (every name kcoord writes is UTF-8; anything else is damage).
fn text(b: &[u8]) -> R<String> {
    std::str::from_utf8(b)
        .map(str::to_owned)
        .map_err(|_| "a name that is not UTF-8")
}

/// A reader over a record's bytes (the log format's fields: big-endian integers, varints, the records' and the
/// coordinator records' strings and arrays in their classic and flexible forms).
struct Rd<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Rd<'a> {
    fn compact_nbytes(&mut self) -> R<Option<&'a [u8]>> {
        match self.compact_len()? {
            None => Ok(None),
            Some(n) => Ok(Some(self.take(n)?)),
        }
    }
    fn nstr16(&mut self) -> R<Option<&'a [u8]>> {
        let n = self.i16()?;
        if n < 0 {
            return Ok(None);
        }
        Ok(Some(self.take(n as usize)?))
    }
    fn compact_str(&mut self) -> R<&'a [u8]> {
        self.compact_nbytes()?.ok_or("null where a string is required")
    }
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        if self.b.len() - self.p < n {
            return Err("a field runs past the end of its record");
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
    fn compact_array(&mut self) -> R<usize> {
        self.compact_len()?.ok_or("null where an array is required")
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

/// Kafka's partition metadata file: the topic id, written once when the partition is made.
const PARTITION_METADATA: &str = "partition.metadata";
/// kcoord serve's producer-id allocator's file (impl/storage/producer_ids.py): "KPID", version 0, the first id of the
/// next block (every id it handed out is below it), a CRC-32C of those 14 bytes.
pub(super) const PRODUCER_ID_BLOCKS: &str = "producer-id-blocks";
/// A v2 batch's header: base offset (8), length (4), then 49 bytes the length counts.
const HEADER: usize = 61;

/// Why a start is refused: one line, the file and position in it.
type Refusal = String;

// ------------------------------------------------------------------------------------------------ topics on disk

/// Makes the folders of a new data topic's partitions, each with a `partition.metadata` naming one random topic id
/// (Kafka's format: `version: 0` / `topic_id: <base64url>`): the last partition first, so a creation a crash cut
/// short still says the topic's size (its highest partition with the file), as kcoord's `_open_topic` does. The id.
pub(super) fn persist_topic(dir: &Path, name: &[u8], partitions: i32) -> io::Result<[u8; 16]> {
    let mut id = [0u8; 16];
    fs::File::open("/dev/urandom")?.read_exact(&mut id)?;
    id[6] = (id[6] & 0x0f) | 0x40; // a version 4 UUID, as Kafka's Uuid.randomUuid
    id[8] = (id[8] & 0x3f) | 0x80;
    let text = format!("version: 0\ntopic_id: {}\n", base64url(&id));
    let topic = String::from_utf8_lossy(name);
    for p in (0..partitions).rev() {
        let folder = dir.join(format!("{topic}-{p}"));
        fs::create_dir_all(&folder)?;
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(folder.join(PARTITION_METADATA))?;
        file.write_all(text.as_bytes())?;
    }
    Ok(id)
}

/// A topic's id, as its partition `partition`'s `partition.metadata` says (`topic_id: <base64url>`); Kafka's zero
/// id (what Metadata answers for a topic with none) when the file is missing or says none readable.
fn read_topic_id(dir: &Path, topic: &str, partition: i32) -> [u8; 16] {
    let path = dir.join(format!("{topic}-{partition}")).join(PARTITION_METADATA);
    let text = fs::read_to_string(path).unwrap_or_default();
    let line = text.lines().find_map(|l| l.strip_prefix("topic_id: "));
    line.and_then(from_base64url).unwrap_or([0; 16])
}

/// 16 bytes from base64url without padding (Kafka's `Uuid.fromString`), or None.
fn from_base64url(text: &str) -> Option<[u8; 16]> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    if text.len() != 22 {
        return None;
    }
    let mut id = [0u8; 16];
    let (mut bits, mut held, mut at) = (0u32, 0, 0);
    for c in text.bytes() {
        bits = bits << 6 | ALPHABET.iter().position(|&a| a == c)? as u32;
        held += 6;
        if held >= 8 && at < 16 {
            held -= 8;
            id[at] = (bits >> held) as u8;
            at += 1;
            bits &= (1 << held) - 1;
        }
    }
    // 22 characters are 132 bits: the id's 128, then 4 zero bits
    (at == 16 && held == 4 && bits == 0).then_some(id)
}

/// Base64url without padding (Kafka's `Uuid.toString`).
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// The partition folders under `dir`: per topic name, per partition, whether it holds a `partition.metadata`.
fn partition_folders(dir: &Path) -> Result<HashMap<String, HashMap<i32, bool>>, Refusal> {
    let mut found: HashMap<String, HashMap<i32, bool>> = HashMap::new();
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Some((topic, partition)) = split_partition(&name) else {
            continue;
        };
        if partition < 0 || topic.is_empty() || !entry.path().is_dir() {
            continue;
        }
        let has_metadata = entry.path().join(PARTITION_METADATA).is_file();
        found
            .entry(topic.to_string())
            .or_default()
            .insert(partition, has_metadata);
    }
    Ok(found)
}

/// The data topics found (names sorted, sizes, ids) — and the coordinator topics' folders checked to be theirs.
fn discover(dir: &Path) -> Result<Vec<(String, i32, [u8; 16])>, Refusal> {
    let mut topics = Vec::new();
    let mut found: Vec<(String, HashMap<i32, bool>)> = partition_folders(dir)?.into_iter().collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    for (topic, partitions) in found {
        let highest = *partitions.keys().max().unwrap();
        if topic == "__transaction_state" || topic == "__consumer_offsets" {
            if highest >= INTERNAL_PARTITIONS {
                return Err(format!(
                    "{}: {topic} has {INTERNAL_PARTITIONS} partitions, not {}: not a folder this server made",
                    dir.join(format!("{topic}-{highest}")).display(),
                    highest + 1
                ));
            }
            continue;
        }
        let described = partitions.iter().filter(|e| *e.1).map(|e| *e.0).max();
        if described != Some(highest) {
            // folders a kcoord-native before recovery made (lazily, no metadata): the size is a lower bound
            eprintln!(
                "kcoord-native: {}: no {PARTITION_METADATA} in topic {topic}'s highest partition folder: the topic \
                 is taken to have {} partitions (its highest folder's)",
                dir.join(format!("{topic}-{highest}")).display(),
                highest + 1
            );
        }
        let id = described.map_or([0; 16], |p| read_topic_id(dir, &topic, p));
        topics.push((topic, highest + 1, id));
    }
    Ok(topics)
}

// ------------------------------------------------------------------------------------------------ segments

/// A whole, valid batch of a segment: where it is in the segment's bytes, its first offset and the next one.
struct Span {
    start: usize,
    end: usize,
    base: i64,
}

/// Where and why a segment's batches stop before its end.
struct Damage {
    position: usize,
    offset: i64,
    why: String,
}

/// The batch at `p` (the log's next offset `next`): its size and next offset, or why it is not a whole valid batch.
fn check_batch(b: &[u8], p: usize, next: i64) -> Result<(usize, i64), String> {
    let rest = b.len() - p;
    if rest < 12 {
        return Err(format!(
            "a short batch: {rest} bytes, less than a batch's offset and length"
        ));
    }
    let length = i32::from_be_bytes(b[p + 8..p + 12].try_into().unwrap());
    if length < (HEADER - 12) as i32 {
        return Err(format!(
            "a batch length of {length}, less than a header's {}",
            HEADER - 12
        ));
    }
    let size = 12 + length as usize;
    if rest < size {
        return Err(format!("a short batch: {rest} of its {size} bytes"));
    }
    if b[p + 16] != 2 {
        return Err(format!("magic {}, not 2", b[p + 16] as i8));
    }
    let crc = u32::from_be_bytes(b[p + 17..p + 21].try_into().unwrap());
    let computed = crc32c::crc32c(&b[p + 21..p + size]);
    if crc != computed {
        return Err(format!("CRC-32C {computed:#010x}, the batch says {crc:#010x}"));
    }
    let base = i64::from_be_bytes(b[p..p + 8].try_into().unwrap());
    if base < next {
        return Err(format!("base offset {base} below the log's next offset {next}"));
    }
    let last_delta = i32::from_be_bytes(b[p + 23..p + 27].try_into().unwrap());
    Ok((size, base + last_delta as i64 + 1))
}

/// Every whole batch of `b` from offset `next` on, the offset after them, and the damage that stopped the scan.
fn scan(b: &[u8], mut next: i64) -> (Vec<Span>, i64, Option<Damage>) {
    let mut spans = Vec::new();
    let mut p = 0;
    while p < b.len() {
        match check_batch(b, p, next) {
            Ok((size, after)) => {
                let base = i64::from_be_bytes(b[p..p + 8].try_into().unwrap());
                spans.push(Span {
                    start: p,
                    end: p + size,
                    base,
                });
                p += size;
                next = after;
            }
            Err(why) => {
                return (
                    spans,
                    next,
                    Some(Damage {
                        position: p,
                        offset: next,
                        why,
                    }),
                )
            }
        }
    }
    (spans, next, None)
}

/// Whether a whole valid batch follows the damaged one at `d` (as its length says): damage inside the log, which no
/// torn write leaves.
fn valid_batch_follows(b: &[u8], d: &Damage) -> bool {
    let p = d.position;
    if b.len() - p < 12 {
        return false;
    }
    let length = i32::from_be_bytes(b[p + 8..p + 12].try_into().unwrap());
    if length < (HEADER - 12) as i32 || (b.len() - p) < 12 + length as usize {
        return false;
    }
    check_batch(b, p + 12 + length as usize, i64::MIN).is_ok()
}

/// A partition's log as read: every segment's bytes with its whole batches (a torn tail left out), and the offset
/// after the last batch.
struct ReadLog {
    segments: Vec<(PathBuf, Vec<u8>, Vec<Span>)>,
    next: i64,
    /// a torn tail of the last segment to cut (its path, its length as found, where and why), once every log has
    /// been read without a refusal
    torn: Option<(PathBuf, usize, Damage)>,
}

fn segment_files(folder: &Path) -> Result<Vec<(i64, PathBuf)>, Refusal> {
    let mut files = Vec::new();
    let entries = fs::read_dir(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", folder.display()))?;
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".log")) else {
            continue;
        };
        if stem.len() == 20 && stem.bytes().all(|c| c.is_ascii_digit()) {
            let base: i64 = stem
                .parse()
                .map_err(|_| format!("{}: not a segment name", entry.path().display()))?;
            files.push((base, entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

fn read_log(folder: &Path) -> Result<ReadLog, Refusal> {
    let files = segment_files(folder)?;
    let mut segments = Vec::with_capacity(files.len());
    let mut torn = None;
    let mut next = files.first().map_or(0, |f| f.0);
    let count = files.len();
    for (i, (base, path)) in files.into_iter().enumerate() {
        if base < next {
            return Err(format!(
                "{}: the segment starts at offset {base}, below the previous segment's end {next}; nothing was \
                 changed",
                path.display()
            ));
        }
        let mut bytes = fs::read(&path).map_err(|e| format!("{}: {e}; nothing was changed", path.display()))?;
        let (spans, after, damage) = scan(&bytes, base.max(next));
        if let Some(d) = damage {
            if i + 1 != count || valid_batch_follows(&bytes, &d) {
                let place = if i + 1 != count {
                    "in a segment before the last"
                } else {
                    "with a whole batch after it"
                };
                return Err(format!(
                    "{}: the batch at byte {} (offset {}) is damaged ({}) {place}: not a torn write; the server is \
                     not started and nothing was changed: restore the folder from a copy, or, to give up offset {} \
                     and everything after it, truncate the file to {} bytes",
                    path.display(),
                    d.position,
                    d.offset,
                    d.why,
                    d.offset,
                    d.position
                ));
            }
            let found = bytes.len();
            bytes.truncate(d.position);
            torn = Some((path.clone(), found, d));
        }
        next = after;
        segments.push((path, bytes, spans));
    }
    Ok(ReadLog { segments, next, torn })
}

/// Cuts a torn tail at `d` (the file synced; `found`: its length as read), and says so.
fn cut(path: &Path, found: usize, d: &Damage) -> Result<(), Refusal> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}; nothing was changed", path.display()))?;
    file.set_len(d.position as u64)
        .and_then(|_| file.sync_all())
        .map_err(|e| format!("{}: cutting at byte {}: {e}", path.display(), d.position))?;
    eprintln!(
        "kcoord-native: {}: cut {} bytes at byte {}, from offset {} on ({}): a torn or corrupt tail",
        path.display(),
        found - d.position,
        d.position,
        d.offset,
        d.why
    );
    Ok(())
}

/// The log appends go to: the last segment (a new, empty one when the folder has none), at its end.
fn reopen(folder: &Path, read: &ReadLog) -> Result<Log, Refusal> {
    let (path, position) = match read.segments.last() {
        Some((path, bytes, _)) => (path.clone(), bytes.len() as u64),
        None => (folder.join("00000000000000000000.log"), 0),
    };
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Log {
        path,
        file,
        next: read.next,
        position,
    })
}

// ------------------------------------------------------------------------------------------------ batches

/// An open transaction's first offset kept per producer, from a batch written at `base`: a transactional data batch
/// opens one (if none is open), a marker closes it. The live append and recovery both call it.
pub(super) fn note_batch(part: &mut Partition, b: &[u8], base: i64) {
    if b.len() < HEADER {
        return;
    }
    let h = BatchHead::of(b);
    if h.control() {
        part.txn_first_offsets.remove(&h.pid);
    } else if h.transactional() {
        part.txn_first_offsets.entry(h.pid).or_insert(base);
    }
}

/// A record's key and value (None: null).
type Kv = (Option<Vec<u8>>, Option<Vec<u8>>);

fn zigzag(r: &mut Rd) -> Result<i64, &'static str> {
    let u = r.uvarint()?;
    Ok((u >> 1) as i64 ^ -((u & 1) as i64))
}

fn field(r: &mut Rd) -> Result<Option<Vec<u8>>, &'static str> {
    let n = zigzag(r)?;
    if n < 0 {
        return Ok(None);
    }
    Ok(Some(r.take(n as usize)?.to_vec()))
}

/// The records of an uncompressed batch (a coordinator log's: kcoord and this server never compress them).
fn records(b: &[u8]) -> Result<Vec<Kv>, &'static str> {
    let h = BatchHead::of(b);
    if h.attrs & 7 != 0 {
        return Err("a compressed batch in a coordinator log");
    }
    let mut r = Rd { b: &b[HEADER..], p: 0 };
    let mut out = Vec::with_capacity(h.count.max(0) as usize);
    for _ in 0..h.count {
        let length = zigzag(&mut r)?;
        let start = r.p;
        r.i8()?;
        zigzag(&mut r)?; // timestamp delta
        zigzag(&mut r)?; // offset delta
        let key = field(&mut r)?;
        let value = field(&mut r)?;
        for _ in 0..zigzag(&mut r)? {
            field(&mut r)?;
            field(&mut r)?;
        }
        if (r.p - start) as i64 != length {
            return Err("a record's length is not its fields'");
        }
        out.push((key, value));
    }
    if r.p != r.b.len() {
        return Err("bytes after the batch's last record");
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------------------ replay

/// What replay gathered beyond the broker's own state: each transaction-log key's last value and where it was.
#[derive(Default)]
struct Gathered {
    txn_values: HashMap<Vec<u8>, (Option<Vec<u8>>, String)>,
    max_pid: i64,
    batches: usize,
}

/// `path`'s batch at `span`, for a refusal: where it is.
fn at(path: &Path, span: &Span) -> String {
    format!("{} at byte {} (offset {})", path.display(), span.start, span.base)
}

fn replay_data(part: &mut Partition, read: &ReadLog, g: &mut Gathered) {
    for (_, bytes, spans) in &read.segments {
        for span in spans {
            let b = &bytes[span.start..span.end];
            let h = BatchHead::of(b);
            g.batches += 1;
            g.max_pid = g.max_pid.max(h.pid);
            if h.pid >= 0 && !h.control() {
                // as the live Produce check keeps them: the batch's epoch and last sequence
                part.producers.insert(h.pid, (h.epoch, h.seq.wrapping_add(h.count - 1)));
            }
            note_batch(part, b, span.base);
        }
    }
}

fn replay_txn_log(read: &ReadLog, g: &mut Gathered) -> Result<(), Refusal> {
    for (path, bytes, spans) in &read.segments {
        for span in spans {
            let b = &bytes[span.start..span.end];
            g.batches += 1;
            let kvs = records(b).map_err(|why| format!("{}: {why}", at(path, span)))?;
            for (key, value) in kvs {
                let key = key.ok_or_else(|| format!("{}: a record without a key", at(path, span)))?;
                g.txn_values.insert(key, (value, at(path, span)));
            }
        }
    }
    Ok(())
}

/// An offset commit's key (OffsetCommitKey v0/v1), or None for a group's metadata record (v2).
fn offset_key(key: &[u8]) -> Result<Option<OffsetKey>, &'static str> {
    let mut r = Rd { b: key, p: 0 };
    match r.i16()? {
        0 | 1 => Ok(Some((text(r.str16()?)?, text(r.str16()?)?, r.i32()?))),
        2 => Ok(None),
        _ => Err("an unknown __consumer_offsets key version"),
    }
}

fn replay_offsets(broker: &mut Broker, read: &ReadLog, g: &mut Gathered) -> Result<(), Refusal> {
    let mut pending: HashMap<i64, Vec<(OffsetKey, i64)>> = HashMap::new();
    for (path, bytes, spans) in &read.segments {
        for span in spans {
            let b = &bytes[span.start..span.end];
            let h = BatchHead::of(b);
            g.batches += 1;
            g.max_pid = g.max_pid.max(h.pid);
            let refuse = |why: &str| format!("{}: {why}", at(path, span));
            let kvs = records(b).map_err(refuse)?;
            if h.control() {
                // a marker: the producer's pending offsets committed or dropped
                let Some((Some(key), _)) = kvs.first() else {
                    return Err(refuse("a marker without a key"));
                };
                let mut r = Rd { b: key, p: 0 };
                let commit = r.i16().and_then(|_| r.i16()).map_err(refuse)? == 1;
                if let Some(offsets) = pending.remove(&h.pid) {
                    if commit {
                        broker.offsets.extend(offsets);
                    }
                }
                continue;
            }
            for (key, value) in kvs {
                let key = key.ok_or_else(|| refuse("a record without a key"))?;
                let Some(k) = offset_key(&key).map_err(refuse)? else {
                    continue;
                };
                match value {
                    None => {
                        // a tombstone: the committed offset goes, and any pending one of the same key
                        broker.offsets.remove(&k);
                        pending.values_mut().for_each(|p| p.retain(|(pk, _)| *pk != k));
                    }
                    Some(v) => {
                        let mut r = Rd { b: &v, p: 0 };
                        let offset = r.i16().and_then(|_| r.i64()).map_err(refuse)?;
                        if h.transactional() {
                            pending.entry(h.pid).or_default().push((k, offset));
                        } else {
                            broker.offsets.insert(k, offset);
                        }
                    }
                }
            }
        }
    }
    for (pid, offsets) in pending {
        broker.pending_offsets.entry(pid).or_default().extend(offsets);
    }
    Ok(())
}

/// Kafka's TransactionState id as the spec's state (the pending-only ones are never written).
fn state_of(status: i8) -> Result<State, String> {
    TRANSACTION_STATUS
        .iter()
        .find(|&&(state, id)| id == status && !matches!(state, State::Dead | State::PrepareEpochFence))
        .map(|&(state, _)| state)
        .ok_or_else(|| format!("TransactionStatus {status}, never written"))
}

/// The Transaction instance a TransactionLogValue (v0 or v1) describes.
fn instance(tid: &str, value: &[u8]) -> Result<Instance, String> {
    let mut r = Rd { b: value, p: 0 };
    let version = r.i16()?;
    if !(0..=1).contains(&version) {
        return Err(format!("TransactionLogValue version {version}, expected 0 or 1"));
    }
    let flex = version >= 1;
    let mut t = Instance::fresh(tid.to_owned());
    t.producer_id = r.i64()?;
    t.producer_epoch = r.i16()? as i64;
    t.txn_timeout_ms = r.i32()? as i64;
    t.state = state_of(r.i8()?)?;
    let topics = if flex { r.compact_len()? } else { Some(r.array32()?) };
    for _ in 0..topics.unwrap_or(0) {
        let topic = text(r.string(flex)?)?;
        for _ in 0..r.array(flex)? {
            t.partitions.insert(format!("{topic}-{}", r.i32()?));
        }
        r.tags(flex)?;
    }
    t.txn_last_update_timestamp_ms = r.i64()?;
    t.txn_start_timestamp_ms = r.i64()?;
    if flex {
        for _ in 0..r.uvarint()? {
            let tag = r.uvarint()?;
            let size = r.uvarint()? as usize;
            let mut f = Rd { b: r.take(size)?, p: 0 };
            match tag {
                0 => t.previous_producer_id = f.i64()?,
                1 => t.next_producer_id = f.i64()?,
                2 => t.client_txn_version = f.i16()? as i64,
                _ => {} // a tag this version does not know: read past, as Kafka does
            }
        }
    }
    if r.p != value.len() {
        return Err(format!("{} bytes after the TransactionLogValue", value.len() - r.p));
    }
    Ok(t)
}

/// The transactional id of a TransactionLogKey v0.
fn txn_key(key: &[u8]) -> Result<String, &'static str> {
    let mut r = Rd { b: key, p: 0 };
    if r.i16()? != 0 {
        return Err("a TransactionLogKey version other than 0");
    }
    let tid = text(r.str16()?)?;
    if r.p != key.len() {
        return Err("bytes after the TransactionLogKey");
    }
    Ok(tid)
}

fn install_txns(broker: &mut Broker, g: &mut Gathered) -> Result<(), Refusal> {
    let mut values: Vec<_> = std::mem::take(&mut g.txn_values).into_iter().collect();
    values.sort();
    for (key, (value, place)) in values {
        let tid = txn_key(&key).map_err(|why| format!("{place}: {why}"))?;
        let Some(value) = value else {
            continue; // a tombstone: the id expired
        };
        let t = instance(&tid, &value).map_err(|why| format!("{place}: {why}"))?;
        g.max_pid = g
            .max_pid
            .max(t.producer_id)
            .max(t.previous_producer_id)
            .max(t.next_producer_id);
        broker.txns.insert(tid, t);
    }
    Ok(())
}

/// The Prepare* transactions completed as Kafka's coordinator does at load (markers, then the Complete* record);
/// how many.
fn complete_prepared(broker: &mut Broker) -> Result<usize, Refusal> {
    let mut prepared: Vec<String> = broker
        .txns
        .iter()
        .filter(|(_, t)| matches!(t.state, State::PrepareCommit | State::PrepareAbort))
        .map(|(tid, _)| tid.clone())
        .collect();
    prepared.sort();
    for tid in &prepared {
        broker.finish(tid, now_ms()).map_err(|code| {
            format!(
                "completing transaction {} found prepared: error {code} (see above); the logs are as they were \
                 written",
                tid
            )
        })?;
    }
    Ok(prepared.len())
}

/// The first producer id kcoord serve's allocator has not handed out, when the folder has its file (a folder kcoord
/// serve wrote: its idempotent producers' ids appear in no log, so the logs alone do not say which ids are taken).
fn producer_id_blocks(dir: &Path) -> Result<Option<i64>, Refusal> {
    let path = dir.join(PRODUCER_ID_BLOCKS);
    let data = match fs::read(&path) {
        Ok(data) => data,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let crc_ok = data.len() == 18 && crc32c::crc32c(&data[..14]) == u32::from_be_bytes(data[14..].try_into().unwrap());
    if !crc_ok || &data[..6] != b"KPID\0\0" {
        return Err(format!(
            "{}: not a producer-id block file (18 bytes: KPID, version 0, the next block's first id, its CRC-32C); \
             nothing was changed",
            path.display()
        ));
    }
    Ok(Some(i64::from_be_bytes(data[6..14].try_into().unwrap())))
}

/// kcoord serve's producer-id file saying every id below `next_block` is handed out: written to a temporary file,
/// synced, renamed over the old one, the folder synced (impl/storage/_files.py's atomic_write).
pub(super) fn write_producer_id_blocks(dir: &Path, next_block: i64) -> io::Result<()> {
    let mut data = Vec::with_capacity(18);
    data.extend_from_slice(b"KPID\0\0");
    data.extend_from_slice(&next_block.to_be_bytes());
    data.extend_from_slice(&crc32c::crc32c(&data).to_be_bytes());
    let path = dir.join(PRODUCER_ID_BLOCKS);
    let temporary = dir.join(format!("{PRODUCER_ID_BLOCKS}.tmp"));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temporary)?;
    f.write_all(&data)?;
    f.sync_all()?;
    fs::rename(&temporary, &path)?;
    fs::File::open(dir)?.sync_all()
}

// ------------------------------------------------------------------------------------------------ the start

/// Rebuilds `broker` (its two coordinator topics made, nothing else) from its data directory; a refusal is one line.
pub(super) fn recover(broker: &mut Broker) -> Result<(), Refusal> {
    let dir = broker.dir.clone();
    for (topic, partitions, id) in discover(&dir)? {
        broker.open_topic(&topic, partitions, id);
    }
    let mut g = Gathered {
        max_pid: -1,
        ..Gathered::default()
    };
    let mut torn = Vec::new();
    for t in 0..broker.topics.len() {
        for p in 0..broker.topics[t].partitions.len() as i32 {
            let folder = dir.join(broker.partition_name(t, p));
            if !folder.is_dir() {
                continue;
            }
            let read = read_log(&folder)?;
            match t {
                TXN_TOPIC => replay_txn_log(&read, &mut g)?,
                OFFSETS_TOPIC => replay_offsets(broker, &read, &mut g)?,
                _ => replay_data(&mut broker.topics[t].partitions[p as usize], &read, &mut g),
            }
            broker.topics[t].partitions[p as usize].log = Some(reopen(&folder, &read)?);
            torn.extend(read.torn);
        }
    }
    // every log read and none refused: only now is anything cut
    for (path, found, damage) in &torn {
        cut(path, *found, damage)?;
    }
    install_txns(broker, &mut g)?;
    broker.next_pid = broker.next_pid.max(g.max_pid);
    if let Some(first_free) = producer_id_blocks(&dir)? {
        broker.next_pid = broker.next_pid.max(first_free - 1);
        broker.pid_limit = first_free;
    }
    let completed = complete_prepared(broker)?;
    if g.batches > 0 {
        eprintln!(
            "kcoord-native: recovered {} from {} batches: {} data topics, {} transactional ids ({completed} \
             prepared transactions completed), {} committed offsets ({} pending), next producer id {}",
            dir.display(),
            g.batches,
            broker.topics.len() - 2,
            broker.txns.len(),
            broker.offsets.len(),
            broker.pending_offsets.values().map(Vec::len).sum::<usize>(),
            broker.next_pid + 1
        );
    }
    Ok(())
}
