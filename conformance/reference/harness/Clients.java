package kcoord.harness;

import java.lang.reflect.Field;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.ProducerIdAndEpoch;

/**
 * How the harness builds Kafka's clients, and what it reads from a producer's TransactionManager (its producer id,
 * epoch and transaction version, which the client does not expose).
 *
 * `--transaction-version`: `auto` takes what the broker offers (TV2 when it finalized transaction.version 2, else
 * TV1); `2` requires TV2 and fails otherwise; `1` makes the client behave as a pre-4.0 client (TV1: explicit
 * AddPartitionsToTxn/AddOffsetsToTxn, EndTxn v4 or lower, no epoch bump on commit) even against a TV2 broker, by
 * pinning the TransactionManager's view of the finalized features before it first reads them.
 */
final class Clients {
    private Clients() {
    }

    static KafkaProducer<String, String> producer(Args args, String transactionalId) throws ReflectiveOperationException {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, args.get("transaction-timeout-ms", "60000"));
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        if (args.get("transaction-version", "auto").equals("1")) {
            Object manager = field(producer, "transactionManager");
            Field epoch = manager.getClass().getDeclaredField("latestFinalizedFeaturesEpoch");
            epoch.setAccessible(true);
            epoch.setLong(manager, Long.MAX_VALUE);  // never read the broker's features: stay TV1
        }
        return producer;
    }

    static KafkaConsumer<String, String> consumer(Args args, String groupId, Map<String, String> extra) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        if (groupId != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        }
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, args.get("isolation", "read_committed"));
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.putAll(extra);
        return new KafkaConsumer<>(props);
    }

    /** The group-protocol settings of `--protocol consumer` (KIP-848) or `--protocol classic` (with `--assignor`). */
    static Map<String, String> groupSettings(Args args) {
        return groupSettings(args, args.get("protocol", "classic"));
    }

    static Map<String, String> groupSettings(Args args, String protocol) {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            settings.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor(args.get("assignor",
                "cooperative-sticky")));
            settings.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            settings.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "200");
            settings.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "20000");
        }
        return settings;
    }

    private static String assignor(String name) {
        return switch (name) {
            case "cooperative-sticky" -> "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            case "range" -> "org.apache.kafka.clients.consumer.RangeAssignor";
            case "roundrobin" -> "org.apache.kafka.clients.consumer.RoundRobinAssignor";
            case "sticky" -> "org.apache.kafka.clients.consumer.StickyAssignor";
            default -> throw new IllegalArgumentException("unknown --assignor " + name);
        };
    }

    /** producer_id, epoch and transaction_version of a producer, as its TransactionManager holds them now. */
    static Object[] state(KafkaProducer<String, String> producer) throws ReflectiveOperationException {
        Object manager = field(producer, "transactionManager");
        ProducerIdAndEpoch ids = (ProducerIdAndEpoch) field(manager, "producerIdAndEpoch");
        boolean v2 = (boolean) manager.getClass().getMethod("isTransactionV2Enabled").invoke(manager);
        return new Object[] {"producer_id", ids.producerId, "epoch", (int) ids.epoch, "transaction_version", v2 ? 2 : 1};
    }

    /** After initTransactions: fail when `--transaction-version 2` was asked for and the broker does not offer it. */
    static void checkVersion(Args args, KafkaProducer<String, String> producer) throws ReflectiveOperationException {
        Object manager = field(producer, "transactionManager");
        boolean v2 = (boolean) manager.getClass().getMethod("isTransactionV2Enabled").invoke(manager);
        if (args.get("transaction-version", "auto").equals("2") && !v2) {
            throw new IllegalStateException("--transaction-version 2: the broker does not offer transaction.version 2");
        }
    }

    private static Object field(Object owner, String name) throws ReflectiveOperationException {
        Field field = owner.getClass().getDeclaredField(name);
        field.setAccessible(true);
        return field.get(owner);
    }
}
