package placement.lab;

import java.util.Locale;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReadOnlyBroadcastState;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.BroadcastStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * A job with the shapes the three lab jobs lack, for placing an unmodified jar (custom mode): a union, broadcast
 * state, two two-input operators, fan-out, a side output, several sinks and keyed operators whose subtasks a plan may
 * split across hosts. No {@code --placement}: it is placed from outside, by the scheduler extension.
 *
 * <pre>
 * Source: Events -> Parse Events -+-> Split --(main)--------------\
 *                                 |        `--(side: invalid)--> Sink: Invalid
 *                                 |                                  >== union ==> Merge ==HASH==\
 * Source: Commands -> Parse Commands -----------------------------/                               Apply Rules ==HASH==\
 * Source: Rules ==BROADCAST=================================================================/                      Correlate -> Sink: Correlated
 *                                 `==HASH==> Device Totals -+-> Sink: Totals                                        /
 *                                                           `==HASH=========================================================/
 * </pre>
 *
 * Parse Events fans out to Split and (keyed) Device Totals; Device Totals fans out to its sink and to Correlate.
 * Device Totals keeps a per-device running count in keyed state (gauge {@code maxKeyTotal}: state surviving a
 * savepoint restore); Apply Rules reads thresholds from broadcast state; Correlate (keyed, two inputs) joins the
 * totals with the rule hits. Chaining is off, every operator has a uid.
 *
 * <p>Arguments: {@code --rate} events/s per source subtask (default 100), {@code --parallelism} of the events chain
 * and the keyed operators (default 2), {@code --devices} (default 32), {@code --job-name} (default "zoo"),
 * {@code --restart-attempts} (fixed-delay restarts 5 s apart; default: the cluster's strategy).
 */
public final class ZooJob {
    public static final String[] VERTICES = {
        "Source: Events", "Parse Events", "Split", "Sink: Invalid", "Source: Commands", "Parse Commands", "Merge",
        "Source: Rules", "Apply Rules", "Device Totals", "Sink: Totals", "Correlate", "Sink: Correlated",
    };
    static final OutputTag<String> INVALID = new OutputTag<>("invalid", Types.STRING);
    static final MapStateDescriptor<Integer, Double> RULES =
            new MapStateDescriptor<>("rules", Types.INT, Types.DOUBLE);

    public static void main(String[] args) throws Exception {
        Params params = Params.fromArgs(args);
        double rate = params.getDouble("rate", 100);
        int p = params.getInt("parallelism", 2);
        int devices = params.getInt("devices", 32);

        Configuration conf = new Configuration();
        if (params.has("restart-attempts")) { // ride out a TaskManager's restart (the cluster's default may give up sooner)
            conf.setString("restart-strategy.type", "fixed-delay");
            conf.setString("restart-strategy.fixed-delay.attempts", params.get("restart-attempts"));
            conf.setString("restart-strategy.fixed-delay.delay", "5 s");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.disableOperatorChaining();
        env.setMaxParallelism(128);

        DataStream<Event> events = env.fromSource(
                        new DataGeneratorSource<>(new EventGenerator(devices), Long.MAX_VALUE,
                                RateLimiterStrategy.perSecond(rate * p), Types.STRING),
                        WatermarkStrategy.noWatermarks(), "Events")
                .setParallelism(p).uid("events")
                .map(ZooJob::parseEvent).name("Parse Events").uid("parse-events").setParallelism(p);

        // fan-out 1: Split (with a side output) ...
        SingleOutputStreamOperator<Event> valid = events.process(new SplitInvalid()).name("Split").uid("split").setParallelism(p);
        Sinks.discard(valid.getSideOutput(INVALID), "Invalid", "sink-invalid", "legacy").setParallelism(1);

        // ... and the keyed totals
        SingleOutputStreamOperator<Total> totals = events.keyBy(e -> e.device).process(new DeviceTotals())
                .name("Device Totals").uid("device-totals").setParallelism(p);
        Sinks.discard(totals, "Totals", "sink-totals", "legacy").setParallelism(p);

        DataStream<Event> commands = env.fromSource(
                        new DataGeneratorSource<>(new CommandGenerator(devices), Long.MAX_VALUE,
                                RateLimiterStrategy.perSecond(Math.max(1.0, rate / 4)), Types.STRING),
                        WatermarkStrategy.noWatermarks(), "Commands")
                .setParallelism(1).uid("commands")
                .map(ZooJob::parseEvent).name("Parse Commands").uid("parse-commands").setParallelism(1);

        // a union of two streams into one operator
        SingleOutputStreamOperator<Event> merged = valid.union(commands).map(e -> e).returns(Event.class)
                .name("Merge").uid("merge").setParallelism(p);

        BroadcastStream<String> rules = env.fromSource(
                        new DataGeneratorSource<>(new RuleGenerator(devices), Long.MAX_VALUE,
                                RateLimiterStrategy.perSecond(1), Types.STRING),
                        WatermarkStrategy.noWatermarks(), "Rules")
                .setParallelism(1).uid("rules")
                .broadcast(RULES);

        SingleOutputStreamOperator<Hit> hits = merged.keyBy(e -> e.device).connect(rules).process(new ApplyRules())
                .name("Apply Rules").uid("apply-rules").setParallelism(p);

        SingleOutputStreamOperator<String> correlated = totals.keyBy(t -> t.device)
                .connect(hits.keyBy(h -> h.device)).process(new Correlate())
                .name("Correlate").uid("correlate").setParallelism(1);
        Sinks.discard(correlated, "Correlated", "sink-correlated", "legacy").setParallelism(1);

        env.execute(params.get("job-name", "zoo"));
    }

    /** Events as a gateway sends them: CSV {@code kind,device,value,seq}; one in 20 is malformed. */
    public static final class EventGenerator implements GeneratorFunction<Long, String> {
        private final int devices;

        public EventGenerator(int devices) {
            this.devices = devices;
        }

        @Override
        public String map(Long seq) {
            long h = IotSensorJob.SensorGenerator.mix(seq * 17 + 3);
            if (Math.floorMod(h, 20L) == 0) {
                return "garbage-" + seq;
            }
            return String.format(Locale.ROOT, "event,%d,%.2f,%d", Math.floorMod(h >>> 8, (long) devices),
                    Math.floorMod(h >>> 20, 10_000L) / 100.0, seq);
        }
    }

    /** Operator commands: the same CSV shape, kind "command". */
    public static final class CommandGenerator implements GeneratorFunction<Long, String> {
        private final int devices;

        public CommandGenerator(int devices) {
            this.devices = devices;
        }

        @Override
        public String map(Long seq) {
            return String.format(Locale.ROOT, "command,%d,0,%d", Math.floorMod(seq * 7, (long) devices), seq);
        }
    }

    /** Rules: {@code device,threshold}, cycling over the devices. */
    public static final class RuleGenerator implements GeneratorFunction<Long, String> {
        private final int devices;

        public RuleGenerator(int devices) {
            this.devices = devices;
        }

        @Override
        public String map(Long seq) {
            return String.format(Locale.ROOT, "%d,%d", Math.floorMod(seq, (long) devices), 50 + Math.floorMod(seq * 13, 50L));
        }
    }

    public static Event parseEvent(String line) {
        Event e = new Event();
        String[] f = line.split(",");
        if (f.length != 4) {
            e.kind = "invalid";
            e.raw = line;
            return e;
        }
        e.kind = f[0];
        e.device = Integer.parseInt(f[1]);
        e.value = Double.parseDouble(f[2]);
        e.seq = Long.parseLong(f[3]);
        return e;
    }

    /** A parsed event or command (a Flink POJO). */
    public static final class Event {
        public String kind;
        public int device;
        public double value;
        public long seq;
        public String raw;

        public Event() {}
    }

    /** A device's running count. */
    public static final class Total {
        public int device;
        public long count;

        public Total() {}
    }

    /** An event above its device's broadcast threshold. */
    public static final class Hit {
        public int device;
        public double value;
        public double threshold;

        public Hit() {}
    }

    /** Main output: well-formed events; side output {@link #INVALID}: the raw malformed lines. */
    public static final class SplitInvalid extends ProcessFunction<Event, Event> {
        @Override
        public void processElement(Event e, Context ctx, Collector<Event> out) {
            if ("invalid".equals(e.kind)) {
                ctx.output(INVALID, e.raw);
            } else {
                out.collect(e);
            }
        }
    }

    /** Counts events per device in keyed state (malformed ones count under device 0). */
    public static final class DeviceTotals extends KeyedProcessFunction<Integer, Event, Total> {
        private transient ValueState<Long> count;
        private transient long maxKeyTotal;

        @Override
        public void open(OpenContext ctx) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            getRuntimeContext().getMetricGroup().gauge("maxKeyTotal", () -> maxKeyTotal);
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Total> out) throws Exception {
            long n = (count.value() == null ? 0L : count.value()) + 1;
            count.update(n);
            maxKeyTotal = Math.max(maxKeyTotal, n);
            Total t = new Total();
            t.device = e.device;
            t.count = n;
            out.collect(t);
        }
    }

    /** Emits a hit for each event above its device's threshold, read from broadcast state. */
    public static final class ApplyRules extends KeyedBroadcastProcessFunction<Integer, Event, String, Hit> {
        @Override
        public void processElement(Event e, ReadOnlyContext ctx, Collector<Hit> out) throws Exception {
            ReadOnlyBroadcastState<Integer, Double> rules = ctx.getBroadcastState(RULES);
            Double threshold = rules.get(e.device);
            if (threshold != null && e.value > threshold) {
                Hit h = new Hit();
                h.device = e.device;
                h.value = e.value;
                h.threshold = threshold;
                out.collect(h);
            }
        }

        @Override
        public void processBroadcastElement(String rule, Context ctx, Collector<Hit> out) throws Exception {
            String[] f = rule.split(",");
            BroadcastState<Integer, Double> rules = ctx.getBroadcastState(RULES);
            rules.put(Integer.parseInt(f[0]), Double.parseDouble(f[1]));
        }
    }

    /** Joins a device's latest total with its rule hits (keyed state on both inputs). */
    public static final class Correlate extends KeyedCoProcessFunction<Integer, Total, Hit, String> {
        private transient ValueState<Long> latest;

        @Override
        public void open(OpenContext ctx) {
            latest = getRuntimeContext().getState(new ValueStateDescriptor<>("latest-total", Types.LONG));
        }

        @Override
        public void processElement1(Total t, Context ctx, Collector<String> out) throws Exception {
            latest.update(t.count);
        }

        @Override
        public void processElement2(Hit h, Context ctx, Collector<String> out) throws Exception {
            Long total = latest.value();
            out.collect(h.device + "," + h.value + "," + h.threshold + "," + (total == null ? 0 : total));
        }
    }
}
