package placement.lab;

import java.io.Serializable;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;

/**
 * The lab jobs' sink: records are counted by Flink's own numRecordsIn metric and dropped.
 *
 * <p>{@code --sink legacy} (default) uses the SinkFunction API, whose vertex Flink 2.3 names {@code "Sink: <name>"};
 * {@code --sink v2} uses the Sink v2 API, whose vertex Flink 2.3 names {@code "<name>: Writer"}. The vertex name is
 * what profiles, plans and {@code --placement} mappings refer to, so {@link #vertexName} says which one it is.
 *
 * <p>Given a {@link CreatedAt}, the sink also measures <b>event-time latency</b>: per record, now minus the creation
 * time (the generator's {@code System.currentTimeMillis()}) of the freshest source record the output record carries,
 * into the Histogram {@value #EVENT_TIME_LATENCY} of the sink operator. The lab runs on one machine, so the source's
 * and the sink's clocks are the same clock. Flink's latency markers ({@code metrics.latency.interval}) measure the same
 * path but skip operator processing and window waits; this one includes them.
 */
public final class Sinks {
    /** The sink operator's event-time latency histogram (ms); REST lists it as
     * {@code <subtask>.<operator>.eventTimeLatency_p99}. */
    public static final String EVENT_TIME_LATENCY = "eventTimeLatency";
    /** Records the histogram's statistics are taken over: ~10 s to minutes of a lab sink's output (Flink's own
     * latency histograms keep {@code metrics.latency.history-size} markers per source subtask: 240 in the lab). */
    static final int HISTORY = 1024;

    private Sinks() {}

    /** When the freshest source record an output record carries was created (epoch ms). */
    @FunctionalInterface
    public interface CreatedAt<T> extends Serializable {
        long millis(T record);
    }

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

    /** A discarding sink without a latency histogram: for records that carry no creation time (the zoo job; the shapes
     * job's Counts, Rule Hits, Summaries and Ticks), which Flink's markers still cover. */
    @SuppressWarnings("deprecation")
    public static <T> DataStreamSink<T> discard(DataStream<T> in, String name, String uid, String mode) {
        DataStreamSink<T> sink = v2(mode)
                ? in.sinkTo(new org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<T>())
                : LabCompat.discardLegacy(in);
        return sink.name(name).uid(uid);
    }

    /** A discarding sink that records each record's event-time latency ({@link #EVENT_TIME_LATENCY}). */
    public static <T> DataStreamSink<T> discard(DataStream<T> in, String name, String uid, String mode, CreatedAt<T> createdAt) {
        @SuppressWarnings("deprecation")
        DataStreamSink<T> sink = v2(mode) ? in.sinkTo(new LatencySinkV2<>(createdAt)) : in.addSink(new LatencySink<>(createdAt));
        return sink.name(name).uid(uid);
    }

    /** The histogram and what feeds it: shared by both sink APIs. */
    static final class EventTimeLatency<T> {
        private final CreatedAt<T> createdAt;
        private final Histogram histogram;

        EventTimeLatency(CreatedAt<T> createdAt, MetricGroup metrics) {
            this.createdAt = createdAt;
            this.histogram = metrics.histogram(EVENT_TIME_LATENCY, new DescriptiveStatisticsHistogram(HISTORY));
        }

        void record(T value) {
            histogram.update(System.currentTimeMillis() - createdAt.millis(value));
        }
    }

    /** SinkFunction API (vertex {@code "Sink: <name>"}); {@code Context} is the inherited SinkFunction.Context. */
    static final class LatencySink<T> extends LabCompat.RichSink<T> {
        private final CreatedAt<T> createdAt;
        private transient EventTimeLatency<T> latency;

        LatencySink(CreatedAt<T> createdAt) {
            this.createdAt = createdAt;
        }

        @Override
        public void open(OpenContext ctx) {
            latency = new EventTimeLatency<>(createdAt, getRuntimeContext().getMetricGroup());
        }

        @Override
        public void invoke(T value, Context context) {
            latency.record(value);
        }
    }

    /** Sink v2 API (vertex {@code "<name>: Writer"}). */
    static final class LatencySinkV2<T> extends LabCompat.SinkV2<T> {
        private final CreatedAt<T> createdAt;

        LatencySinkV2(CreatedAt<T> createdAt) {
            this.createdAt = createdAt;
        }

        @Override
        SinkWriter<T> writer(MetricGroup metrics) {
            EventTimeLatency<T> latency = new EventTimeLatency<>(createdAt, metrics);
            return new SinkWriter<T>() {
                @Override
                public void write(T element, Context context) {
                    latency.record(element);
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }
}
