"""The coordinator runtime: shards per coordinator-log partition, the write path, timers, clocks and traces.

Owns: Kafka's `CoordinatorRuntime` pattern, restated. A handler reads durable state and returns a `Plan` (the spec's
decisions and the records that describe them); the records are appended to the shard's log as one batch, and only
when they are durable are the decisions applied — the live form of `replay` — and the response released. Loading a
partition replays its log through the same `replay`. Coordinator-specific code (transactions, groups) plugs in
through `ShardSpec`.
Must not import: `kcoord.model`.
"""
