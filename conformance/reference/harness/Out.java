package kcoord.harness;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.Map;

/** The JSON lines the harness prints, on the stdout the JVM started with (the tool runner redirects System.out). */
final class Out {
    private static final PrintStream STDOUT = System.out;
    private static final ObjectMapper JSON = new ObjectMapper();

    private Out() {
    }

    /** An event: `event` then key, value pairs. */
    static void emit(String event, Object... pairs) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", event);
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            line.put((String) pairs[i], pairs[i + 1]);
        }
        emitMap(line);
    }

    static synchronized void emitMap(Map<String, Object> line) {
        try {
            STDOUT.println(JSON.writeValueAsString(line));
        } catch (JsonProcessingException e) {
            STDOUT.println("{\"event\": \"error\", \"type\": \"JsonProcessingException\"}");
        }
        STDOUT.flush();
    }

    static void error(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null && cause.getMessage() != null && cause.getMessage().contains(
                cause.getCause().getClass().getName())) {
            cause = cause.getCause();
        }
        emit("error", "type", cause.getClass().getSimpleName(), "message", String.valueOf(cause.getMessage()));
    }

    static void fail(String message) {
        emit("error", "type", "usage", "message", message);
        exit(2);
    }

    /** Exit without waiting for client threads a command left behind (a fenced producer's sender, say). */
    static void exit(int code) {
        STDOUT.flush();
        Runtime.getRuntime().halt(code);
    }
}
