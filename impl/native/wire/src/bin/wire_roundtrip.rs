//! Reads lines `KIND API_KEY VERSION HEX` (KIND: req | resp, HEX a body without its header; or KIND reqhdr | resphdr,
//! VERSION the header's version, API_KEY ignored, HEX a header) from stdin and prints, for each, `HEX2 JSON` —
//! HEX2 = encode(decode(bytes)) and JSON the decoded fields — or `ERR message`. KIND hdrver (HEX ignored) answers
//! ` {"request":R,"response":S}`: the header versions of API_KEY at VERSION.
//! The test harness of tests/impl/native/test_wire_codec.py; one process answers a whole session's lines in order.

use std::io::{self, BufRead, BufWriter, Write};

use kcoord_wire::generated::header::{request_header::RequestHeader, response_header::ResponseHeader};
use kcoord_wire::generated::{request_header_version, response_header_version};
use kcoord_wire::{Reader, Request, Response, WireError};

fn unhex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err(format!("odd hex length {}", text.len()));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|e| format!("bad hex at {i}: {e}")))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn roundtrip(kind: &str, api_key: i16, version: i16, body: &[u8]) -> Result<(Vec<u8>, String), String> {
    let mut r = Reader::new(body);
    let mut out = Vec::with_capacity(body.len());
    let mut json = String::new();
    let finish = |r: &Reader<'_>| -> Result<(), String> {
        match r.remaining() {
            0 => Ok(()),
            n => Err(format!("{n} bytes left after the body at offset {}", r.position())),
        }
    };
    let text = |e: WireError| e.to_string();
    // decode, refuse bytes left over, encode again and dump: the same four steps for every kind of message
    macro_rules! through {
        ($decode:expr) => {{
            let m = $decode.map_err(text)?;
            finish(&r)?;
            m.encode(&mut out, version).map_err(text)?;
            m.dump_json(&mut json, version);
        }};
    }
    match kind {
        "req" => through!(Request::decode(api_key, version, &mut r)),
        "resp" => through!(Response::decode(api_key, version, &mut r)),
        "reqhdr" => through!(RequestHeader::decode(&mut r, version)),
        "resphdr" => through!(ResponseHeader::decode(&mut r, version)),
        "hdrver" => {
            let req = request_header_version(api_key, version);
            let resp = response_header_version(api_key, version);
            let (Some(req), Some(resp)) = (req, resp) else {
                return Err(format!("{api_key} v{version} not covered"));
            };
            json = format!("{{\"request\":{req},\"response\":{resp}}}");
        }
        other => return Err(format!("kind {other:?}: expected req, resp, reqhdr, resphdr or hdrver")),
    }
    Ok((out, json))
}

fn answer(line: &str) -> Result<(Vec<u8>, String), String> {
    let parts: Vec<&str> = line.split(' ').collect();
    let [kind, api_key, version, body] = parts[..] else {
        return Err(format!("{} fields: expected KIND API_KEY VERSION HEX", parts.len()));
    };
    let api_key: i16 = api_key.parse().map_err(|e| format!("api key {api_key:?}: {e}"))?;
    let version: i16 = version.parse().map_err(|e| format!("version {version:?}: {e}"))?;
    roundtrip(kind, api_key, version, &unhex(body)?)
}

fn main() -> io::Result<()> {
    let stdin = io::stdin();
    let mut out = BufWriter::new(io::stdout().lock());
    for line in stdin.lock().lines() {
        let line = line?;
        match answer(line.strip_suffix('\r').unwrap_or(&line)) {
            Ok((bytes, json)) => writeln!(out, "{} {}", hex(&bytes), json)?,
            Err(message) => writeln!(out, "ERR {message}")?,
        }
    }
    out.flush()
}
