"""The wire-level conformance suite: the server scenarios of `kcoord serve`, run with real Kafka clients
(kafka-python, aiokafka, confluent-kafka) and raw wire requests only, against any Kafka-compatible broker.

Modules: `target` (where to run: bootstrap, names, timeouts, optional hooks to restart the broker or stop a node;
topic/produce/read helpers), `ownership` (client-side partition ownership log and its exclusivity check), `members`
(consumer-group members per client, each polling in the background), `producers` (transactional producers per
client behind one interface), `raw` (hand-built wire requests), `observe` (what a scenario observed, with the rule
each observation is compared by), `looks` (reading groups and transactions from their coordinators for the
observations), `scenarios` (the scenarios and their registry), `runner` (run a selection, print the pass/fail
table), `compare` (the same scenarios on two brokers and the table of what differs).
Must not import: `kcoord.impl` internals beyond the wire codec, `kcoord.cli` — the suite sees the broker only
through the Kafka protocol.
"""
