"""Fuzz the server with mutated real-client frames; it must answer exactly as predicted and never crash.

Each hypothesis example opens one connection and sends a byte stream built from frames captured from kafka-python,
aiokafka and librdkafka (`corpus/client_frames.json`, made by `record_client_versions.py --corpus`): a few
structured mutations drawn by hypothesis plus a bulk of seeded random ones (bit flips, truncations, splices,
random api keys/versions, random bytes, extra trailing bytes, and size prefixes that lie: too long, too short,
negative, oversize). Every API and version kio has is registered with one recording handler.

Oracle, per connection: split the stream as Kafka's framing would; answer each frame with a second, local
Dispatcher; stop at the first frame that must close the connection. The server must then send exactly those bytes
and close; its handler must have been called exactly for the processed frames that `decode_request` accepts
(so never for one that does not decode). After all examples, ApiVersions still answers exactly.
"""

from __future__ import annotations

import asyncio
import json
import random
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3 import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v3 import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map
from wire_testkit import RawClient, RecordingHandler, ThreadedServer, threaded_server

from kcoord.impl.server import Dispatcher, HandlerRegistry, ServerOptions, VersionRange, encode_request
from kcoord.impl.server.codec import decode_request, decode_response, kio_version_range
from kcoord.impl.server.dispatch import CloseConnection, ConnectionInfo, Outcome, Reply
from kcoord.impl.server.errors import RequestDecodeError
from kcoord.impl.server.frames import encode_frame

pytestmark = pytest.mark.wire

CORPUS_PATH = Path(__file__).parent / "corpus" / "client_frames.json"
MAX_FRAME_BYTES = 1 << 20
BULK_FRAMES_PER_EXAMPLE = 160
ORACLE_CONNECTION = ConnectionInfo(connection_id=0, client_host="127.0.0.1", client_port=0)


def load_corpus() -> list[bytes]:
    entries = json.loads(CORPUS_PATH.read_text())
    frames = [bytes.fromhex(e["frame_hex"]) for e in entries]
    assert len(frames) >= 50 and {e["client"] for e in entries} == {"kafka-python", "aiokafka", "confluent-kafka"}
    return frames


CORPUS = load_corpus()


def full_registry(handler: RecordingHandler) -> HandlerRegistry:
    registry = HandlerRegistry()
    for api_key in sorted(api_key_map):
        versions = kio_version_range(api_key)
        if api_key != 18 and versions is not None:
            registry.register(api_key, handler, VersionRange(*versions))
    return registry


# --- stream construction -----------------------------------------------------------------------------------


def flip_bits(frame: bytes, positions: list[int]) -> bytes:
    if not frame:
        return frame
    data = bytearray(frame)
    for position in positions:
        bit = position % (len(data) * 8)
        data[bit // 8] ^= 1 << (bit % 8)
    return bytes(data)


def retag(frame: bytes, api_key: int, api_version: int) -> bytes:
    return struct.pack(">hh", api_key, api_version) + frame[4:]


def random_payload(rnd: random.Random) -> bytes:
    base = rnd.choice(CORPUS)
    # Weights keep most frames answerable (a closing frame ends its connection, and connections are the slow
    # part); the structured hypothesis payloads and the retag/random kinds still close plenty of them.
    kind = rnd.choices(["valid", "flip", "truncate", "retag", "splice", "random", "extend"],
                       weights=[12, 35, 22, 6, 8, 4, 13])[0]
    if kind == "valid":
        return base
    if kind == "flip":
        low_bit = 64 if rnd.random() < 0.8 else 0  # mostly past the 8-byte header start
        return flip_bits(base, [rnd.randrange(low_bit, len(base) * 8) for _ in range(rnd.randint(1, 4))])
    if kind == "truncate":
        return base[: rnd.randrange(len(base) + 1)]
    if kind == "retag":
        return retag(base, rnd.choice([rnd.randint(-3, 100), rnd.choice(sorted(api_key_map))]), rnd.randint(-2, 20))
    if kind == "splice":
        other = rnd.choice(CORPUS)
        return base[: rnd.randrange(len(base) + 1)] + other[rnd.randrange(len(other) + 1):]
    if kind == "random":
        return rnd.randbytes(rnd.randint(0, 64))
    return base + rnd.randbytes(rnd.randint(1, 16))


def lying_segment(rnd: random.Random) -> bytes:
    """A size prefix that does not match what follows."""
    payload = rnd.choice(CORPUS)
    kind = rnd.choice(["longer", "shorter", "negative", "oversize"])
    if kind == "longer":
        return struct.pack(">i", len(payload) + rnd.randint(1, 100)) + payload
    if kind == "shorter":
        return struct.pack(">i", rnd.randrange(len(payload))) + payload
    if kind == "negative":
        return struct.pack(">i", rnd.randint(-(2**31), -1)) + payload
    return struct.pack(">i", rnd.randint(MAX_FRAME_BYTES + 1, 2**31 - 1)) + payload


def bulk_payloads(seed: int, count: int) -> tuple[list[bytes], bytes | None]:
    """`count` mutated payloads, and sometimes one lying size-prefixed segment."""
    rnd = random.Random(seed)
    payloads = [random_payload(rnd) for _ in range(count)]
    return payloads, lying_segment(rnd) if rnd.random() < 0.3 else None


corpus_index = st.integers(0, len(CORPUS) - 1)
structured_payload = st.one_of(
    corpus_index.map(lambda i: CORPUS[i]),
    st.tuples(corpus_index, st.lists(st.integers(0, 1 << 16), min_size=1, max_size=4)).map(
        lambda t: flip_bits(CORPUS[t[0]], t[1])),
    st.tuples(corpus_index, st.integers(0, 400)).map(lambda t: CORPUS[t[0]][: t[1]]),
    st.tuples(corpus_index, st.integers(-3, 100), st.integers(-2, 20)).map(lambda t: retag(CORPUS[t[0]], t[1], t[2])),
    st.binary(max_size=40),
)


# --- oracle ------------------------------------------------------------------------------------------------


@dataclass
class Prediction:
    frames: list[bytes] = field(default_factory=list)  # frames the server will process, in order
    replies: bytes = b""  # exactly what it will send
    handler_calls: list[tuple[int, int, int]] = field(default_factory=list)
    stream_end: int = 0  # bytes worth sending: nothing after the point where the server closes


def split_like_kafka(stream: bytes) -> Iterator[tuple[bytes | None, int]]:
    """(frame, end offset) per complete frame; (None, end) for a bad prefix; stops at a truncated frame."""
    offset = 0
    while offset + 4 <= len(stream):
        (size,) = struct.unpack_from(">i", stream, offset)
        if size < 0 or size > MAX_FRAME_BYTES:
            yield None, offset + 4
            return
        if offset + 4 + size > len(stream):
            return
        yield stream[offset + 4: offset + 4 + size], offset + 4 + size
        offset += 4 + size


@dataclass
class Oracle:
    """A local Dispatcher (same registry shape, its own handler) plus the codec, memoised per frame."""

    dispatcher: Dispatcher
    loop: asyncio.AbstractEventLoop
    outcomes: dict[bytes, Outcome] = field(default_factory=dict)
    handled: dict[bytes, tuple[int, int, int] | None] = field(default_factory=dict)

    def outcome(self, frame: bytes) -> Outcome:
        if frame not in self.outcomes:
            self.outcomes[frame] = self.loop.run_until_complete(self.dispatcher.dispatch(frame, ORACLE_CONNECTION))
        return self.outcomes[frame]

    def handler_call(self, frame: bytes) -> tuple[int, int, int] | None:
        """What the server's handler must record for this frame: decided by the codec alone."""
        if frame not in self.handled:
            try:
                decoded = decode_request(frame)
            except RequestDecodeError:
                self.handled[frame] = None
            else:
                is_built_in = decoded.api_key == 18
                call = (decoded.api_key, decoded.api_version, decoded.correlation_id)
                self.handled[frame] = None if is_built_in else call
        return self.handled[frame]

    def predict(self, stream: bytes) -> Prediction:
        prediction = Prediction(stream_end=len(stream))
        replies = []
        for frame, end in split_like_kafka(stream):
            if frame is None:
                prediction.stream_end = end
                break
            prediction.frames.append(frame)
            outcome = self.outcome(frame)
            if isinstance(outcome, CloseConnection):
                prediction.stream_end = end
                break
            assert isinstance(outcome, Reply)
            replies.append(encode_frame(outcome.payload))
        prediction.replies = b"".join(replies)
        calls = (self.handler_call(frame) for frame in prediction.frames)
        prediction.handler_calls = [call for call in calls if call is not None]
        return prediction


# --- the fuzz run ------------------------------------------------------------------------------------------


@dataclass
class FuzzRun:
    server: ThreadedServer
    handler: RecordingHandler
    oracle: Oracle
    connections: int = 0
    frames_processed: int = 0
    frames_decoded: int = 0

    def closes_connection(self, payload: bytes) -> bool:
        return isinstance(self.oracle.outcome(payload), CloseConnection)

    def connections_for(self, payloads: list[bytes], lie: bytes | None) -> list[bytes]:
        """Streams that get every payload processed: answerable frames first, one closing frame last."""
        closing = [self.closes_connection(p) for p in payloads]
        closers = [p for p, c in zip(payloads, closing, strict=True) if c]
        answerable = [p for p, c in zip(payloads, closing, strict=True) if not c]
        count = max(1, len(closers))
        streams = []
        for i in range(count):
            chunk = answerable[i::count] + closers[i: i + 1]
            streams.append(b"".join(encode_frame(p) for p in chunk))
        if lie is not None:
            streams[-1] = streams[-1] + lie if not closers else streams[-1]
            streams.append(encode_frame(CORPUS[0]) + lie)
        return streams

    def run_connection(self, stream: bytes) -> None:
        prediction = self.oracle.predict(stream)
        calls_before = len(self.handler.calls)
        with RawClient(self.server.address) as client:
            try:
                client.send_raw(stream[: prediction.stream_end])
                client.half_close()
            except OSError:
                pass  # the server may close first; what it sent is still checked below
            received = client.read_until_closed()
        assert received == prediction.replies
        seen = [(r.api_key, r.api_version, r.correlation_id) for r in self.handler.calls[calls_before:]]
        assert seen == prediction.handler_calls
        self.connections += 1
        self.frames_processed += len(prediction.frames)
        self.frames_decoded += len(prediction.handler_calls)


@pytest.fixture(scope="module")
def fuzz_run() -> Iterator[FuzzRun]:
    handler = RecordingHandler()
    oracle_loop = asyncio.new_event_loop()
    oracle = Oracle(Dispatcher(full_registry(RecordingHandler())), oracle_loop)
    options = ServerOptions(max_frame_bytes=MAX_FRAME_BYTES)
    with threaded_server(Dispatcher(full_registry(handler)), options) as server:
        yield FuzzRun(server, handler, oracle)
        assert_api_versions_still_exact(server)
        assert server.server.stats.connections_open <= 1
    oracle_loop.close()


def assert_api_versions_still_exact(server: ThreadedServer) -> None:
    request = ApiVersionsRequestV3(client_software_name="kcoord-fuzz", client_software_version="1")
    with RawClient(server.address) as client:
        client.send_frame(encode_request(request, correlation_id=424242, client_id="after-fuzz"))
        correlation_id, body = decode_response(18, 3, client.read_frame() or b"")
    assert correlation_id == 424242 and isinstance(body, ApiVersionsResponseV3)
    assert body.error_code == ErrorCode.none
    listed = {(k.api_key, k.min_version, k.max_version) for k in body.api_keys}
    assert listed == {(key, *kio_version_range(key)) for key in api_key_map}  # type: ignore[misc]


def fuzz(run: FuzzRun, examples: int) -> int:
    """Run `examples` hypothesis examples; returns the number of frames the server processed."""
    started = time.perf_counter()
    before = run.frames_processed

    @settings(max_examples=examples, deadline=None, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(structured=st.lists(structured_payload, max_size=20), seed=st.integers(0, 2**32 - 1))
    def one_example(structured: list[bytes], seed: int) -> None:
        payloads, lie = bulk_payloads(seed, BULK_FRAMES_PER_EXAMPLE)
        payloads = structured + payloads
        random.Random(seed).shuffle(payloads)
        for stream in run.connections_for(payloads, lie):
            run.run_connection(stream)

    one_example()
    elapsed_s = time.perf_counter() - started
    processed = run.frames_processed - before
    print(f"\nfuzz: {processed} frames processed by the server in {elapsed_s:.1f}s, {processed / elapsed_s:,.0f} "
          f"frames/s; so far {run.connections} connections, {run.frames_decoded} frames decoded and handled")
    return processed


def test_fuzz_5k_frames(fuzz_run: FuzzRun) -> None:
    assert fuzz(fuzz_run, examples=32) >= 5_000


@pytest.mark.slow
def test_fuzz_100k_frames(fuzz_run: FuzzRun) -> None:
    assert fuzz(fuzz_run, examples=660) >= 100_000
