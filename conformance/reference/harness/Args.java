package kcoord.harness;

import java.util.HashMap;
import java.util.Map;

/** `--name value` pairs; a missing required option is a one-line error. */
final class Args {
    private final Map<String, String> values;

    private Args(Map<String, String> values) {
        this.values = values;
    }

    static Args parse(String[] argv) {
        Map<String, String> values = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value pairs, got " + argv[i]);
            }
            values.put(argv[i].substring(2), argv[i + 1]);
        }
        return new Args(values);
    }

    String get(String name) {
        String value = values.get(name);
        if (value == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return value;
    }

    String get(String name, String otherwise) {
        return values.getOrDefault(name, otherwise);
    }

    int getInt(String name, int otherwise) {
        return values.containsKey(name) ? Integer.parseInt(values.get(name)) : otherwise;
    }
}
