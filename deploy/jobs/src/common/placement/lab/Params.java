package placement.lab;

import java.util.Map;

/**
 * The jobs' command-line options ({@code --key value}), as Flink's ParameterTool parses them, read through one API on
 * every Flink line: ParameterTool moved from {@code org.apache.flink.api.java.utils} (1.x) to
 * {@code org.apache.flink.util} (2.0), so only {@link LabCompat#parseArgs} names it.
 */
public final class Params {
    private final Map<String, String> values;

    private Params(Map<String, String> values) {
        this.values = values;
    }

    public static Params fromArgs(String[] args) {
        return new Params(LabCompat.parseArgs(args));
    }

    public boolean has(String key) {
        return values.containsKey(key);
    }

    /** The value, or null when the option is absent. */
    public String get(String key) {
        return values.get(key);
    }

    public String get(String key, String fallback) {
        String value = values.get(key);
        return value == null ? fallback : value;
    }

    public int getInt(String key, int fallback) {
        String value = values.get(key);
        return value == null ? fallback : Integer.parseInt(value);
    }

    public long getLong(String key, long fallback) {
        String value = values.get(key);
        return value == null ? fallback : Long.parseLong(value);
    }

    public double getDouble(String key, double fallback) {
        String value = values.get(key);
        return value == null ? fallback : Double.parseDouble(value);
    }
}
