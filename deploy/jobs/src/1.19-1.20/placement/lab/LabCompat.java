package placement.lab;

import java.util.Map;

import org.apache.flink.api.java.utils.ParameterTool;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
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
}
