package placement.lab;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingProcessingTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * (a) The IoT sensor pipeline. Vertices (chaining disabled, so each is its own job vertex):
 *
 * <pre>
 * Source: Sensors -> Parse -> Filter -> Enrich ==HASH(sensor)==> Window Aggregate -> Sink: Readings
 * </pre>
 *
 * Sensors emit ~200-byte JSON readings; Parse turns them into {@link Reading}s; Filter keeps the ~30% above the alarm
 * threshold; Enrich projects them to small {@link Enriched} records with the sensor's zone; Window Aggregate sums per
 * sensor over a tumbling processing-time window and keeps a per-sensor running total in keyed state across windows
 * (its gauge {@code maxKeyTotal} shows state surviving a savepoint restore).
 *
 * <p>Arguments: {@code --rate} readings/s per source subtask (default 200; or {@code --rate-schedule}, see
 * {@link RateSchedule}), {@code --parallelism} of the source chain
 * (default 2), {@code --window-parallelism} (default 1), {@code --window-ms} (default 2000), {@code --sensors} (default
 * 100), {@code --enrich-work} (default 0: hash rounds Enrich spends per reading), {@code --enrich-note} (default 0:
 * characters of zone description Enrich adds to each record, which makes it an operator that <em>grows</em> the data),
 * {@code --alarm-shares a,b,...} (the share of readings above the alarm threshold per source subtask, in subtask order,
 * the last repeated; default: 0.3 everywhere, the uniform values), {@code --sink legacy|v2}, {@code --placement
 * '<json>'} (see {@link Placement}).
 */
public final class IotSensorJob {
    public static final String SOURCE = "Source: Sensors";
    public static final String[] CHAIN = {SOURCE, "Parse", "Filter", "Enrich"};
    public static final String WINDOW = "Window Aggregate";
    public static final double ALARM_THRESHOLD = 70.0; // values are uniform in [0, 100): 30% pass

    private static final String[] SITES = {"plant-north", "plant-south", "depot-east", "depot-west", "yard"};
    private static final String[] TYPES = {"temperature", "humidity", "vibration", "pressure"};

    public static void main(String[] args) throws Exception {
        Params params = Params.fromArgs(args);
        Placement placement = Placement.fromArgs(params);
        int parallelism = params.getInt("parallelism", 2);
        int sensors = params.getInt("sensors", 100);
        long windowMs = params.getLong("window-ms", 2000);
        int enrichWork = params.getInt("enrich-work", 0);
        int enrichNote = params.getInt("enrich-note", 0);
        double[] alarmShares = alarmShares(params.get("alarm-shares", ""));
        String sinkMode = params.get("sink", "legacy");
        String sinkVertex = Sinks.vertexName("Readings", sinkMode);

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.disableOperatorChaining(); // every operator its own vertex: the planner places each one
        env.setMaxParallelism(128); // fixed, so keyed state restores under any parallelism/placement

        List<DataStream<Enriched>> lanes = new ArrayList<>();
        for (Placement.Lane lane : placement.lanes(parallelism, CHAIN)) {
            DataGeneratorSource<String> source = new DataGeneratorSource<>(
                    new SensorGenerator(sensors, lane.ordinal, alarmShares),
                    Long.MAX_VALUE,
                    RateSchedule.fromArgs(params, "rate", 200, lane.parallelism), // per subtask; --rate-schedule: steps
                    Types.STRING);
            SingleOutputStreamOperator<String> raw =
                    lane.place(env.fromSource(source, WatermarkStrategy.noWatermarks(), "Sensors"), 0, "sensors");
            SingleOutputStreamOperator<Reading> parsed = lane.place(raw.map(IotSensorJob::parse).name("Parse"), 1, "parse");
            SingleOutputStreamOperator<Reading> alarms =
                    lane.place(parsed.filter(r -> r.value >= ALARM_THRESHOLD).name("Filter"), 2, "filter");
            lanes.add(lane.place(alarms.map(new Enrich(enrichWork, enrichNote)).name("Enrich"), 3, "enrich"));
        }
        DataStream<Enriched> all = lanes.get(0);
        if (lanes.size() > 1) {
            all = all.union(lanes.subList(1, lanes.size()).toArray(new DataStream[0]));
        }

        SingleOutputStreamOperator<Summary> windows = all.keyBy(e -> e.sensor)
                .window(TumblingProcessingTimeWindows.of(java.time.Duration.ofMillis(windowMs)))
                .aggregate(new Stats(), new RunningTotal())
                .name(WINDOW)
                .uid("window-aggregate");
        placement.pin(windows, WINDOW, params.getInt("window-parallelism", 1));
        placement.pin(Sinks.discard(windows, "Readings", "sink-readings", sinkMode, w -> w.created), sinkVertex,
                windows.getParallelism());
        placement.checkAllUsed();
        env.execute(params.get("job-name", "iot-sensors"));
    }

    /** {@code --alarm-shares "0.3,0.1"}: one share per source subtask, each in [0, 1]; empty: none given. */
    static double[] alarmShares(String arg) {
        if (arg.isEmpty()) {
            return null;
        }
        String[] parts = arg.split(",");
        double[] shares = new double[parts.length];
        for (int i = 0; i < parts.length; i++) {
            shares[i] = Double.parseDouble(parts[i].trim());
            if (!(shares[i] >= 0 && shares[i] <= 1)) {
                throw new IllegalArgumentException("--alarm-shares: " + parts[i] + " is not a share in [0, 1]");
            }
        }
        return shares;
    }

    /**
     * Readings as a sensor gateway would send them: JSON, about 200 bytes. Deterministic in the sequence number. With
     * alarm shares, subtask {@code i}'s readings are above the alarm threshold with share {@code shares[i]} (values
     * uniform within each side of it): sites whose alarms are rarer, so Filter keeps a different share per subtask.
     */
    public static final class SensorGenerator implements GeneratorFunction<Long, String> {
        private final int sensors;
        private final int lane;
        private final double[] alarmShares; // null: uniform values (30 % alarms)
        // set by useSubtask; transient fields come back from Java serialization with their defaults, not their
        // initializers, so "shaped" starts false on every TaskManager
        private transient boolean shaped;
        private transient double alarmShare;

        public SensorGenerator(int sensors, int lane) {
            this(sensors, lane, null);
        }

        public SensorGenerator(int sensors, int lane, double[] alarmShares) {
            this.sensors = sensors;
            this.lane = lane;
            this.alarmShares = alarmShares;
        }

        @Override
        public void open(SourceReaderContext readerContext) {
            useSubtask(readerContext.getIndexOfSubtask());
        }

        /** The readings of source subtask {@code index} (what {@link #open} does with the subtask's context). */
        public void useSubtask(int index) {
            if (alarmShares != null) {
                alarmShare = alarmShares[Math.min(index, alarmShares.length - 1)];
                shaped = true;
            }
        }

        @Override
        public String map(Long seq) {
            long h = mix(seq * 31 + lane);
            int sensor = (int) Math.floorMod(h, (long) sensors);
            double value = Math.floorMod(h >>> 8, 100_000L) / 1000.0; // uniform in [0, 100)
            if (shaped) {
                boolean alarm = Math.floorMod(h >>> 40, 10_000L) < alarmShare * 10_000;
                value = alarm ? ALARM_THRESHOLD + value * (100 - ALARM_THRESHOLD) / 100
                        : value * ALARM_THRESHOLD / 100;
            }
            return String.format(Locale.ROOT,
                    "{\"sensor\":\"s-%05d\",\"site\":\"%s\",\"type\":\"%s\",\"ts\":%d,\"value\":%.3f,\"unit\":\"C\","
                            + "\"battery\":%d,\"rssi\":%d,\"fw\":\"2.4.1\",\"lane\":%d,\"seq\":%d}",
                    sensor, SITES[sensor % SITES.length], TYPES[sensor % TYPES.length], System.currentTimeMillis(),
                    value, 50 + Math.floorMod(h >>> 20, 50L), -40 - Math.floorMod(h >>> 28, 50L), lane, seq);
        }

        static long mix(long z) { // splitmix64: cheap, well spread
            z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
            z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
            return z ^ (z >>> 31);
        }
    }

    public static Reading parse(String json) {
        Reading r = new Reading();
        r.sensor = Json.string(json, "sensor");
        r.site = Json.string(json, "site");
        r.type = Json.string(json, "type");
        r.ts = Long.parseLong(Json.raw(json, "ts"));
        r.value = Double.parseDouble(Json.raw(json, "value"));
        r.battery = Integer.parseInt(Json.raw(json, "battery"));
        r.seq = Long.parseLong(Json.raw(json, "seq"));
        return r;
    }

    /**
     * Enrich with {@code work} rounds of a hash mix per reading ({@code --enrich-work}, default 0): an enrichment that
     * costs CPU per record (a lookup, a model), so that a scenario can make the operator after the filter expensive;
     * and with a zone description of {@code note} characters ({@code --enrich-note}, default 0: none), so that a scenario
     * can make it grow each record instead of shrinking it.
     */
    public static final class Enrich implements MapFunction<Reading, Enriched> {
        private final int work;
        private final int note;
        private transient String description;

        public Enrich(int work) {
            this(work, 0);
        }

        public Enrich(int work, int note) {
            this.work = work;
            this.note = note;
        }

        @Override
        public Enriched map(Reading r) {
            Enriched e = enrich(r);
            if (note > 0) {
                if (description == null) {
                    description = "zone ".repeat(note / 5 + 1).substring(0, note);
                }
                e.note = description;
            }
            long h = r.sensor.hashCode();
            for (int i = 0; i < work; i++) {
                h = SensorGenerator.mix(h);
            }
            // the comparison uses the mixed value, so the JIT cannot drop the loop; it is practically never true
            if (h == Long.MIN_VALUE) {
                e.zone = -e.zone;
            }
            return e;
        }
    }

    public static Enriched enrich(Reading r) {
        Enriched e = new Enriched();
        e.sensor = r.sensor;
        e.zone = r.site.startsWith("plant") ? 1 : r.site.startsWith("depot") ? 2 : 3;
        e.value = r.value;
        e.ts = r.ts;
        return e;
    }

    /** A parsed reading (a Flink POJO). */
    public static final class Reading {
        public String sensor;
        public String site;
        public String type;
        public long ts;
        public double value;
        public int battery;
        public long seq;

        public Reading() {}
    }

    /** What Enrich keeps: much smaller than a reading. */
    public static final class Enriched {
        public String sensor;
        public int zone;
        public double value;
        public long ts;
        public String note; // --enrich-note: the zone's description; null (one byte) without it

        public Enriched() {}
    }

    /** One window's result for one sensor. */
    public static final class Summary {
        public String sensor;
        public long windowEnd;
        public long count;
        public double mean;
        public double max;
        public long total; // readings of this sensor over all windows so far (keyed state)
        // creation time of the window's freshest reading, for the sink's event-time latency (+8 bytes serialized)
        public long created;

        public Summary() {}
    }

    /**
     * count, sum, max and the freshest reading's creation time of a window. The window fires at its end, after its
     * freshest reading arrived: the sink's event-time latency includes that wait (markers skip windows).
     */
    public static final class Stats implements AggregateFunction<Enriched, double[], double[]> {
        @Override
        public double[] createAccumulator() {
            return new double[] {0, 0, Double.NEGATIVE_INFINITY, 0}; // epoch ms fit a double exactly
        }

        @Override
        public double[] add(Enriched e, double[] acc) {
            acc[0] += 1;
            acc[1] += e.value;
            acc[2] = Math.max(acc[2], e.value);
            acc[3] = Math.max(acc[3], e.ts);
            return acc;
        }

        @Override
        public double[] getResult(double[] acc) {
            return acc;
        }

        @Override
        public double[] merge(double[] a, double[] b) {
            return new double[] {a[0] + b[0], a[1] + b[1], Math.max(a[2], b[2]), Math.max(a[3], b[3])};
        }
    }

    /** Emits the window's stats and adds its count to the sensor's running total kept in keyed state. */
    public static final class RunningTotal extends ProcessWindowFunction<double[], Summary, String, TimeWindow> {
        private transient long maxKeyTotal;

        @Override
        public void open(OpenContext ctx) {
            getRuntimeContext().getMetricGroup().gauge("maxKeyTotal", () -> maxKeyTotal);
        }

        @Override
        public void process(String sensor, Context ctx, Iterable<double[]> in, Collector<Summary> out) throws Exception {
            ValueState<Long> total = ctx.globalState().getState(new ValueStateDescriptor<>("total", Types.LONG));
            double[] acc = in.iterator().next();
            long sofar = (total.value() == null ? 0L : total.value()) + (long) acc[0];
            total.update(sofar);
            maxKeyTotal = Math.max(maxKeyTotal, sofar);
            Summary s = new Summary();
            s.sensor = sensor;
            s.windowEnd = ctx.window().getEnd();
            s.count = (long) acc[0];
            s.mean = acc[1] / acc[0];
            s.max = acc[2];
            s.total = sofar;
            s.created = (long) acc[3];
            out.collect(s);
        }
    }
}
