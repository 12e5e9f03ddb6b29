//! kcoord-wire: the request and response bodies (and headers) of every API `kcoord serve` advertises, decoded from
//! and encoded to Kafka's wire format.
//!
//! `generated/` is written by `gen_codec.py` from Apache Kafka's own `common/message/*.json` and must not be edited;
//! `codec` holds the hand-written primitives it calls (the reader, the writers, the JSON dump helpers, `WireError`).
//! tests/impl/native/test_wire_codec.py holds the two byte for byte to kio.

pub mod codec;
#[rustfmt::skip]
pub mod generated;

pub use codec::{Reader, WireError};
pub use generated::{Request, Response, COVERED};
