package placement.lab;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * (f) A ledger for the fault experiments: does every reading of every source subtask arrive exactly once, across a
 * failover? Vertices (chaining disabled):
 *
 * <pre>
 * Source: Readings -> Parse ==HASH(lane)==> Ledger -> Sink: Ledger
 * </pre>
 *
 * Each source subtask (a lane: one per Pi) numbers its readings 0, 1, 2, ... (the generator's index, which the source
 * checkpoints); Ledger keeps per lane, in keyed state, the next number it expects, how many readings it took, and how
 * many arrived out of turn: a gap (readings lost) or a repeat (readings doubled). A checkpoint restores the sources'
 * positions and the ledger's state together, so a lane that is exactly-once through a failover shows no gap and no
 * repeat. Per lane it registers the gauges {@code lane<i>.count}, {@code lane<i>.gaps}, {@code lane<i>.repeats} and
 * {@code lane<i>.lastMs} (wall clock of the last reading of that lane it took: when data flows again).
 *
 * <p>With {@code --ledger-file PATH} it also appends to that file (on the host it runs on; the lab is one machine)
 * a line {@code open,<ms>} when a task attempt opens and, at most every 200 ms per lane,
 * {@code <ms>,<lane>,<count>,<gaps>,<repeats>}: what a fault experiment reads without Flink's metric fetcher, which
 * serves gauges up to its update interval late and, after a TaskManager is lost, can stop updating for minutes.
 *
 * <p>Arguments: {@code --rate} readings/s per source subtask (default 200, or {@code --rate-schedule}),
 * {@code --parallelism} of the sources and Parse (default 2), {@code --ledger-parallelism} (default 1),
 * {@code --job-name} (default "ledger"), {@code --ledger-file} (default: none).
 */
public final class LedgerJob {
    public static void main(String[] args) throws Exception {
        Params params = Params.fromArgs(args);
        int parallelism = params.getInt("parallelism", 2);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.disableOperatorChaining();
        env.setMaxParallelism(128);

        DataGeneratorSource<String> source = new DataGeneratorSource<>(new Numbered(), Long.MAX_VALUE,
                RateSchedule.fromArgs(params, "rate", 200, parallelism), Types.STRING);
        SingleOutputStreamOperator<String> raw = env.fromSource(source, WatermarkStrategy.noWatermarks(), "Readings")
                .uid("readings").setParallelism(parallelism);
        SingleOutputStreamOperator<Entry> parsed = raw.map(LedgerJob::parse).name("Parse").uid("parse")
                .setParallelism(parallelism);
        SingleOutputStreamOperator<Entry> ledger = parsed.keyBy(e -> e.lane)
                .process(new Ledger(params.get("ledger-file", ""))).name("Ledger")
                .uid("ledger").setParallelism(params.getInt("ledger-parallelism", 1));
        Sinks.discard(ledger, "Ledger", "sink-ledger", params.get("sink", "legacy"), e -> e.createdMs)
                .setParallelism(ledger.getParallelism());
        env.execute(params.get("job-name", "ledger"));
    }

    /** Reading {@code seq} of source subtask {@code lane}: about 200 bytes, as the IoT sensors' readings. */
    public static final class Numbered implements GeneratorFunction<Long, String> {
        private transient int lane;

        @Override
        public void open(SourceReaderContext readerContext) {
            lane = readerContext.getIndexOfSubtask();
        }

        @Override
        public String map(Long seq) {
            return String.format(Locale.ROOT, "{\"lane\":%d,\"seq\":%d,\"created\":%d,\"site\":\"plant-north\","
                    + "\"type\":\"temperature\",\"unit\":\"celsius\",\"value\":%.3f,\"battery\":%d,"
                    + "\"firmware\":\"4.2.1-edge\",\"gateway\":\"gw-%02d\"}",
                    lane, seq, System.currentTimeMillis(), (seq * 7919 % 1000) / 10.0, (int) (seq % 100), lane);
        }
    }

    public static Entry parse(String json) {
        Entry e = new Entry();
        e.lane = (int) field(json, "lane");
        e.seq = field(json, "seq");
        e.createdMs = field(json, "created");
        return e;
    }

    private static long field(String json, String name) {
        int at = json.indexOf("\"" + name + "\":") + name.length() + 3;
        int end = at;
        while (end < json.length() && (Character.isDigit(json.charAt(end)) || json.charAt(end) == '-')) {
            end++;
        }
        return Long.parseLong(json.substring(at, end));
    }

    public static final class Entry {
        public int lane;
        public long seq;
        public long createdMs;

        public Entry() {}
    }

    /** Per lane: the next number expected, readings taken, gaps and repeats (keyed state); gauges per lane. */
    public static final class Ledger extends KeyedProcessFunction<Integer, Entry, Entry> {
        private transient ValueState<long[]> book; // next, count, gaps, repeats
        private transient Map<Integer, long[]> shown; // lane -> {count, gaps, repeats, lastMs}, what the gauges read
        private transient MetricGroup metrics;
        private final String file; // "" for none
        private transient Writer out;
        private transient Map<Integer, Long> written; // lane -> when its last line was written

        public Ledger(String file) {
            this.file = file;
        }

        @Override
        public void open(OpenContext ctx) throws IOException {
            book = getRuntimeContext().getState(new ValueStateDescriptor<>("book", long[].class));
            shown = new HashMap<>();
            written = new HashMap<>();
            metrics = getRuntimeContext().getMetricGroup();
            if (!file.isEmpty()) {
                out = new OutputStreamWriter(new FileOutputStream(file, true), StandardCharsets.UTF_8);
                out.write("open," + System.currentTimeMillis() + "\n");
                out.flush();
            }
        }

        @Override
        public void close() throws IOException {
            if (out != null) {
                out.close();
            }
        }

        @Override
        public void processElement(Entry e, Context ctx, Collector<Entry> out) throws Exception {
            long[] b = book.value();
            if (b == null) {
                b = new long[] {e.seq, 0, 0, 0};
            }
            if (e.seq > b[0]) {
                b[2] += e.seq - b[0];
            } else if (e.seq < b[0]) {
                b[3]++;
            }
            b[0] = Math.max(b[0], e.seq + 1);
            b[1]++;
            book.update(b);
            long[] s = shown.get(e.lane);
            if (s == null) {
                long[] fresh = new long[4];
                shown.put(e.lane, fresh);
                MetricGroup lane = metrics.addGroup("lane" + e.lane);
                lane.gauge("count", (Gauge<Long>) () -> fresh[0]);
                lane.gauge("gaps", (Gauge<Long>) () -> fresh[1]);
                lane.gauge("repeats", (Gauge<Long>) () -> fresh[2]);
                lane.gauge("lastMs", (Gauge<Long>) () -> fresh[3]);
                s = fresh;
            }
            s[0] = b[1];
            s[1] = b[2];
            s[2] = b[3];
            s[3] = System.currentTimeMillis();
            if (this.out != null && s[3] - written.getOrDefault(e.lane, 0L) >= 200) {
                this.out.write(s[3] + "," + e.lane + "," + b[1] + "," + b[2] + "," + b[3] + "\n");
                this.out.flush();
                written.put(e.lane, s[3]);
            }
            out.collect(e);
        }
    }
}
