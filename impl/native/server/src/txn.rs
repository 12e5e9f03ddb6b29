//! The transaction coordinator's side of `Broker`: its records, producer ids, the spec's decisions applied, the
//! markers and Complete records, the partitions' verification.

use super::*;

impl Broker {
    /// The instance's record in its transaction-log partition (TransactionLogKey v0, TransactionLogValue v1: the
    /// fields `persist TransactionLogValue` lists, the tagged ones written when not at their defaults).
    pub(crate) fn write_txn(&mut self, tid: &str, ts: i64) -> Result<(), i16> {
        let txn = &self.txns[tid];
        let unwritable = |why: WireError| refused("a transaction-log record", &why.to_string());
        let mut key = Vec::with_capacity(4 + tid.len());
        put_i16(&mut key, 0);
        put_string(&mut key, false, tid).map_err(unwritable)?;
        let mut value = Vec::with_capacity(64);
        put_i16(&mut value, 1);
        put_i64(&mut value, txn.producer_id);
        put_i16(&mut value, txn.producer_epoch as i16);
        put_i32(&mut value, txn.txn_timeout_ms as i32);
        put_i8(&mut value, status(txn.state));
        // the partitions by topic (names sorted, as the instance's set is)
        let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
        for name in &txn.partitions {
            let Some((topic, partition)) = split_partition(name) else {
                return Err(refused(
                    "a transaction-log record",
                    "a partition name that is not topic-N",
                ));
            };
            match by_topic.iter_mut().find(|(t, _)| *t == topic) {
                Some((_, ps)) => ps.push(partition),
                None => by_topic.push((topic, vec![partition])),
            }
        }
        put_uvarint(&mut value, by_topic.len() as u32 + 1);
        for (topic, ps) in &by_topic {
            put_string(&mut value, true, topic).map_err(unwritable)?;
            put_uvarint(&mut value, ps.len() as u32 + 1);
            for p in ps {
                put_i32(&mut value, *p);
            }
            put_uvarint(&mut value, 0);
        }
        put_i64(&mut value, ts);
        put_i64(&mut value, txn.txn_start_timestamp_ms);
        let tags: Vec<(u32, Vec<u8>)> = [
            (
                0,
                txn.previous_producer_id != -1,
                txn.previous_producer_id.to_be_bytes().to_vec(),
            ),
            (
                1,
                txn.next_producer_id != -1,
                txn.next_producer_id.to_be_bytes().to_vec(),
            ),
            (
                2,
                txn.client_txn_version != 0,
                (txn.client_txn_version as i16).to_be_bytes().to_vec(),
            ),
        ]
        .into_iter()
        .filter(|(_, present, _)| *present)
        .map(|(tag, _, bytes)| (tag, bytes))
        .collect();
        put_uvarint(&mut value, tags.len() as u32);
        for (tag, bytes) in tags {
            put_uvarint(&mut value, tag);
            put_uvarint(&mut value, bytes.len() as u32);
            value.extend_from_slice(&bytes);
        }
        let mut b = batch(&[(Some(&key), Some(&value))], ts, -1, -1, -1, 0);
        self.append(TXN_TOPIC, partition_for(tid), &mut b, 1).map(|_| ())
    }

    /// `fresh` may be handed out: below the limit kcoord serve's `producer-id-blocks` file records, or the file moved on
    /// a block (1,000 ids, as kcoord's allocator and Kafka's) first — written, synced and renamed into place, so that
    /// no server on this folder hands out an id twice. COORDINATOR_LOAD_IN_PROGRESS (retriable) if it cannot be.
    pub(crate) fn reserve_pid(&mut self, fresh: i64) -> Result<(), i16> {
        if fresh < self.pid_limit {
            return Ok(());
        }
        let limit = (fresh / PRODUCER_ID_BLOCK_SIZE + 1) * PRODUCER_ID_BLOCK_SIZE;
        if let Err(e) = recovery::write_producer_id_blocks(&self.dir, limit) {
            eprintln!(
                "kcoord-native: {}: {e}",
                self.dir.join(recovery::PRODUCER_ID_BLOCKS).display()
            );
            return Err(COORDINATOR_LOAD_IN_PROGRESS);
        }
        self.pid_limit = limit;
        Ok(())
    }

    /// A decision taken: a transition's post-state becomes the instance (its record written when the row says so; a
    /// fresh producer id the post-state holds is taken), a rejection changes nothing. The row's answer.
    pub(crate) fn apply(&mut self, tid: &str, decision: Decision, fresh_pid: Option<i64>, ts: i64) -> Result<i16, i16> {
        let row = decision.row;
        if let Some(post) = decision.post {
            if let Some(fresh) = fresh_pid.filter(|&f| post.producer_id == f || post.next_producer_id == f) {
                self.next_pid = fresh;
            }
            *self.txns.get_mut(tid).unwrap() = post;
            if row.writes {
                self.write_txn(tid, ts)?;
            }
        }
        Ok(row.code)
    }

    /// Markers and the Complete record once the instance is in PrepareCommit or PrepareAbort (at once: the logs are
    /// local, so the markers are written as soon as the Prepare record is; a fence's PrepareEpochFence is aborted
    /// first, by FenceAbort).
    pub(crate) fn finish(&mut self, tid: &str, ts: i64) -> Result<(), i16> {
        if self.txns[tid].state == State::PrepareEpochFence {
            let d = transaction::decide_FenceAbort(
                &self.txns[tid],
                &args::FenceAbort {
                    server_txn_version: 2,
                    now_ms: ts,
                },
                false,
            )
            .map_err(|why| refused("FenceAbort", why))?;
            self.apply(tid, d, None, ts)?;
        }
        let (state, pid, epoch) = {
            let t = &self.txns[tid];
            (t.state, t.producer_id, t.producer_epoch as i16)
        };
        let commit = match state {
            State::PrepareCommit => true,
            State::PrepareAbort => false,
            _ => return Ok(()),
        };
        let mut mkey = Vec::with_capacity(4);
        put_i16(&mut mkey, 0);
        put_i16(&mut mkey, if commit { 1 } else { 0 });
        let mut mvalue = Vec::with_capacity(6);
        put_i16(&mut mvalue, 0);
        put_i32(&mut mvalue, 0);
        let names: Vec<String> = self.txns[tid].partitions.iter().cloned().collect();
        for name in names {
            let Some((t, p)) = self.partition_of(&name) else {
                continue;
            };
            let mut b = batch(
                &[(Some(&mkey), Some(&mvalue))],
                ts,
                pid,
                epoch,
                -1,
                TRANSACTIONAL | CONTROL,
            );
            self.append(t, p, &mut b, 1)?;
            if t == OFFSETS_TOPIC {
                if let Some(offsets) = self.pending_offsets.remove(&pid) {
                    if commit {
                        self.offsets.extend(offsets);
                    }
                }
            }
        }
        let d = transaction::decide_CompleteTxn(&self.txns[tid], &args::CompleteTxn { now_ms: ts }, false)
            .map_err(|why| refused("CompleteTxn", why))?;
        self.apply(tid, d, None, ts).map(|_| ())
    }

    /// AddPartitions (`txn_version` 2: Transactions V2's implicit add by a partition leader or the group
    /// coordinator; 0: AddPartitionsToTxn/AddOffsetsToTxn v3): the answer of the spec's row.
    pub(crate) fn add(
        &mut self,
        tid: &str,
        pid: i64,
        epoch: i16,
        parts: &[(usize, i32)],
        txn_version: i64,
        ts: i64,
    ) -> i16 {
        let Some(instance) = self.txns.get(tid) else {
            return INVALID_PRODUCER_ID_MAPPING;
        };
        let parts = parts.iter().map(|&(t, p)| self.partition_name(t, p)).collect();
        let a = args::AddPartitions {
            pid,
            epoch: epoch as i64,
            parts,
            txn_version,
            now_ms: ts,
        };
        match transaction::decide_AddPartitions(instance, &a, false) {
            Ok(d) => self.apply(tid, d, None, ts).unwrap_or_else(|code| code),
            Err(why) => refused("AddPartitions", why),
        }
    }

    /// Transactions V1's verification (VerifyPartition, KIP-890 part 1): the spec's answer for `(t, p)`.
    pub(crate) fn verify(&mut self, tid: &str, pid: i64, epoch: i16, (t, p): (usize, i32)) -> i16 {
        let Some(instance) = self.txns.get(tid) else {
            return INVALID_PRODUCER_ID_MAPPING;
        };
        let name = self.partition_name(t, p);
        match transaction::decide_VerifyPartition(
            instance,
            &args::VerifyPartition {
                pid,
                epoch: epoch as i64,
                p: name,
            },
            false,
        ) {
            Ok(d) => d.row.code,
            Err(why) => refused("VerifyPartition", why),
        }
    }

    /// The spec's EndTxnV1 or EndTxnV2, then the markers and the Complete record: the answer.
    pub(crate) fn end(&mut self, tid: &str, pid: i64, epoch: i64, result: TxnResult, v2: bool) -> i16 {
        if !self.txns.contains_key(tid) {
            return INVALID_PRODUCER_ID_MAPPING;
        }
        let fresh = self.next_pid + 1;
        if let Err(code) = self.reserve_pid(fresh) {
            return code;
        }
        let instance = &self.txns[tid];
        let now_ms = now_ms();
        let decided = if v2 {
            let a = args::EndTxnV2 {
                pid,
                epoch,
                result,
                new_producer_id: fresh,
                now_ms,
            };
            transaction::decide_EndTxnV2(instance, &a, false)
        } else {
            let a = args::EndTxnV1 {
                pid,
                epoch,
                result,
                now_ms,
            };
            transaction::decide_EndTxnV1(instance, &a, false)
        };
        match decided {
            Ok(d) => {
                let transition = d.row.kind != Kind::Reject;
                match self.apply(tid, d, v2.then_some(fresh), now_ms) {
                    Ok(code) if transition => self.finish(tid, now_ms).map(|_| code).unwrap_or_else(|c| c),
                    Ok(code) => code,
                    Err(code) => code,
                }
            }
            Err(why) => refused(if v2 { "EndTxnV2" } else { "EndTxnV1" }, why),
        }
    }
}
