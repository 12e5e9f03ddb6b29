use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

#[inline]
fn uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Kafka's signed varints are zigzag-encoded unsigned ones.
#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn varint(out: &mut Vec<u8>, v: i64) {
    uvarint(out, zigzag(v));
}

#[inline]
fn varint_len(v: i64) -> usize {
    let mut u = zigzag(v);
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// encode_new_batch(entries, base_offset, timestamp_ms, producer_id, producer_epoch, base_sequence, attributes,
/// partition_leader_epoch) -> bytes: the same bytes as kcoord.impl.storage.batch.encode_new_batch.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn encode_new_batch<'py>(
    py: Python<'py>,
    entries: &Bound<'py, PyList>,
    base_offset: i64,
    timestamp_ms: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    attributes: i16,
    partition_leader_epoch: i32,
) -> PyResult<Bound<'py, PyBytes>> {
    let n = entries.len();
    if n == 0 {
        return Err(PyValueError::new_err("a new batch needs at least one record"));
    }
    let mut out: Vec<u8> = Vec::with_capacity(61 + n * 64);
    out.resize(61, 0);
    for (delta, item) in entries.iter().enumerate() {
        let pair = item.downcast::<PyTuple>()?;
        let key = pair.get_borrowed_item(0)?;
        let value = pair.get_borrowed_item(1)?;
        let key: Option<&[u8]> = if key.is_none() { None } else { Some(key.downcast::<PyBytes>()?.as_bytes()) };
        let value: Option<&[u8]> = if value.is_none() { None } else { Some(value.downcast::<PyBytes>()?.as_bytes()) };
        let field_len = |f: Option<&[u8]>| match f {
            None => 1,
            Some(b) => varint_len(b.len() as i64) + b.len(),
        };
        let body_len = 2 + varint_len(delta as i64) + field_len(key) + field_len(value) + 1;
        varint(&mut out, body_len as i64);
        out.push(0); // attributes
        out.push(0); // timestamp delta 0
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
        out.push(0); // no headers
    }
    let records_len = out.len() - 61;
    let h = &mut out[..61];
    h[0..8].copy_from_slice(&base_offset.to_be_bytes());
    h[8..12].copy_from_slice(&((49 + records_len) as i32).to_be_bytes());
    h[12..16].copy_from_slice(&partition_leader_epoch.to_be_bytes());
    h[16] = 2;
    h[21..23].copy_from_slice(&attributes.to_be_bytes());
    h[23..27].copy_from_slice(&((n - 1) as i32).to_be_bytes());
    h[27..35].copy_from_slice(&timestamp_ms.to_be_bytes());
    h[35..43].copy_from_slice(&timestamp_ms.to_be_bytes());
    h[43..51].copy_from_slice(&producer_id.to_be_bytes());
    h[51..53].copy_from_slice(&producer_epoch.to_be_bytes());
    h[53..57].copy_from_slice(&base_sequence.to_be_bytes());
    h[57..61].copy_from_slice(&(n as i32).to_be_bytes());
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    Ok(PyBytes::new(py, &out))
}

/// noop(a, ..., h) -> None: eight integers taken and nothing done, to count a crossing alone (`per_call.py noop`).
#[pyfunction]
#[allow(clippy::too_many_arguments, unused_variables)]
fn noop(a: i64, b: i64, c: i64, d: i64, e: i64, f: i64, g: i64, h: i64) {}

#[pymodule]
fn kcoord_fast(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(encode_new_batch, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)?;
    Ok(())
}
