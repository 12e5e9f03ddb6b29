package kcoord.harness;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;

/** Consumers: a group-less reader of a whole topic, and the members of one consumer group. */
final class Consumers {
    private Consumers() {
    }

    /** Every record of `--topic` visible at `--isolation` (read_committed: below the last stable offset). */
    static void read(Args args) {
        String topic = args.get("topic");
        long deadline = System.currentTimeMillis() + args.getInt("timeout-ms", 30_000);
        try (KafkaConsumer<String, String> consumer = Clients.consumer(args, null, Map.of())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            List<Map<String, Object>> records = new ArrayList<>();
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("timed out before the end offsets " + end);
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    Map<String, Object> record = new LinkedHashMap<>();
                    record.put("partition", r.partition());
                    record.put("offset", r.offset());
                    record.put("key", r.key());
                    record.put("value", r.value());
                    records.add(record);
                }
            }
            Map<String, Long> ends = new TreeMap<>();
            end.forEach((tp, o) -> ends.put(tp.toString(), o));
            Out.emit("records", "records", records, "end_offsets", ends);
        }
    }

    /**
     * `--members N` consumers of group `--group` on `--topic` (`--protocol consumer|classic`, `--assignor`): the first
     * joins alone and gets every partition; the others join and the partitions are split between all of them; then
     * the first leaves and the rest take its partitions over. Each phase is reported once the assignments settle.
     */
    static void group(Args args) throws InterruptedException {
        String topic = args.get("topic");
        int count = args.getInt("members", 2);
        long phaseMs = args.getInt("timeout-ms", 60_000);
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            members.add(new Member(i, args, topic));
        }
        Set<Integer> all = new TreeSet<>();
        try (KafkaConsumer<String, String> probe = Clients.consumer(args, null, Map.of())) {
            probe.partitionsFor(topic).forEach(p -> all.add(p.partition()));
        }
        try {
            members.get(0).start();
            phase(1, members.subList(0, 1), all, phaseMs);
            members.subList(1, count).forEach(Member::start);
            phase(2, members, all, phaseMs);
            members.get(0).stop();
            phase(3, members.subList(1, count), all, phaseMs);
            Set<String> consumed = new TreeSet<>();
            long deadline = System.currentTimeMillis() + phaseMs;
            int expected = args.getInt("expect", 0);
            do {  // `--expect N`: until the group has read N distinct values (the last member commits them)
                consumed.clear();
                members.forEach(m -> consumed.addAll(m.values));
                if (consumed.size() < expected) {
                    Thread.sleep(50);
                }
            } while (consumed.size() < expected && System.currentTimeMillis() < deadline);
            Out.emit("consumed", "values", consumed);
        } finally {
            members.forEach(Member::stop);
        }
    }

    /**
     * `--members N` consumers of group `--group` on `--topic` that join and stay until stdin closes (what an admin tool
     * describes while a group runs); "settled" is printed once they own every partition between them, with their
     * member ids. `--commit false`: they read but commit nothing (so what they have read by then shows nowhere);
     * `--protocols consumer,classic`: member i speaks the i-th (a classic member in a KIP-848 group), the first member
     * alone until it owns every partition, then the others; `--static true`:
     * each has a group.instance.id; `--pattern RE2`: they subscribe to a regular expression the broker resolves.
     */
    static void hold(Args args) throws Exception {
        String topic = args.get("topic");
        int count = args.getInt("members", 1);
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            members.add(new Member(i, args, topic));
        }
        Set<Integer> all = new TreeSet<>();
        try (KafkaConsumer<String, String> probe = Clients.consumer(args, null, Map.of())) {
            probe.partitionsFor(topic).forEach(p -> all.add(p.partition()));
        }
        long phaseMs = args.getInt("timeout-ms", 60_000);
        try {
            if (args.get("protocols", "").contains(",")) {
                // a mixed group: the first member (the group's own protocol) makes the group before the others join.
                // Started together, a classic member could make a classic group whose first join phase is still
                // open when the consumer member's heartbeat asks to upgrade it: Kafka 4.0.2 then fails the request
                // (fromClassicGroup's protocolName().get() on no protocol) and kcoord refuses it UNKNOWN_SERVER_ERROR
                // (ClassicGroup's row 138): either broker's client then raised UnknownServerException at random.
                members.get(0).start();
                phase(0, members.subList(0, 1), all, phaseMs);
                members.subList(1, count).forEach(Member::start);
            } else {
                members.forEach(Member::start);
            }
            phase(1, members, all, phaseMs);
            while (members.stream().anyMatch(m -> m.memberId.isEmpty())) {
                Thread.sleep(20);  // the poll that brought the assignment has not returned yet
            }
            Map<String, String> ids = new TreeMap<>();
            members.forEach(m -> ids.put(String.valueOf(m.index), m.memberId));
            Out.emit("settled", "member_ids", ids);
            while (System.in.read() >= 0) {
                // until the driver closes our stdin
            }
        } finally {
            members.forEach(Member::stop);
        }
    }

    /** Wait until `running` cover `all` partitions, each one owned once, each member owning some; report it. */
    private static void phase(int number, List<Member> running, Set<Integer> all, long timeoutMs)
            throws InterruptedException {
        Predicate<List<Member>> settled = ms -> {
            Set<Integer> seen = new HashSet<>();
            for (Member m : ms) {
                if (m.owned.isEmpty() && all.size() >= ms.size()) {
                    return false;
                }
                for (int p : m.owned) {
                    if (!seen.add(p)) {
                        return false;
                    }
                }
            }
            return seen.equals(all);
        };
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!settled.test(running)) {
            for (Member m : running) {
                if (m.failure != null) {
                    throw m.failure;
                }
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("phase " + number + " did not settle: " + assignments(running));
            }
            Thread.sleep(50);
        }
        Out.emit("phase", "phase", number, "assignments", assignments(running));
    }

    private static Map<String, Object> assignments(List<Member> members) {
        Map<String, Object> out = new TreeMap<>();
        members.forEach(m -> out.put(String.valueOf(m.index), new TreeSet<>(m.owned)));
        return out;
    }

    /** One member: a consumer polled by its own thread (KafkaConsumer is single-threaded), committing what it read. */
    private static final class Member implements ConsumerRebalanceListener {
        final int index;
        final Set<Integer> owned = ConcurrentHashMap.newKeySet();
        final Set<String> values = ConcurrentHashMap.newKeySet();
        private final KafkaConsumer<String, String> consumer;
        private final String topic;
        private final Thread thread;
        private volatile boolean running = true;
        private volatile RuntimeException failure;
        volatile String memberId = "";
        private final boolean commits;
        private final String pattern;  // a regular expression the broker resolves (KIP-848), instead of the topic

        Member(int index, Args args, String topic) {
            this.index = index;
            this.topic = topic;
            this.commits = Boolean.parseBoolean(args.get("commit", "true"));
            String[] protocols = args.get("protocols", args.get("protocol", "classic")).split(",");
            Map<String, String> settings = new LinkedHashMap<>(Clients.groupSettings(args,
                protocols[index % protocols.length]));
            settings.put("client.id", args.get("group") + "-m" + index);  // names the admin tools show
            if (Boolean.parseBoolean(args.get("static", "false"))) {
                settings.put("group.instance.id", args.get("group") + "-i" + index);
            }
            this.pattern = args.get("pattern", null);
            this.consumer = Clients.consumer(args, args.get("group"), settings);
            this.thread = new Thread(this::loop, "member-" + index);
        }

        void start() {
            thread.start();
        }

        private void loop() {
            try {
                if (pattern == null) {
                    consumer.subscribe(List.of(topic), this);
                } else {
                    consumer.subscribe(new SubscriptionPattern(pattern), this);
                }
                while (running) {
                    int n = 0;
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        values.add(r.value());
                        n++;
                    }
                    memberId = consumer.groupMetadata().memberId();
                    if (n > 0 && commits) {
                        commit();
                    }
                }
            } catch (RuntimeException e) {
                failure = e;
                Out.emit("member-error", "member", index, "error", Transactions.describe(e));
            } finally {
                if (commits && failure == null) {
                    try {
                        commit();  // what was read last, before leaving
                    } catch (RuntimeException e) {
                        Out.emit("commit-refused", "member", index, "error", Transactions.describe(e));
                    }
                }
                consumer.close(Duration.ofSeconds(10));
                owned.clear();
            }
        }

        /** Commit what was read; during a cooperative rebalance the commit is refused and the next poll retries it. */
        private void commit() {
            try {
                consumer.commitSync();
            } catch (RebalanceInProgressException | CommitFailedException e) {
                Out.emit("commit-refused", "member", index, "error", e.getClass().getSimpleName());
            }
        }

        void stop() {
            running = false;
            try {
                thread.join(20_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            partitions.forEach(tp -> owned.add(tp.partition()));
            Out.emit("assigned", "member", index, "partitions", numbers(partitions));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            partitions.forEach(tp -> owned.remove(tp.partition()));
            Out.emit("revoked", "member", index, "partitions", numbers(partitions));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            partitions.forEach(tp -> owned.remove(tp.partition()));
            Out.emit("lost", "member", index, "partitions", numbers(partitions));
        }

        private static Set<Integer> numbers(Collection<TopicPartition> partitions) {
            Set<Integer> out = new TreeSet<>();
            partitions.forEach(tp -> out.add(tp.partition()));
            return out;
        }
    }
}
