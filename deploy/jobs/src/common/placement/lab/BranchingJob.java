package placement.lab;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/**
 * (c) A branching job: two sources born on different edge hosts, joined per zone on the server.
 *
 * <pre>
 * Source: Cameras -> Detect Objects --HASH(zone)--\
 *                                                  Join Frames Meters -> Sink: Alerts
 * Source: Meters  -> Parse Meters   --HASH(zone)--/
 * </pre>
 *
 * Cameras emit ~1 KB frame descriptions (detected objects plus a thumbnail digest); Detect Objects reduces each to a
 * small (zone, persons) record. Meters emit ~150-byte power readings. The join keeps the latest of each per zone in
 * keyed state and emits an alert when a zone has power drawn above {@code --watts-threshold} and nobody in view.
 *
 * <p>Arguments: {@code --camera-rate} frames/s per camera subtask (default 20), {@code --meter-rate} readings/s per
 * meter subtask (default 100), {@code --camera-parallelism}, {@code --meter-parallelism} (default 1 each),
 * {@code --join-parallelism} (default 1), {@code --zones} (default 16), {@code --sink legacy|v2},
 * {@code --placement '<json>'} (see {@link Placement}).
 */
public final class BranchingJob {
    public static final String[] CAMERA_CHAIN = {"Source: Cameras", "Detect Objects"};
    public static final String[] METER_CHAIN = {"Source: Meters", "Parse Meters"};
    public static final String JOIN = "Join Frames Meters";
    private static final String[] OBJECTS = {"person", "forklift", "pallet", "cart", "person", "box"};

    public static void main(String[] args) throws Exception {
        Params params = Params.fromArgs(args);
        Placement placement = Placement.fromArgs(params);
        int zones = params.getInt("zones", 16);
        String sinkMode = params.get("sink", "legacy");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.disableOperatorChaining();
        env.setMaxParallelism(128);

        List<DataStream<Detection>> cameras = new ArrayList<>();
        for (Placement.Lane lane : placement.lanes(params.getInt("camera-parallelism", 1), CAMERA_CHAIN)) {
            DataGeneratorSource<String> source = new DataGeneratorSource<>(new FrameGenerator(zones, lane.ordinal), Long.MAX_VALUE,
                    RateSchedule.fromArgs(params, "camera-rate", 20, lane.parallelism), Types.STRING);
            SingleOutputStreamOperator<String> frames =
                    lane.place(env.fromSource(source, WatermarkStrategy.noWatermarks(), "Cameras"), 0, "cameras");
            cameras.add(lane.place(frames.map(BranchingJob::detect).name("Detect Objects"), 1, "detect-objects"));
        }
        List<DataStream<Power>> meters = new ArrayList<>();
        for (Placement.Lane lane : placement.lanes(params.getInt("meter-parallelism", 1), METER_CHAIN)) {
            DataGeneratorSource<String> source = new DataGeneratorSource<>(new MeterGenerator(zones, lane.ordinal), Long.MAX_VALUE,
                    RateSchedule.fromArgs(params, "meter-rate", 100, lane.parallelism), Types.STRING);
            SingleOutputStreamOperator<String> lines =
                    lane.place(env.fromSource(source, WatermarkStrategy.noWatermarks(), "Meters"), 0, "meters");
            meters.add(lane.place(lines.map(BranchingJob::parsePower).name("Parse Meters"), 1, "parse-meters"));
        }
        double threshold = params.getDouble("watts-threshold", 1500);
        SingleOutputStreamOperator<String> alerts = union(cameras).keyBy(d -> d.zone, Types.INT)
                .connect(union(meters).keyBy(p -> p.zone, Types.INT))
                .process(new JoinZone(threshold))
                .name(JOIN)
                .uid("join-frames-meters");
        placement.pin(alerts, JOIN, params.getInt("join-parallelism", 1));
        placement.pin(Sinks.discard(alerts, "Alerts", "sink-alerts", sinkMode, JoinZone::created),
                Sinks.vertexName("Alerts", sinkMode), alerts.getParallelism());
        placement.checkAllUsed();
        env.execute(params.get("job-name", "cameras-meters"));
    }

    @SuppressWarnings("unchecked")
    private static <T> DataStream<T> union(List<DataStream<T>> lanes) {
        DataStream<T> all = lanes.get(0);
        return lanes.size() == 1 ? all : all.union(lanes.subList(1, lanes.size()).toArray(new DataStream[0]));
    }

    /** A camera's frame description, ~1 KB: what an edge gateway would forward without local processing. */
    public static final class FrameGenerator implements GeneratorFunction<Long, String> {
        private final int zones;
        private final int lane;

        public FrameGenerator(int zones, int lane) {
            this.zones = zones;
            this.lane = lane;
        }

        @Override
        public String map(Long seq) {
            long h = IotSensorJob.SensorGenerator.mix(seq * 17 + lane * 1_000_003L);
            int zone = (int) Math.floorMod(h, (long) zones);
            StringBuilder objects = new StringBuilder();
            int n = (int) Math.floorMod(h >>> 8, 5L);
            for (int i = 0; i < n; i++) {
                objects.append(i == 0 ? "" : ";").append(OBJECTS[(int) Math.floorMod(h >>> (12 + 4 * i), (long) OBJECTS.length)]);
            }
            StringBuilder digest = new StringBuilder(800);
            long d = h;
            while (digest.length() < 800) {
                d = IotSensorJob.SensorGenerator.mix(d);
                digest.append(Long.toHexString(d));
            }
            return String.format(Locale.ROOT, "cam-%02d|%d|%d|1280x720|%s|%s", zone, zone, System.currentTimeMillis(),
                    objects, digest.substring(0, 800));
        }
    }

    /** A smart meter's reading, ~150 bytes. */
    public static final class MeterGenerator implements GeneratorFunction<Long, String> {
        private final int zones;
        private final int lane;

        public MeterGenerator(int zones, int lane) {
            this.zones = zones;
            this.lane = lane;
        }

        @Override
        public String map(Long seq) {
            long h = IotSensorJob.SensorGenerator.mix(seq * 29 + lane * 7_000_003L);
            int zone = (int) Math.floorMod(h, (long) zones);
            return String.format(Locale.ROOT,
                    "{\"meter\":\"m-%03d\",\"zone\":%d,\"ts\":%d,\"watts\":%d,\"volts\":%d,\"pf\":0.%02d,\"fw\":\"1.9.0\"}",
                    zone, zone, System.currentTimeMillis(), Math.floorMod(h >>> 8, 3000L), 228 + Math.floorMod(h >>> 20, 5L),
                    80 + Math.floorMod(h >>> 24, 20L));
        }
    }

    public static Detection detect(String frame) {
        String[] f = frame.split("\\|", 6);
        Detection d = new Detection();
        d.zone = Integer.parseInt(f[1]);
        d.ts = Long.parseLong(f[2]);
        for (String o : f[4].split(";")) {
            if (o.equals("person")) {
                d.persons++;
            }
        }
        return d;
    }

    public static Power parsePower(String json) {
        Power p = new Power();
        p.zone = Integer.parseInt(Json.raw(json, "zone"));
        p.ts = Long.parseLong(Json.raw(json, "ts"));
        p.watts = Integer.parseInt(Json.raw(json, "watts"));
        return p;
    }

    /** People seen in a zone by a camera frame. */
    public static final class Detection {
        public int zone;
        public long ts;
        public int persons;

        public Detection() {}
    }

    /** Power drawn in a zone. */
    public static final class Power {
        public int zone;
        public long ts;
        public int watts;

        public Power() {}
    }

    /**
     * Latest detection and latest power per zone (keyed state); alerts on power with nobody there. An alert ends in
     * " @<ms>" (+15 bytes): the creation time of the record that triggered it, the freshest one it carries (the other
     * side's state arrived before it), for the sink's event-time latency.
     */
    public static final class JoinZone extends KeyedCoProcessFunction<Integer, Detection, Power, String> {
        private final double threshold;
        private transient ValueState<Integer> persons;
        private transient ValueState<Integer> watts;

        public JoinZone(double threshold) {
            this.threshold = threshold;
        }

        @Override
        public void open(OpenContext ctx) {
            persons = getRuntimeContext().getState(new ValueStateDescriptor<>("persons", Types.INT));
            watts = getRuntimeContext().getState(new ValueStateDescriptor<>("watts", Types.INT));
        }

        @Override
        public void processElement1(Detection d, Context ctx, Collector<String> out) throws Exception {
            persons.update(d.persons);
            check(ctx.getCurrentKey(), d.ts, out);
        }

        @Override
        public void processElement2(Power p, Context ctx, Collector<String> out) throws Exception {
            watts.update(p.watts);
            check(ctx.getCurrentKey(), p.ts, out);
        }

        private void check(int zone, long created, Collector<String> out) throws Exception {
            Integer people = persons.value();
            Integer power = watts.value();
            if (people != null && power != null && people == 0 && power > threshold) {
                out.collect("zone " + zone + ": " + power + " W with nobody in view @" + created);
            }
        }

        public static long created(String alert) {
            return Long.parseLong(alert.substring(alert.lastIndexOf('@') + 1));
        }
    }
}
