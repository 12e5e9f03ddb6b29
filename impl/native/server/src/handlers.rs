//! One request in, one answer out: `Broker::handle` and every API's handler.

use super::*;

impl Broker {
    // -------------------------------------------------------------------------------------------- handlers

    /// CreateTopics v4: each topic created with its partition count (its assignments and configs read, not used).
    pub(crate) fn create_topics(&mut self, q: CreateTopicsRequest) -> CreateTopicsResponse {
        let topics = q
            .topics
            .into_iter()
            .map(|topic| CreatableTopicResult {
                error_code: self.create_topic(&topic.name, topic.num_partitions),
                name: topic.name,
                error_message: None,
                ..Default::default()
            })
            .collect();
        CreateTopicsResponse {
            throttle_time_ms: 0,
            topics,
        }
    }

    /// ApiVersions v0-4, as kcoord serve's (impl/server/api_versions.py) but listing what this server serves
    /// (`advertised`): v3+ with a client software name or version Kafka refuses → INVALID_REQUEST, nothing listed;
    /// v3 leaves out the supported features whose minimum is 0 (KAFKA-17492), v4 lists them all.
    pub(crate) fn api_versions(&self, q: ApiVersionsRequest, version: i16) -> ApiVersionsResponse {
        if version >= 3 && !(valid_software(&q.client_software_name) && valid_software(&q.client_software_version)) {
            return ApiVersionsResponse {
                error_code: INVALID_REQUEST,
                ..Default::default()
            };
        }
        let supported =
            FEATURES
                .iter()
                .filter(|f| version >= 4 || f.1 != 0)
                .map(|&(name, min_version, max_version, _)| SupportedFeatureKey {
                    name: name.to_owned(),
                    min_version,
                    max_version,
                });
        let finalized = FEATURES.iter().map(|&(name, _, _, level)| FinalizedFeatureKey {
            name: name.to_owned(),
            max_version_level: level,
            min_version_level: level,
        });
        ApiVersionsResponse {
            error_code: NONE,
            api_keys: advertised(),
            throttle_time_ms: 0,
            supported_features: supported.collect(),
            finalized_features_epoch: self.features_epoch,
            finalized_features: finalized.collect(),
            ..Default::default()
        }
    }

    /// Metadata v1-13, as kcoord serve's for one node: this node the only broker and the controller, cluster id
    /// `kcoord` (kcoord serve's default `--cluster-id`; kept in no file by either); every data topic (names sorted)
    /// or the requested ones (by name, or by id from v10; an id not known is left out, as kcoord serve does); a topic
    /// not known (the coordinator topics among them) → UNKNOWN_TOPIC_OR_PARTITION — none is created (kcoord serve's
    /// `auto.create.topics.enable` is on: there, a request allowing it creates the topic); every partition led by
    /// this node at epoch 0, its only replica and ISR.
    pub(crate) fn metadata(&self, q: MetadataRequest) -> MetadataResponse {
        let data = |t: &usize| *t != TXN_TOPIC && *t != OFFSETS_TOPIC;
        let named: Vec<(String, Option<usize>)> = match q.topics {
            None => {
                let mut all: Vec<usize> = (0..self.topics.len()).filter(data).collect();
                all.sort_by(|a, b| self.topics[*a].name.cmp(&self.topics[*b].name));
                all.into_iter()
                    .map(|t| (self.topics[t].name.clone(), Some(t)))
                    .collect()
            }
            Some(asked) => asked
                .into_iter()
                .filter_map(|topic| match topic.name {
                    Some(name) => {
                        let t = self.by_name.get(&name).copied().filter(data);
                        Some((name, t))
                    }
                    None if topic.topic_id == [0; 16] => None,
                    None => (0..self.topics.len())
                        .filter(data)
                        .find(|t| self.topics[*t].id == topic.topic_id)
                        .map(|t| (self.topics[t].name.clone(), Some(t))),
                })
                .collect(),
        };
        let topics = named
            .into_iter()
            .map(|(name, t)| self.topic_metadata(name, t))
            .collect();
        MetadataResponse {
            throttle_time_ms: 0,
            brokers: vec![MetadataResponseBroker {
                node_id: NODE_ID,
                host: "127.0.0.1".to_owned(),
                port: self.port,
                rack: None,
            }],
            cluster_id: Some("kcoord".to_owned()),
            controller_id: NODE_ID,
            topics,
            cluster_authorized_operations: i32::MIN, // Kafka's "omitted"
            error_code: NONE,
        }
    }

    pub(crate) fn topic_metadata(&self, name: String, t: Option<usize>) -> MetadataResponseTopic {
        let Some(t) = t else {
            return MetadataResponseTopic {
                error_code: UNKNOWN_TOPIC_OR_PARTITION,
                name: Some(name),
                topic_authorized_operations: i32::MIN,
                ..Default::default()
            };
        };
        let partitions = (0..self.topics[t].partitions.len() as i32)
            .map(|p| MetadataResponsePartition {
                error_code: NONE,
                partition_index: p,
                leader_id: NODE_ID,
                leader_epoch: 0,
                replica_nodes: vec![NODE_ID],
                isr_nodes: vec![NODE_ID],
                offline_replicas: vec![],
            })
            .collect();
        MetadataResponseTopic {
            error_code: NONE,
            name: Some(name),
            topic_id: self.topics[t].id,
            is_internal: false,
            partitions,
            topic_authorized_operations: i32::MIN,
        }
    }

    /// FindCoordinator v3: every coordinator is this node, whatever the key and its type.
    pub(crate) fn find_coordinator(&self) -> FindCoordinatorResponse {
        FindCoordinatorResponse {
            throttle_time_ms: 0,
            error_code: NONE,
            error_message: None,
            node_id: NODE_ID,
            host: "127.0.0.1".to_owned(),
            port: self.port,
            ..Default::default()
        }
    }

    /// InitProducerId v4: a fresh producer id for an idempotent producer; a transactional one's through the spec's
    /// InitProducerId (an open transaction it fences aborted at once).
    pub(crate) fn init_producer_id(&mut self, q: InitProducerIdRequest) -> InitProducerIdResponse {
        let answer = |error_code, producer_id, producer_epoch| InitProducerIdResponse {
            throttle_time_ms: 0,
            error_code,
            producer_id,
            producer_epoch,
        };
        let ts = now_ms();
        let fresh = self.next_pid + 1;
        if let Err(code) = self.reserve_pid(fresh) {
            return answer(code, -1, -1);
        }
        let Some(tid) = q.transactional_id else {
            self.next_pid = fresh;
            return answer(NONE, fresh, 0);
        };
        let instance = self
            .txns
            .entry(tid.clone())
            .or_insert_with(|| Instance::fresh(tid.clone()));
        let a = args::InitProducerId {
            expected_producer_id: q.producer_id,
            expected_epoch: q.producer_epoch as i64,
            timeout_ms: q.transaction_timeout_ms as i64,
            max_timeout_ms: MAX_TIMEOUT_MS,
            new_producer_id: fresh,
            now_ms: ts,
        };
        let code = match transaction::decide_InitProducerId(instance, &a, false) {
            Ok(d) => {
                let fences = d.post.as_ref().is_some_and(|p| p.state == State::PrepareEpochFence);
                match self.apply(&tid, d, Some(fresh), ts) {
                    // an open transaction fenced: aborted now, the client told to retry (as Kafka answers)
                    Ok(_) if fences => self
                        .finish(&tid, ts)
                        .map(|_| CONCURRENT_TRANSACTIONS)
                        .unwrap_or_else(|c| c),
                    Ok(code) => code,
                    Err(code) => code,
                }
            }
            Err(why) => refused("InitProducerId", why),
        };
        let t = &self.txns[&tid];
        if code == NONE {
            answer(code, t.producer_id, t.producer_epoch as i16)
        } else {
            answer(code, -1, -1)
        }
    }

    /// Produce v8 (Transactions V1: each transactional partition verified) or v12 (V2: the leader adds them).
    pub(crate) fn produce(&mut self, q: ProduceRequest, v2: bool) -> ProduceResponse {
        let ts = now_ms();
        // per topic its index among ours (None: unknown) and per partition its batch's head or the answer refusing
        // it; the partitions the transaction must hold (V2: the leader adds them)
        let mut heads: Vec<ProducedTopic> = Vec::with_capacity(q.topic_data.len());
        let mut adds: Vec<(usize, i32)> = Vec::new();
        let mut txn_key: Option<(i64, i16)> = None;
        for topic in &q.topic_data {
            let t = self.by_name.get(&topic.name).copied();
            let mut hs = Vec::with_capacity(topic.partition_data.len());
            for part in &topic.partition_data {
                let index = part.index;
                let head = match (t, &part.records) {
                    (Some(t), Some(b)) if index >= 0 && (index as usize) < self.topics[t].partitions.len() => {
                        batch_head(b).ok_or(CORRUPT_MESSAGE).inspect(|h| {
                            if h.transactional() {
                                adds.push((t, index));
                                txn_key = Some((h.pid, h.epoch));
                            }
                        })
                    }
                    (Some(_), None) => Err(CORRUPT_MESSAGE),
                    _ => Err(UNKNOWN_TOPIC_OR_PARTITION),
                };
                hs.push(head);
            }
            heads.push((t, hs));
        }
        let txn_errors = match txn_key {
            Some((pid, epoch)) => self.txn_answers(q.transactional_id.as_deref(), pid, epoch, &adds, v2, ts),
            None => HashMap::new(),
        };
        let mut responses = Vec::with_capacity(heads.len());
        for (topic, (t, hs)) in q.topic_data.into_iter().zip(heads) {
            let mut partition_responses = Vec::with_capacity(hs.len());
            for (part, head) in topic.partition_data.into_iter().zip(hs) {
                partition_responses.push(self.append_produced(t, part, head, &txn_errors));
            }
            responses.push(TopicProduceResponse {
                name: topic.name,
                partition_responses,
            });
        }
        ProduceResponse {
            responses,
            throttle_time_ms: 0,
            node_endpoints: Vec::new(),
        }
    }

    /// A Produce's transactional partitions `adds` (of producer `pid` at `epoch`), each with the transaction's answer:
    /// V2 one add of them all, V1 each one verified (and the message kcoord answers with it, as Kafka 4.0.2's
    /// ReplicaManager).
    pub(crate) fn txn_answers(
        &mut self,
        tid: Option<&str>,
        pid: i64,
        epoch: i16,
        adds: &[(usize, i32)],
        v2: bool,
        ts: i64,
    ) -> TxnAnswers {
        let Some(tid) = tid else {
            return adds.iter().map(|&tp| (tp, (INVALID_REQUEST, None))).collect();
        };
        if v2 {
            let code = verification_answer(self.add(tid, pid, epoch, adds, 2, ts));
            return adds.iter().map(|&tp| (tp, (code, None))).collect();
        }
        let mut answers = HashMap::with_capacity(adds.len());
        for &tp in adds {
            let answer = match self.verify(tid, pid, epoch, tp) {
                CONCURRENT_TRANSACTIONS => (
                    NOT_ENOUGH_REPLICAS,
                    Some(
                        "unable to verify the partition has been added to the transaction: CONCURRENT_TRANSACTIONS"
                            .to_owned(),
                    ),
                ), // inconclusive: not an add
                // Produce up to v10, refused before the log
                TRANSACTION_ABORTABLE => (
                    INVALID_TXN_STATE,
                    Some("Partition was not added to the transaction".to_owned()),
                ),
                code => (verification_answer(code), None),
            };
            answers.insert(tp, answer);
        }
        answers
    }

    /// One partition of a Produce (`t`: its topic's index, `head`: its batch's or the answer refusing it): the batch
    /// appended unless the transaction's answer or the partition's producer state refuses it; the partition's answer.
    pub(crate) fn append_produced(
        &mut self,
        t: Option<usize>,
        part: PartitionProduceData,
        head: Result<BatchHead, i16>,
        txn_errors: &TxnAnswers,
    ) -> PartitionProduceResponse {
        let index = part.index;
        // an error and the log start offset answered with it: -1 before the log (Kafka's UNKNOWN_LOG_APPEND_INFO:
        // the topic, the batch, the transaction's verification), the log's own (0 here: nothing is ever deleted) for
        // what the log's producer state refuses
        let mut error_message: Option<String> = None;
        let result = head.map_err(|code| (code, -1)).and_then(|h| {
            let t = t.expect("a batch's head is read only for a known topic");
            if h.transactional() {
                let (code, text) = &txn_errors[&(t, index)];
                if *code != NONE {
                    error_message.clone_from(text);
                    return Err((*code, -1));
                }
            }
            let producers = &mut self.topics[t].partitions[index as usize].producers;
            match producers.get(&h.pid) {
                Some(&(e, _)) if h.epoch < e => return Err((INVALID_PRODUCER_EPOCH, 0)),
                Some(&(e, last)) if h.epoch == e && h.seq != last.wrapping_add(1) => {
                    return Err((OUT_OF_ORDER_SEQUENCE_NUMBER, 0))
                }
                Some(&(e, _)) if h.epoch > e && h.seq != 0 => return Err((OUT_OF_ORDER_SEQUENCE_NUMBER, 0)),
                _ => {}
            }
            producers.insert(h.pid, (h.epoch, h.seq + h.count - 1));
            let mut b = part.records.expect("a batch's head is read only from a batch");
            self.append(t, index, &mut b, h.count).map_err(|code| (code, -1))
        });
        let (error_code, base_offset, log_start_offset) = match result {
            Ok(base) => (NONE, base, 0),
            Err((code, log_start)) => (code, -1, log_start),
        };
        PartitionProduceResponse {
            index,
            error_code,
            base_offset,
            log_append_time_ms: -1,
            log_start_offset,
            record_errors: Vec::new(),
            error_message,
            ..Default::default()
        }
    }

    /// TxnOffsetCommit v3 (Transactions V1: the offsets partition verified) or v5 (V2: added).
    pub(crate) fn txn_offset_commit(&mut self, q: TxnOffsetCommitRequest, v2: bool) -> TxnOffsetCommitResponse {
        let ts = now_ms();
        let (tid, pid, epoch) = (q.transactional_id.as_str(), q.producer_id, q.producer_epoch);
        let offsets_partition = partition_for(&q.group_id);
        let offsets = (OFFSETS_TOPIC, offsets_partition);
        let mut code = if v2 {
            verification_answer(self.add(tid, pid, epoch, &[offsets], 2, ts))
        } else {
            match self.verify(tid, pid, epoch, offsets) {
                TRANSACTION_ABORTABLE => INVALID_TXN_STATE, // a client before v4 does not know it
                code => verification_answer(code),
            }
        };
        if code == NONE {
            if let Err(e) = self.write_offsets(&q, offsets_partition, ts) {
                code = e;
            }
        }
        let topics = q
            .topics
            .into_iter()
            .map(|topic| TxnOffsetCommitResponseTopic {
                partitions: (topic.partitions.iter())
                    .map(|p| TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code,
                    })
                    .collect(),
                name: topic.name,
            })
            .collect();
        TxnOffsetCommitResponse {
            throttle_time_ms: 0,
            topics,
        }
    }

    /// A TxnOffsetCommit's offsets in the group's offsets partition — OffsetCommitKey v1 and OffsetCommitValue v3 per
    /// partition, one transactional batch — and pending until the transaction's marker.
    pub(crate) fn write_offsets(&mut self, q: &TxnOffsetCommitRequest, partition: i32, ts: i64) -> Result<(), i16> {
        let unwritable = |why: WireError| refused("an offset-commit record", &why.to_string());
        let mut keys_values: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for topic in &q.topics {
            for p in &topic.partitions {
                let mut key = Vec::with_capacity(8 + q.group_id.len() + topic.name.len());
                put_i16(&mut key, 1);
                put_string(&mut key, false, &q.group_id).map_err(unwritable)?;
                put_string(&mut key, false, &topic.name).map_err(unwritable)?;
                put_i32(&mut key, p.partition_index);
                let mut value = Vec::with_capacity(32);
                put_i16(&mut value, 3);
                put_i64(&mut value, p.committed_offset);
                put_i32(&mut value, p.committed_leader_epoch);
                put_string(&mut value, false, p.committed_metadata.as_deref().unwrap_or("")).map_err(unwritable)?;
                put_i64(&mut value, ts);
                keys_values.push((key, value));
            }
        }
        if keys_values.is_empty() {
            return Ok(());
        }
        let records: Vec<Record> = keys_values
            .iter()
            .map(|(k, v)| (Some(k.as_slice()), Some(v.as_slice())))
            .collect();
        let mut b = batch(&records, ts, q.producer_id, q.producer_epoch, -1, TRANSACTIONAL);
        self.append(OFFSETS_TOPIC, partition, &mut b, records.len() as i32)?;
        let pending = self.pending_offsets.entry(q.producer_id).or_default();
        for topic in &q.topics {
            for p in &topic.partitions {
                let key = (q.group_id.clone(), topic.name.clone(), p.partition_index);
                pending.push((key, p.committed_offset));
            }
        }
        Ok(())
    }

    /// AddPartitionsToTxn v3 (Transactions V1): the partitions added (AddPartitions, txn_version 0), every partition
    /// answered with the row's answer; an unknown one makes the others OPERATION_NOT_ATTEMPTED.
    pub(crate) fn add_partitions_to_txn(&mut self, q: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
        // each partition as (topic index, partition) when it is one of ours
        let known: Vec<Vec<Option<(usize, i32)>>> = (q.v3_and_below_topics.iter())
            .map(|topic| {
                let t = self.by_name.get(&topic.name).copied();
                (topic.partitions.iter())
                    .map(|&p| {
                        t.filter(|&t| p >= 0 && (p as usize) < self.topics[t].partitions.len())
                            .map(|t| (t, p))
                    })
                    .collect()
            })
            .collect();
        let code = match known.iter().flatten().copied().collect::<Option<Vec<(usize, i32)>>>() {
            Some(parts) => self.add(
                &q.v3_and_below_transactional_id,
                q.v3_and_below_producer_id,
                q.v3_and_below_producer_epoch,
                &parts,
                0,
                now_ms(),
            ),
            None => OPERATION_NOT_ATTEMPTED,
        };
        let results = (q.v3_and_below_topics.into_iter().zip(&known))
            .map(|(topic, ks)| AddPartitionsToTxnTopicResult {
                results_by_partition: (topic.partitions.iter().zip(ks))
                    .map(|(&p, k)| AddPartitionsToTxnPartitionResult {
                        partition_index: p,
                        partition_error_code: if k.is_some() { code } else { UNKNOWN_TOPIC_OR_PARTITION },
                    })
                    .collect(),
                name: topic.name,
            })
            .collect();
        AddPartitionsToTxnResponse {
            throttle_time_ms: 0,
            results_by_topic_v3_and_below: results,
            ..Default::default()
        }
    }

    /// AddOffsetsToTxn v3: the group's offsets partition added (AddPartitions, txn_version 0).
    pub(crate) fn add_offsets_to_txn(&mut self, q: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
        let offsets = (OFFSETS_TOPIC, partition_for(&q.group_id));
        let code = self.add(
            &q.transactional_id,
            q.producer_id,
            q.producer_epoch,
            &[offsets],
            0,
            now_ms(),
        );
        AddOffsetsToTxnResponse {
            throttle_time_ms: 0,
            error_code: code,
        }
    }

    /// EndTxn v3 (Transactions V1: EndTxnV1, no epoch bump, no producer id in the answer) or v5 (V2: EndTxnV2, the
    /// epoch bumped, the answer carrying the producer id and epoch to use next).
    pub(crate) fn end_txn(&mut self, q: EndTxnRequest, v2: bool) -> EndTxnResponse {
        let tid = q.transactional_id.as_str();
        let result = if q.committed {
            TxnResult::COMMIT
        } else {
            TxnResult::ABORT
        };
        let code = self.end(tid, q.producer_id, q.producer_epoch as i64, result, v2);
        let (producer_id, producer_epoch) = match (v2, code, self.txns.get(tid)) {
            (true, NONE, Some(t)) => (t.producer_id, t.producer_epoch as i16),
            _ => (-1, -1), // v3 has neither field
        };
        EndTxnResponse {
            throttle_time_ms: 0,
            error_code: code,
            producer_id,
            producer_epoch,
        }
    }

    /// One request frame (without its size): the answer's frame (with its size), or why the connection closes.
    /// The header and the body are read, the answer's header and body written, by kcoord-wire.
    pub(crate) fn handle(&mut self, frame: &[u8]) -> Result<Vec<u8>, Refusal> {
        let (api_key, version) = match frame {
            [k0, k1, v0, v1, ..] => (i16::from_be_bytes([*k0, *k1]), i16::from_be_bytes([*v0, *v1])),
            _ => return Err(Refusal::Short { length: frame.len() }),
        };
        if api_key == API_VERSIONS && !served(api_key, version) {
            // checked before the body is read, as Kafka and kcoord serve do: a newer version's need not be readable
            return self.unsupported_api_versions(frame);
        }
        if !served(api_key, version) {
            return Err(Refusal::Unserved { api_key, version });
        }
        let covered = "kcoord-wire covers every request SERVED lists";
        let unreadable = |why| Refusal::Unreadable { api_key, version, why };
        let mut r = Reader::new(frame);
        let header_version = request_header_version(api_key, version).expect(covered);
        let header = RequestHeader::decode(&mut r, header_version).map_err(unreadable)?;
        let request = Request::decode(api_key, version, &mut r).map_err(unreadable)?;
        // bytes after the body (librdkafka 2.16's Metadata v13 has 3) are ignored, as kcoord serve's codec does
        self.wrote = false;
        let response = match request {
            Request::Produce(q) => Response::Produce(self.produce(q, version >= 12)),
            Request::FindCoordinator(_) => Response::FindCoordinator(self.find_coordinator()),
            Request::ApiVersions(q) => Response::ApiVersions(self.api_versions(q, version)),
            Request::Metadata(q) => Response::Metadata(self.metadata(q)),
            Request::CreateTopics(q) => Response::CreateTopics(self.create_topics(q)),
            Request::InitProducerId(q) => Response::InitProducerId(self.init_producer_id(q)),
            Request::AddPartitionsToTxn(q) => Response::AddPartitionsToTxn(self.add_partitions_to_txn(q)),
            Request::AddOffsetsToTxn(q) => Response::AddOffsetsToTxn(self.add_offsets_to_txn(q)),
            Request::EndTxn(q) => Response::EndTxn(self.end_txn(q, version >= 5)),
            Request::TxnOffsetCommit(q) => Response::TxnOffsetCommit(self.txn_offset_commit(q, version >= 5)),
            _ => unreachable!("SERVED lists only the APIs answered here"),
        };
        let header_version = response_header_version(api_key, version).expect(covered);
        framed(header.correlation_id, header_version, &response, version).map_err(|why| Refusal::Unwritable {
            api_key,
            version,
            why,
        })
    }

    /// An ApiVersions request of a version not served: kcoord serve's KIP-511 fallback, a v0 answer (v0 header)
    /// carrying UNSUPPORTED_VERSION and every advertised range, so the client retries with the newest listed.
    pub(crate) fn unsupported_api_versions(&self, frame: &[u8]) -> Result<Vec<u8>, Refusal> {
        let Some(id) = frame.get(4..8) else {
            return Err(Refusal::Short { length: frame.len() });
        };
        let correlation_id = i32::from_be_bytes(id.try_into().expect("4 bytes"));
        let response = Response::ApiVersions(ApiVersionsResponse {
            error_code: UNSUPPORTED_VERSION,
            api_keys: advertised(),
            ..Default::default()
        });
        framed(correlation_id, 0, &response, 0).map_err(|why| Refusal::Unwritable {
            api_key: API_VERSIONS,
            version: 0,
            why,
        })
    }
}

/// An answer's frame: its size, its header (`header_version`), its body (`version`).
fn framed(correlation_id: i32, header_version: i16, response: &Response, version: i16) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&[0; 4]);
    ResponseHeader { correlation_id }.encode(&mut out, header_version)?;
    response.encode(&mut out, version)?;
    let size = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&size.to_be_bytes());
    Ok(out)
}
