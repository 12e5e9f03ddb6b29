//! The primitives the generated codec calls: `Reader` over a body, the `put_*` writers onto a `Vec<u8>`, the JSON
//! dump helpers, and `WireError`. Kafka's encodings (KIP-482 for the compact ones): legacy strings have an int16
//! length, legacy bytes and arrays an int32 length, -1 for null; compact ones an unsigned varint of length + 1, 0 for
//! null; a nullable struct (KIP-893) an int8 marker, -1 for null and 1 for present.

use std::fmt;
use std::fmt::Write as _;

/// Why a body could not be decoded or encoded; each names what was found and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// `needed` more bytes at offset `at`, but the body ended.
    Truncated { at: usize, needed: usize },
    /// A length field at `at` read `length`, which is neither -1 (null) nor within the bytes left.
    BadLength { at: usize, length: i64 },
    /// A varint at `at` longer than 5 bytes.
    BadVarint { at: usize },
    /// A string at `at` that is not UTF-8.
    BadUtf8 { at: usize },
    /// A null read at `at` for `field`, which is not nullable in the version at hand.
    UnexpectedNull { field: &'static str, at: usize },
    /// A null to encode for `field`, which is not nullable at `version`.
    NullNotAllowed { field: &'static str, version: i16 },
    /// A non-default value for `field`, which `version` does not have (Kafka's UnsupportedVersionException).
    UnsupportedField { field: &'static str, version: i16 },
    /// A string of `length` bytes, over the legacy format's 32767.
    StringTooLong { length: usize },
    /// An api key or version outside `COVERED`.
    UnsupportedVersion { api_key: i16, version: i16 },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { at, needed } => write!(f, "truncated: {needed} more bytes needed at offset {at}"),
            Self::BadLength { at, length } => {
                write!(
                    f,
                    "length {length} at offset {at}: expected -1 (null) or at most the bytes left"
                )
            }
            Self::BadVarint { at } => write!(f, "varint at offset {at} is longer than 5 bytes"),
            Self::BadUtf8 { at } => write!(f, "string at offset {at} is not UTF-8"),
            Self::UnexpectedNull { field, at } => write!(f, "{field} is null at offset {at}, but not nullable here"),
            Self::NullNotAllowed { field, version } => {
                write!(f, "{field} is null, but not nullable in version {version}")
            }
            Self::UnsupportedField { field, version } => {
                write!(
                    f,
                    "{field} has a non-default value, but version {version} does not have it"
                )
            }
            Self::StringTooLong { length } => write!(f, "string of {length} bytes, over the legacy format's 32767"),
            Self::UnsupportedVersion { api_key, version } => {
                write!(f, "api key {api_key} version {version} is not covered (see COVERED)")
            }
        }
    }
}

impl std::error::Error for WireError {}

/// Reads one body front to back; every read checks the bytes left.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

macro_rules! read_be {
    ($($name:ident: $ty:ty),*) => {$(
        pub fn $name(&mut self) -> Result<$ty, WireError> {
            Ok(<$ty>::from_be_bytes(self.array()?))
        }
    )*};
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::Truncated {
                at: self.pos,
                needed: n - self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    read_be!(i8: i8, i16: i16, i32: i32, i64: i64, u16: u16, u32: u32, f64: f64);

    pub fn bool(&mut self) -> Result<bool, WireError> {
        Ok(self.i8()? != 0)
    }

    pub fn uuid(&mut self) -> Result<[u8; 16], WireError> {
        self.array()
    }

    pub fn uvarint(&mut self) -> Result<u32, WireError> {
        let at = self.pos;
        let mut value = 0u32;
        for i in 0..5 {
            let byte = self.array::<1>()?[0];
            value |= u32::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::BadVarint { at })
    }

    /// The length of a string, bytes or array: None for null; checked against the bytes left.
    fn length(&mut self, flexible: bool, legacy_i16: bool) -> Result<Option<usize>, WireError> {
        let at = self.pos;
        let length = if flexible {
            i64::from(self.uvarint()?) - 1
        } else if legacy_i16 {
            i64::from(self.i16()?)
        } else {
            i64::from(self.i32()?)
        };
        if length == -1 {
            return Ok(None);
        }
        if length < 0 || length as u64 > self.remaining() as u64 {
            return Err(WireError::BadLength { at, length });
        }
        Ok(Some(length as usize))
    }

    pub fn nullable_string(&mut self, flexible: bool) -> Result<Option<String>, WireError> {
        let Some(n) = self.length(flexible, true)? else {
            return Ok(None);
        };
        let at = self.pos;
        let raw = self.take(n)?;
        std::str::from_utf8(raw)
            .map(|s| Some(s.to_owned()))
            .map_err(|_| WireError::BadUtf8 { at })
    }

    pub fn string(&mut self, flexible: bool, field: &'static str) -> Result<String, WireError> {
        let at = self.pos;
        self.nullable_string(flexible)?
            .ok_or(WireError::UnexpectedNull { field, at })
    }

    pub fn nullable_bytes(&mut self, flexible: bool) -> Result<Option<Vec<u8>>, WireError> {
        let Some(n) = self.length(flexible, false)? else {
            return Ok(None);
        };
        Ok(Some(self.take(n)?.to_vec()))
    }

    pub fn bytes(&mut self, flexible: bool, field: &'static str) -> Result<Vec<u8>, WireError> {
        let at = self.pos;
        self.nullable_bytes(flexible)?
            .ok_or(WireError::UnexpectedNull { field, at })
    }

    pub fn nullable_array_len(&mut self, flexible: bool) -> Result<Option<usize>, WireError> {
        self.length(flexible, false)
    }

    pub fn array_len(&mut self, flexible: bool, field: &'static str) -> Result<usize, WireError> {
        let at = self.pos;
        self.length(flexible, false)?
            .ok_or(WireError::UnexpectedNull { field, at })
    }

    /// A nullable struct's marker (KIP-893): false for null (negative), true for present.
    pub fn struct_present(&mut self) -> Result<bool, WireError> {
        Ok(self.i8()? >= 0)
    }

    /// The value of one tagged field (after its tag): a reader over its size-prefixed bytes.
    pub fn tagged(&mut self) -> Result<Reader<'a>, WireError> {
        let size = self.uvarint()? as usize;
        Ok(Reader::new(self.take(size)?))
    }

    /// A tagged-field section of a struct that declares no tagged fields: every field is unknown, so skipped.
    pub fn skip_tagged_fields(&mut self) -> Result<(), WireError> {
        for _ in 0..self.uvarint()? {
            self.uvarint()?;
            self.tagged()?;
        }
        Ok(())
    }
}

macro_rules! put_be {
    ($($name:ident: $ty:ty),*) => {$(
        pub fn $name(w: &mut Vec<u8>, v: $ty) {
            w.extend_from_slice(&v.to_be_bytes());
        }
    )*};
}

put_be!(put_i8: i8, put_i16: i16, put_i32: i32, put_i64: i64, put_u16: u16, put_u32: u32, put_f64: f64);

pub fn put_bool(w: &mut Vec<u8>, v: bool) {
    w.push(u8::from(v));
}

pub fn put_uuid(w: &mut Vec<u8>, v: &[u8; 16]) {
    w.extend_from_slice(v);
}

pub fn put_uvarint(w: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        w.push((v as u8) | 0x80);
        v >>= 7;
    }
    w.push(v as u8);
}

fn put_length(w: &mut Vec<u8>, flexible: bool, n: usize) {
    if flexible {
        put_uvarint(w, n as u32 + 1);
    } else {
        put_i32(w, n as i32);
    }
}

pub fn put_string(w: &mut Vec<u8>, flexible: bool, v: &str) -> Result<(), WireError> {
    if flexible {
        put_uvarint(w, v.len() as u32 + 1);
    } else {
        let length = i16::try_from(v.len()).map_err(|_| WireError::StringTooLong { length: v.len() })?;
        put_i16(w, length);
    }
    w.extend_from_slice(v.as_bytes());
    Ok(())
}

pub fn put_null_string(w: &mut Vec<u8>, flexible: bool) {
    if flexible {
        put_uvarint(w, 0);
    } else {
        put_i16(w, -1);
    }
}

pub fn put_bytes(w: &mut Vec<u8>, flexible: bool, v: &[u8]) {
    put_length(w, flexible, v.len());
    w.extend_from_slice(v);
}

fn put_null(w: &mut Vec<u8>, flexible: bool) {
    if flexible {
        put_uvarint(w, 0);
    } else {
        put_i32(w, -1);
    }
}

pub fn put_null_bytes(w: &mut Vec<u8>, flexible: bool) {
    put_null(w, flexible);
}

pub fn put_array_len(w: &mut Vec<u8>, flexible: bool, n: usize) {
    put_length(w, flexible, n);
}

pub fn put_null_array(w: &mut Vec<u8>, flexible: bool) {
    put_null(w, flexible);
}

/// Starts a JSON object member: a comma unless it is the first, then `"name":`.
pub fn json_key(out: &mut String, first: &mut bool, name: &str) {
    if !*first {
        out.push(',');
    }
    *first = false;
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

pub fn dump_display<T: fmt::Display>(out: &mut String, v: T) {
    let _ = write!(out, "{v}");
}

/// A float in a form JSON reads back exactly (Rust's shortest round-trip form, with an exponent when large).
pub fn dump_f64(out: &mut String, v: f64) {
    let _ = write!(out, "{v:?}");
}

pub fn dump_str(out: &mut String, v: &str) {
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub fn dump_hex(out: &mut String, v: &[u8]) {
    out.push('"');
    for b in v {
        let _ = write!(out, "{b:02x}");
    }
    out.push('"');
}
