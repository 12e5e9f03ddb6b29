//! The log format: Kafka v2 record batches, and a partition's log file.

use super::*;

// ------------------------------------------------------------------------------------------------ record batches

/// A record's key and value (either may be null).
pub(crate) type Record<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A record's varint (Kafka's zig-zag int32: its lengths and deltas).
pub(crate) fn zigzag(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

pub(crate) fn varint(out: &mut Vec<u8>, v: i32) {
    put_uvarint(out, zigzag(v));
}

pub(crate) fn varint_len(v: i32) -> usize {
    let mut u = zigzag(v);
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

pub(crate) const TRANSACTIONAL: i16 = 0x10;
pub(crate) const CONTROL: i16 = 0x20;

/// A Kafka v2 record batch of `records` (key, value), base offset 0 (the log sets it), CRC-32C computed.
pub(crate) fn batch(records: &[Record], ts: i64, pid: i64, epoch: i16, seq: i32, attrs: i16) -> Vec<u8> {
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

/// A batch's header fields (after its base offset and length): the attributes, the producer, the sequence, the count.
pub(crate) struct BatchHead {
    pub(crate) attrs: i16,
    pub(crate) pid: i64,
    pub(crate) epoch: i16,
    pub(crate) seq: i32,
    pub(crate) count: i32,
}

impl BatchHead {
    /// The fields of a batch of at least 61 bytes, unchecked (recovery reads batches it has checked itself).
    pub(crate) fn of(b: &[u8]) -> BatchHead {
        BatchHead {
            attrs: i16::from_be_bytes(b[21..23].try_into().unwrap()),
            pid: i64::from_be_bytes(b[43..51].try_into().unwrap()),
            epoch: i16::from_be_bytes(b[51..53].try_into().unwrap()),
            seq: i32::from_be_bytes(b[53..57].try_into().unwrap()),
            count: i32::from_be_bytes(b[57..61].try_into().unwrap()),
        }
    }

    pub(crate) fn transactional(&self) -> bool {
        self.attrs & TRANSACTIONAL != 0
    }

    pub(crate) fn control(&self) -> bool {
        self.attrs & CONTROL != 0
    }
}

/// What a produced batch says about itself: its header, once its magic, length and CRC are checked.
pub(crate) fn batch_head(b: &[u8]) -> Option<BatchHead> {
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
    Some(BatchHead::of(b))
}

// ------------------------------------------------------------------------------------------------ logs

pub(crate) struct Log {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) next: i64,
    pub(crate) position: u64,
}

impl Log {
    pub(crate) fn open(path: PathBuf) -> io::Result<Log> {
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
    pub(crate) fn append(&mut self, b: &mut [u8], count: i32) -> Result<i64, i16> {
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

pub(crate) struct Partition {
    pub(crate) log: Option<Log>,
    pub(crate) producers: HashMap<i64, (i16, i32)>, // producer id -> (epoch, last sequence)
    pub(crate) txn_first_offsets: HashMap<i64, i64>, // producer id -> its open transaction's first offset (recovery::note_batch)
}

pub(crate) struct Topic {
    pub(crate) name: String,
    pub(crate) id: [u8; 16], // its `partition.metadata`'s topic_id (zero: none found)
    pub(crate) partitions: Vec<Partition>,
}
