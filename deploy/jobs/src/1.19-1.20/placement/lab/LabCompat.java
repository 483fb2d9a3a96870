package placement.lab;

import java.io.IOException;
import java.util.Map;

import org.apache.flink.api.java.utils.ParameterTool;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;

/**
 * The DataStream API classes that moved between Flink lines, behind one API (same class in each overlay). Flink 1.19
 * and 1.20: ParameterTool is in {@code api.java.utils}, the SinkFunction API's DiscardingSink in {@code functions.sink}.
 */
final class LabCompat {
    private LabCompat() {}

    static Map<String, String> parseArgs(String[] args) {
        return ParameterTool.fromArgs(args).toMap();
    }

    /** The SinkFunction API's discarding sink (vertex {@code "Sink: <name>"}). */
    @SuppressWarnings("deprecation")
    static <T> DataStreamSink<T> discardLegacy(DataStream<T> in) {
        return in.addSink(new DiscardingSink<T>());
    }

    /** The SinkFunction API's rich sink function (its package moved in 2.0): what {@link Sinks} extends. */
    @SuppressWarnings("deprecation")
    abstract static class RichSink<T> extends RichSinkFunction<T> {}

    /** A Sink v2 sink whose writer is made from the operator's metric group ({@link Sinks} implements it). */
    abstract static class SinkV2<T> implements Sink<T> {
        abstract SinkWriter<T> writer(MetricGroup metrics);

        @Override
        public SinkWriter<T> createWriter(WriterInitContext context) throws IOException {
            return writer(context.metricGroup());
        }

        /** 1.19 and 1.20 still declare the InitContext variant abstract (2.0 removed it); both give the metric
         * group. */
        @Override
        @SuppressWarnings("deprecation")
        public SinkWriter<T> createWriter(InitContext context) throws IOException {
            return writer(context.metricGroup());
        }
    }
}
