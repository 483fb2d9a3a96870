package placement.lab;

/** Field access in the lab's flat, generated JSON lines (no nesting, no escapes): cheap and dependency-free. */
final class Json {
    private Json() {}

    /** The raw text of a field's value (a number or a quoted string with its quotes). */
    static String raw(String json, String key) {
        String needle = "\"" + key + "\":";
        int start = json.indexOf(needle);
        if (start < 0) {
            throw new IllegalArgumentException("no field '" + key + "' in " + json);
        }
        start += needle.length();
        int end = start;
        if (json.charAt(start) == '"') {
            end = json.indexOf('"', start + 1) + 1;
        } else {
            while (end < json.length() && ",}".indexOf(json.charAt(end)) < 0) {
                end++;
            }
        }
        return json.substring(start, end);
    }

    static String string(String json, String key) {
        String v = raw(json, key);
        return v.substring(1, v.length() - 1);
    }
}
