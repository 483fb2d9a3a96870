package placement.lab;

import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;

/**
 * The lab jobs' sink: records are counted by Flink's own numRecordsIn metric and dropped.
 *
 * <p>{@code --sink legacy} (default) uses the SinkFunction API, whose vertex Flink 2.3 names {@code "Sink: <name>"};
 * {@code --sink v2} uses the Sink v2 API, whose vertex Flink 2.3 names {@code "<name>: Writer"}. The vertex name is
 * what profiles, plans and {@code --placement} mappings refer to, so {@link #vertexName} says which one it is.
 */
public final class Sinks {
    private Sinks() {}

    public static boolean v2(String mode) {
        if ("v2".equals(mode)) {
            return true;
        }
        if ("legacy".equals(mode)) {
            return false;
        }
        throw new IllegalArgumentException("--sink must be 'legacy' or 'v2', not '" + mode + "'");
    }

    public static String vertexName(String name, String mode) {
        return v2(mode) ? name + ": Writer" : "Sink: " + name;
    }

    @SuppressWarnings("deprecation")
    public static <T> DataStreamSink<T> discard(DataStream<T> in, String name, String uid, String mode) {
        DataStreamSink<T> sink = v2(mode)
                ? in.sinkTo(new org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<T>())
                : LabCompat.discardLegacy(in);
        return sink.name(name).uid(uid);
    }
}
