package kcoord.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.kafka.common.utils.Exit;

/**
 * Kafka's command-line tools run one after another in this JVM (each costs a JVM start otherwise), as Kafka's own
 * tests run them: stdin gives one JSON object per line, `{"main": "org.apache.kafka.tools.TopicCommand", "args":
 * [...], "stdin": "..."}`, and each run prints `{"event": "tool", "main", "args", "exit", "stdout", "stderr"}`.
 * `Exit.exit` is turned into an exception that ends the run with its code; a run still going after `--timeout-ms`
 * is reported with exit -1 and left behind (its thread is a daemon).
 */
final class Tools {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static volatile Integer exitCode;

    private Tools() {
    }

    /** Thrown by Kafka's `Exit.exit` while a tool runs here. */
    private static final class ExitCalled extends Error {
        private static final long serialVersionUID = 1L;

        ExitCalled(int code) {
            super("exit " + code, null, false, false);
        }
    }

    static void run(Args args) throws Exception {
        long timeoutMs = args.getInt("timeout-ms", 60_000);
        Exit.setExitProcedure((code, message) -> {
            if (exitCode == null) {
                exitCode = code;
            }
            throw new ExitCalled(code);
        });
        Exit.setHaltProcedure((code, message) -> {
            if (exitCode == null) {
                exitCode = code;
            }
            throw new ExitCalled(code);
        });
        Exit.setShutdownHookAdder((name, hook) -> { });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (!line.isBlank()) {
                Out.emitMap(runOne(JSON.readTree(line), timeoutMs));
            }
        }
    }

    /** Scala's `Console.out`/`err` (what kafka-dump-log prints to) took System.out/err once, when first used; point
     * them at this run's streams too (a DynamicVariable: an inheritable thread local, so for this thread only). */
    private static void scalaConsole(PrintStream out, PrintStream err) {
        try {
            Class<?> console = Class.forName("scala.Console$");
            Object module = console.getField("MODULE$").get(null);
            for (Map.Entry<String, PrintStream> e : Map.of("outVar", out, "errVar", err).entrySet()) {
                Field field = console.getDeclaredField(e.getKey());
                field.setAccessible(true);
                Object variable = field.get(module);
                variable.getClass().getMethod("value_$eq", Object.class).invoke(variable, e.getValue());
            }
        } catch (ReflectiveOperationException e) {
            // no Scala console to redirect
        }
    }

    private static Map<String, Object> runOne(JsonNode request, long timeoutMs) throws InterruptedException {
        String main = request.get("main").asText();
        List<String> argv = new ArrayList<>();
        request.get("args").forEach(a -> argv.add(a.asText()));
        String input = request.has("stdin") ? request.get("stdin").asText() : "";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream savedOut = System.out;
        PrintStream savedErr = System.err;
        InputStream savedIn = System.in;
        exitCode = null;
        Throwable[] failure = new Throwable[1];
        Thread thread = new Thread(() -> {
            try {
                scalaConsole(System.out, System.err);
                Class.forName(main).getMethod("main", String[].class).invoke(null, (Object) argv.toArray(new String[0]));
            } catch (InvocationTargetException e) {
                if (!(e.getCause() instanceof ExitCalled)) {
                    failure[0] = e.getCause();
                }
            } catch (ReflectiveOperationException e) {
                failure[0] = e;
            }
        }, "tool");
        thread.setDaemon(true);
        try (PrintStream capturedOut = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream capturedErr = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            System.setOut(capturedOut);
            System.setErr(capturedErr);
            System.setIn(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)));
            thread.start();
            thread.join(timeoutMs);
        } finally {
            System.setOut(savedOut);
            System.setErr(savedErr);
            System.setIn(savedIn);
        }
        int code;
        if (thread.isAlive()) {
            code = -1;
        } else if (exitCode != null) {
            code = exitCode;
        } else {
            code = failure[0] == null ? 0 : 1;
        }
        // a tool that catches Throwable prints the exception that stood in for its Exit.exit call: not its output
        String stderr = err.toString(StandardCharsets.UTF_8).replaceAll(
            "exit (-?\\d+)\n" + Pattern.quote(ExitCalled.class.getName()) + ": exit \\1\n\n?", "");
        if (failure[0] != null) {
            stderr += "uncaught " + Transactions.describe(failure[0]) + ": " + failure[0].getMessage() + "\n";
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("event", "tool");
        result.put("main", main);
        result.put("args", argv);
        result.put("exit", code);
        result.put("stdout", out.toString(StandardCharsets.UTF_8));
        result.put("stderr", stderr);
        return result;
    }
}
