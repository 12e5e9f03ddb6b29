"""The differential fuzzer: random sequences of group and transaction requests from several raw clients, sent to two
Kafka-compatible brokers in lockstep (kcoord and Apache Kafka), every response compared modulo shape rules.

Modules: `channel` (raw connections with requests in flight, one broker's nodes, coordinators and topics), `steps`
(the steps a program is made of, and the hypothesis strategy that draws programs), `actors` (the clients' state on
one broker: how a step becomes a request and what the answer changes), `normalize` (a response as the comparison sees
it: ids by order of first appearance, node ids and timestamps by shape), `lockstep` (one program on both brokers,
step by step; the first difference ends it), `REGRESSIONS` (shrunk programs that once differed).
Must not import: `kcoord.cli`; from `kcoord.impl` only the wire codec and the record batch encoder (the brokers are
reached only through their sockets).
"""
