/*
 * kcoord's harness of reference clients: Apache Kafka's own Java client and tools, driven from pytest
 * (kcoord.conformance.reference.clients). Every command prints what it did as JSON lines on stdout, one object per
 * line, and ends with exit code 0; a failure prints {"event": "error", ...} and exits 2. Compiled by `make` against
 * the jars in build/kafka/libs into build/kafka/harness (never committed).
 *
 *   producer  a transactional producer running a list of transactions (commit or abort each)
 *   zombie    two producers of one transactional id: the first is fenced by the second
 *   restart   a producer that stops mid-transaction (no EndTxn) and a new one that takes over
 *   ctp       consume-transform-produce with sendOffsetsToTransaction
 *   read      every record of a topic at an isolation level, no group
 *   group     members of one consumer group (KIP-848 or classic with an assignor) joining and leaving
 *   hold      members of one consumer group that stay until stdin closes (for the admin tools to describe)
 *   tools     Kafka's command-line tools run in this JVM, one JSON line of input per run (see Tools)
 *   batch     several of the commands above in this JVM, one JSON line of input each:
 *             {"command": "producer", "options": {"topic": "t", ...}}; each ends with {"event": "done"}
 */
package kcoord.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public final class Harness {
    private Harness() {
    }

    public static void main(String[] argv) {
        if (argv.length == 0) {
            Out.fail("usage: Harness producer|zombie|restart|ctp|read|group|tools|batch [--option value ...]");
            return;
        }
        try {
            if (argv[0].equals("batch")) {
                batch();
            } else {
                run(argv[0], Args.parse(Arrays.copyOfRange(argv, 1, argv.length)));
            }
        } catch (Exception e) {
            Out.error(e);
            Out.exit(2);
        }
        Out.exit(0);
    }

    private static void run(String command, Args args) throws Exception {
        switch (command) {
            case "producer" -> Transactions.producer(args);
            case "zombie" -> Transactions.zombie(args);
            case "restart" -> Transactions.restart(args);
            case "ctp" -> Transactions.consumeTransformProduce(args);
            case "read" -> Consumers.read(args);
            case "group" -> Consumers.group(args);
            case "hold" -> Consumers.hold(args);
            case "tools" -> Tools.run(args);
            default -> throw new IllegalArgumentException("unknown command " + command);
        }
    }

    /** One JVM for many commands (each costs a JVM start otherwise); the first failure ends the batch. */
    private static void batch() throws Exception {
        ObjectMapper json = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode step = json.readTree(line);
            List<String> argv = new ArrayList<>();
            step.get("options").fields().forEachRemaining(e -> {
                argv.add("--" + e.getKey());
                argv.add(e.getValue().asText());
            });
            String command = step.get("command").asText();
            if (command.equals("tools") || command.equals("batch") || command.equals("hold")) {
                throw new IllegalArgumentException(command + " reads stdin: it cannot run in a batch");
            }
            run(command, Args.parse(argv.toArray(new String[0])));
            Out.emit("done", "command", command);
        }
    }
}
