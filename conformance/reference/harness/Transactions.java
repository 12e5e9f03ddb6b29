package kcoord.harness;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** The transactional clients: a producer's list of transactions, a fenced zombie, a restart mid-transaction, and
 * consume-transform-produce. Record values name the transactional id, the transaction and the record. */
final class Transactions {
    private Transactions() {
    }

    /** `--ops commit:3,abort:2,...`: one transaction per entry, with that many records spread over the partitions;
     * a last `open:N` writes its records and stops without ending the transaction. */
    static void producer(Args args) throws Exception {
        String topic = args.get("topic");
        String transactionalId = args.get("transactional-id");
        try (KafkaProducer<String, String> producer = Clients.producer(args, transactionalId)) {
            init(args, producer, "init");
            int partitions = producer.partitionsFor(topic).size();
            String[] ops = args.get("ops").split(",");
            for (int txn = 0; txn < ops.length; txn++) {
                String[] op = ops[txn].split(":");
                boolean commit = op[0].equals("commit");
                boolean open = op[0].equals("open");
                if (!commit && !open && !op[0].equals("abort") || open && txn != ops.length - 1) {
                    throw new IllegalArgumentException("--ops: commit:N or abort:N, and open:N last, got " + ops[txn]);
                }
                producer.beginTransaction();
                List<String> values = send(producer, topic, partitions, transactionalId + "/" + txn,
                    Integer.parseInt(op[1]));
                if (open) {  // left open: no EndTxn, as if the producer's process died
                    Out.emit("open", concat(new Object[] {"txn", txn, "values", values}, Clients.state(producer)));
                    producer.close(Duration.ZERO);
                    return;
                }
                if (commit) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
                Out.emit(op[0], concat(new Object[] {"txn", txn, "values", values}, Clients.state(producer)));
            }
        }
    }

    /** The first producer writes, the second one (same transactional id) initialises, then the first tries to go on. */
    static void zombie(Args args) throws Exception {
        String topic = args.get("topic");
        String transactionalId = args.get("transactional-id");
        KafkaProducer<String, String> zombie = Clients.producer(args, transactionalId);
        init(args, zombie, "init");
        int partitions = zombie.partitionsFor(topic).size();
        zombie.beginTransaction();
        send(zombie, topic, partitions, "zombie/before", 2);
        try (KafkaProducer<String, String> successor = Clients.producer(args, transactionalId)) {
            init(args, successor, "init-successor");
            List<String> errors = new ArrayList<>();
            try {
                send(zombie, topic, partitions, "zombie/after", 2);
                zombie.commitTransaction();
            } catch (Exception e) {
                errors.add(describe(e));
            }
            Out.emit("zombie", "errors", errors);
            successor.beginTransaction();
            List<String> values = send(successor, topic, partitions, "successor", 2);
            successor.commitTransaction();
            Out.emit("commit", concat(new Object[] {"values", values}, Clients.state(successor)));
        }
        zombie.close(Duration.ZERO);
    }

    /** A producer stops mid-transaction without ending it (as if its process died); a new one takes over. */
    static void restart(Args args) throws Exception {
        String topic = args.get("topic");
        String transactionalId = args.get("transactional-id");
        KafkaProducer<String, String> first = Clients.producer(args, transactionalId);
        init(args, first, "init");
        int partitions = first.partitionsFor(topic).size();
        first.beginTransaction();
        List<String> lost = send(first, topic, partitions, "lost", 3);
        Out.emit("open", concat(new Object[] {"values", lost}, Clients.state(first)));
        first.close(Duration.ZERO);  // no EndTxn: the coordinator still has the transaction open
        try (KafkaProducer<String, String> second = Clients.producer(args, transactionalId)) {
            init(args, second, "init-after-restart");
            second.beginTransaction();
            List<String> values = send(second, topic, partitions, "after-restart", 3);
            second.commitTransaction();
            Out.emit("commit", concat(new Object[] {"values", values}, Clients.state(second)));
        }
    }

    /** Read `--input` in group `--group` (read_committed), write each value upper-cased to `--output` and commit the
     * consumed offsets in the same transaction; `--abort-first true` aborts the first transaction and rewinds. */
    static void consumeTransformProduce(Args args) throws Exception {
        String input = args.get("input");
        String output = args.get("output");
        int expected = Integer.parseInt(args.get("expect"));
        boolean abortFirst = Boolean.parseBoolean(args.get("abort-first", "false"));
        long deadline = System.currentTimeMillis() + args.getInt("timeout-ms", 60_000);
        try (KafkaProducer<String, String> producer = Clients.producer(args, args.get("transactional-id"));
             KafkaConsumer<String, String> consumer = Clients.consumer(args, args.get("group"),
                 Clients.groupSettings(args))) {
            init(args, producer, "init");
            consumer.subscribe(List.of(input));
            int committed = 0;
            boolean aborted = false;
            while (committed < expected) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("timed out with " + committed + " of " + expected + " records");
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                Map<TopicPartition, Long> first = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(output, r.key(), r.value().toUpperCase()));
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    first.putIfAbsent(tp, r.offset());
                    next.put(tp, new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                if (abortFirst && !aborted) {
                    producer.abortTransaction();
                    first.forEach(consumer::seek);
                    aborted = true;
                    Out.emit("abort", concat(new Object[] {"records", records.count()}, Clients.state(producer)));
                } else {
                    producer.commitTransaction();
                    committed += records.count();
                    Out.emit("commit", concat(new Object[] {"records", records.count()}, Clients.state(producer)));
                }
            }
            Map<String, Long> offsets = new TreeMap<>();
            consumer.committed(consumer.assignment()).forEach((tp, o) -> offsets.put(tp.toString(),
                o == null ? -1 : o.offset()));
            Out.emit("committed", "offsets", offsets);
        }
    }

    private static void init(Args args, KafkaProducer<String, String> producer, String event) throws Exception {
        producer.initTransactions();
        Clients.checkVersion(args, producer);
        Out.emit(event, Clients.state(producer));
    }

    /** `count` records `prefix/i` to partition i % partitions, each acknowledged before the next is sent. */
    private static List<String> send(KafkaProducer<String, String> producer, String topic, int partitions,
                                     String prefix, int count) throws InterruptedException, ExecutionException {
        List<String> values = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String value = prefix + "/" + i;
            producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, value)).get();
            values.add(value);
        }
        return values;
    }

    /** An exception and its causes, as `Outer: Cause: Root` class names. */
    static String describe(Throwable e) {
        StringBuilder out = new StringBuilder(e.getClass().getSimpleName());
        for (Throwable c = e.getCause(); c != null && c != e; c = c.getCause()) {
            out.append(": ").append(c.getClass().getSimpleName());
            if (c.getCause() == c) {
                break;
            }
        }
        return out.toString();
    }

    static Object[] concat(Object[] a, Object[] b) {
        Object[] out = new Object[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
