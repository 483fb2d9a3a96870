package placement.lab;

import java.util.Locale;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * (d) Job shapes the cost model must get right edge by edge: each pipeline starts at a source born on an edge host.
 *
 * <p>Two pipelines per edge host, so one run puts every shape on a link: Clicks and Orders are born on one host,
 * Rules and Ticks on another ({@code --shape fanout} or {@code side} builds only the first or second half).
 *
 * <p>{@code --shape fanout}:
 *
 * <pre>
 * Source: Clicks -> Parse Clicks --FORWARD----------> Sink: Click Archive          (fan-out: the same records to two
 *                                \--HASH(user)-----> Click Counts -> Sink: Counts   consumers; users are skewed)
 * Source: Rules  -> Parse Rules  --BROADCAST-------> Apply Rules (p=2) -> Sink: Rule Hits
 * </pre>
 *
 * <p>{@code --shape side}:
 *
 * <pre>
 * Source: Orders -> Split Orders --main: small summaries of every order--> Sink: Summaries
 *                                \--side output: whole large orders-----> Sink: Large Orders
 * Source: Ticks (p=2) -> Parse Ticks (p=2) --RESCALE (pointwise 2->1)--> Sink: Ticks
 * </pre>
 *
 * <p>Click users follow a skewed distribution ({@code --skew}, default 0.6: that share of clicks comes from user
 * u-0000, the rest spread over {@code --users}), so the keyed Click Counts subtasks receive unequal shares. A fifth of
 * the orders ({@code --large-share}) are large: their side output carries ~600-byte records, the main output ~40-byte
 * summaries of every order. Every operator is its own vertex (chaining off).
 *
 * <p>Arguments: {@code --shape all|fanout|side} (default all), {@code --rate} records/s per source subtask (default 300),
 * {@code --rules-rate} (default 200), {@code --ticks-parallelism} (default 2), {@code --counts-parallelism} and
 * {@code --apply-parallelism} (default 2), {@code --sink legacy|v2}, {@code --placement '<json>'} (see
 * {@link Placement}; a pipeline's source chain may be split over hosts in lanes).
 */
public final class ShapesJob {
    public static final String[] CLICK_CHAIN = {"Source: Clicks", "Parse Clicks"};
    public static final String[] RULE_CHAIN = {"Source: Rules", "Parse Rules"};
    public static final String[] ORDER_CHAIN = {"Source: Orders", "Split Orders"};
    public static final String[] TICK_CHAIN = {"Source: Ticks", "Parse Ticks"};
    public static final String CLICK_COUNTS = "Click Counts";
    public static final String APPLY_RULES = "Apply Rules";
    static final OutputTag<String> LARGE_ORDERS = new OutputTag<String>("large-orders", Types.STRING) {};

    public static void main(String[] args) throws Exception {
        Params params = Params.fromArgs(args);
        Placement placement = Placement.fromArgs(params);
        String shape = params.get("shape", "all");
        String sinkMode = params.get("sink", "legacy");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.disableOperatorChaining();
        env.setMaxParallelism(128);
        if (!"all".equals(shape) && !"fanout".equals(shape) && !"side".equals(shape)) {
            throw new IllegalArgumentException("--shape must be 'all', 'fanout' or 'side', not '" + shape + "'");
        }
        if (!"side".equals(shape)) {
            fanout(env, placement, params, sinkMode);
        }
        if (!"fanout".equals(shape)) {
            side(env, placement, params, sinkMode);
        }
        placement.checkAllUsed();
        env.execute(params.get("job-name", "all".equals(shape) ? "shapes" : "shapes-" + shape));
    }

    private static void fanout(StreamExecutionEnvironment env, Placement placement, Params params, String sinkMode) {
        double rate = params.getDouble("rate", 300);
        double skew = params.getDouble("skew", 0.6);
        int users = params.getInt("users", 50);
        DataStream<Click> clicks = null;
        for (Placement.Lane lane : placement.lanes(1, CLICK_CHAIN)) {
            SingleOutputStreamOperator<String> raw = lane.place(env.fromSource(
                    source(new ClickGenerator(users, skew, lane.ordinal), rate * lane.parallelism),
                    WatermarkStrategy.noWatermarks(), "Clicks"), 0, "clicks");
            DataStream<Click> parsed = lane.place(raw.map(ShapesJob::parseClick).name("Parse Clicks"), 1, "parse-clicks");
            clicks = clicks == null ? parsed : clicks.union(parsed);
        }
        placement.pin(Sinks.discard(clicks, "Click Archive", "sink-click-archive", sinkMode, c -> c.ts),
                Sinks.vertexName("Click Archive", sinkMode), 1);
        SingleOutputStreamOperator<String> counts = clicks.keyBy(c -> c.user, Types.STRING)
                .process(new CountPerUser()).name(CLICK_COUNTS).uid("click-counts");
        placement.pin(counts, CLICK_COUNTS, params.getInt("counts-parallelism", 2));
        placement.pin(Sinks.discard(counts, "Counts", "sink-counts", sinkMode), Sinks.vertexName("Counts", sinkMode),
                counts.getParallelism());

        DataStream<Rule> rules = null;
        for (Placement.Lane lane : placement.lanes(1, RULE_CHAIN)) {
            SingleOutputStreamOperator<String> raw = lane.place(env.fromSource(
                    source(new RuleGenerator(lane.ordinal), params.getDouble("rules-rate", 200) * lane.parallelism),
                    WatermarkStrategy.noWatermarks(), "Rules"), 0, "rules");
            DataStream<Rule> parsed = lane.place(raw.map(ShapesJob::parseRule).name("Parse Rules"), 1, "parse-rules");
            rules = rules == null ? parsed : rules.union(parsed);
        }
        SingleOutputStreamOperator<String> hits = rules.broadcast().map(ShapesJob::applyRule).name(APPLY_RULES)
                .uid("apply-rules");
        placement.pin(hits, APPLY_RULES, params.getInt("apply-parallelism", 2));
        placement.pin(Sinks.discard(hits, "Rule Hits", "sink-rule-hits", sinkMode), Sinks.vertexName("Rule Hits", sinkMode),
                hits.getParallelism());
    }

    private static void side(StreamExecutionEnvironment env, Placement placement, Params params, String sinkMode) {
        double rate = params.getDouble("rate", 300);
        double largeShare = params.getDouble("large-share", 0.2);
        DataStream<String> summaries = null;
        DataStream<String> large = null;
        for (Placement.Lane lane : placement.lanes(1, ORDER_CHAIN)) {
            SingleOutputStreamOperator<String> raw = lane.place(env.fromSource(
                    source(new OrderGenerator(largeShare, lane.ordinal), rate * lane.parallelism),
                    WatermarkStrategy.noWatermarks(), "Orders"), 0, "orders");
            SingleOutputStreamOperator<String> split = lane.place(raw.process(new SplitOrders()).name("Split Orders"), 1,
                    "split-orders");
            summaries = summaries == null ? split : summaries.union(split);
            large = large == null ? split.getSideOutput(LARGE_ORDERS) : large.union(split.getSideOutput(LARGE_ORDERS));
        }
        placement.pin(Sinks.discard(summaries, "Summaries", "sink-summaries", sinkMode), Sinks.vertexName("Summaries", sinkMode), 1);
        placement.pin(Sinks.discard(large, "Large Orders", "sink-large-orders", sinkMode,
                        json -> Long.parseLong(Json.raw(json, "ts"))),
                Sinks.vertexName("Large Orders", sinkMode), 1);

        DataStream<String> ticks = null;
        for (Placement.Lane lane : placement.lanes(params.getInt("ticks-parallelism", 2), TICK_CHAIN)) {
            SingleOutputStreamOperator<String> raw = lane.place(env.fromSource(
                    source(new TickGenerator(lane.ordinal), rate * lane.parallelism),
                    WatermarkStrategy.noWatermarks(), "Ticks"), 0, "ticks");
            DataStream<String> parsed = lane.place(raw.map(ShapesJob::parseTick).name("Parse Ticks"), 1, "parse-ticks");
            ticks = ticks == null ? parsed : ticks.union(parsed);
        }
        placement.pin(Sinks.discard(ticks.rescale(), "Ticks", "sink-ticks", sinkMode), Sinks.vertexName("Ticks", sinkMode), 1);
    }

    private static DataGeneratorSource<String> source(GeneratorFunction<Long, String> generator, double perSecond) {
        return new DataGeneratorSource<>(generator, Long.MAX_VALUE, RateLimiterStrategy.perSecond(perSecond), Types.STRING);
    }

    static long mix(long z) {
        return IotSensorJob.SensorGenerator.mix(z);
    }

    /** A generator of one lane's records, deterministic in (sequence number, lane). */
    abstract static class LaneGenerator implements GeneratorFunction<Long, String> {
        final int lane;

        LaneGenerator(int lane) {
            this.lane = lane;
        }
    }

    // ---- clicks: a fan-out with skewed keys ------------------------------------------------------------------------

    /** A web click as a browser beacon sends it: JSON, ~250 bytes; {@code skew} of them from user u-0000. */
    public static final class ClickGenerator extends LaneGenerator {
        private final int users;
        private final double skew;

        public ClickGenerator(int users, double skew, int lane) {
            super(lane);
            this.users = users;
            this.skew = skew;
        }

        @Override
        public String map(Long seq) {
            long h = mix(seq * 131 + lane * 1_000_003L);
            boolean hot = Math.floorMod(h, 1000L) < skew * 1000;
            int user = hot ? 0 : 1 + (int) Math.floorMod(h >>> 10, (long) Math.max(1, users - 1));
            return String.format(Locale.ROOT,
                    "{\"user\":\"u-%04d\",\"page\":\"/catalog/item/%05d\",\"ts\":%d,\"agent\":\"Mozilla/5.0 (X11; Linux aarch64)\","
                            + "\"referrer\":\"https://search.example.org/?q=%d\",\"screen\":\"1920x1080\",\"lane\":%d,\"seq\":%d}",
                    user, Math.floorMod(h >>> 20, 20_000L), System.currentTimeMillis(), Math.floorMod(h >>> 36, 100_000L), lane, seq);
        }
    }

    /** A parsed click: user, page and time only. */
    public static final class Click {
        public String user;
        public String page;
        public long ts;

        public Click() {}
    }

    public static Click parseClick(String json) {
        Click c = new Click();
        c.user = Json.string(json, "user");
        c.page = Json.string(json, "page");
        c.ts = Long.parseLong(Json.raw(json, "ts"));
        return c;
    }

    /** Clicks per user so far (keyed state); emits the running count every 10th click of a user. */
    public static final class CountPerUser extends KeyedProcessFunction<String, Click, String> {
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext ctx) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(Click c, Context ctx, Collector<String> out) throws Exception {
            long n = count.value() == null ? 1 : count.value() + 1;
            count.update(n);
            if (n % 10 == 0) {
                out.collect(c.user + "=" + n);
            }
        }
    }

    // ---- rules: a broadcast ----------------------------------------------------------------------------------------

    /** A filtering rule as a control plane publishes it: JSON, ~300 bytes. */
    public static final class RuleGenerator extends LaneGenerator {
        public RuleGenerator(int lane) {
            super(lane);
        }

        @Override
        public String map(Long seq) {
            long h = mix(seq * 37 + lane * 5_000_011L);
            return String.format(Locale.ROOT,
                    "{\"rule\":\"r-%04d\",\"field\":\"page\",\"op\":\"prefix\",\"value\":\"/catalog/item/%03d\",\"ts\":%d,"
                            + "\"author\":\"ops-team@example.org\",\"comment\":\"generated by the rules service, revision %d\","
                            + "\"lane\":%d,\"seq\":%d}",
                    Math.floorMod(h, 10_000L), Math.floorMod(h >>> 16, 1000L), System.currentTimeMillis(),
                    Math.floorMod(h >>> 32, 1_000_000L), lane, seq);
        }
    }

    /** A parsed rule: its id and page prefix. */
    public static final class Rule {
        public String rule;
        public String prefix;

        public Rule() {}
    }

    public static Rule parseRule(String json) {
        Rule r = new Rule();
        r.rule = Json.string(json, "rule");
        r.prefix = Json.string(json, "value");
        return r;
    }

    public static String applyRule(Rule r) {
        return r.rule;
    }

    // ---- orders: a side output -------------------------------------------------------------------------------------

    /** An order as a shop's edge gateway forwards it: JSON, ~600 bytes with its line items; {@code largeShare} are large. */
    public static final class OrderGenerator extends LaneGenerator {
        private final double largeShare;

        public OrderGenerator(double largeShare, int lane) {
            super(lane);
            this.largeShare = largeShare;
        }

        @Override
        public String map(Long seq) {
            long h = mix(seq * 53 + lane * 9_000_041L);
            boolean large = Math.floorMod(h, 1000L) < largeShare * 1000;
            StringBuilder items = new StringBuilder();
            for (int i = 0; i < 8; i++) {
                long x = mix(h + i);
                items.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT,
                        "{\"sku\":\"sku-%06d\",\"qty\":%d,\"price\":%d.%02d}", Math.floorMod(x, 1_000_000L),
                        1 + Math.floorMod(x >>> 20, 5L), 1 + Math.floorMod(x >>> 24, 200L), Math.floorMod(x >>> 32, 100L)));
            }
            return String.format(Locale.ROOT,
                    "{\"order\":\"o-%d-%d\",\"shop\":\"s-%03d\",\"ts\":%d,\"total\":%d,\"large\":%b,\"items\":[%s]}",
                    lane, seq, Math.floorMod(h >>> 8, 500L), System.currentTimeMillis(),
                    large ? 1000 + Math.floorMod(h >>> 16, 9000L) : 10 + Math.floorMod(h >>> 16, 90L), large, items);
        }
    }

    /** Main output: a short summary of every order; side output: the whole order when it is large. */
    public static final class SplitOrders extends ProcessFunction<String, String> {
        @Override
        public void processElement(String json, Context ctx, Collector<String> out) {
            out.collect(Json.string(json, "shop") + ":" + Json.raw(json, "total"));
            if (json.contains("\"large\":true")) {
                ctx.output(LARGE_ORDERS, json);
            }
        }
    }

    // ---- ticks: a rescale edge -------------------------------------------------------------------------------------

    /** A market tick: JSON, ~180 bytes. */
    public static final class TickGenerator extends LaneGenerator {
        public TickGenerator(int lane) {
            super(lane);
        }

        @Override
        public String map(Long seq) {
            long h = mix(seq * 71 + lane * 3_000_017L);
            return String.format(Locale.ROOT,
                    "{\"symbol\":\"SYM%03d\",\"venue\":\"XETRA\",\"ts\":%d,\"bid\":%d.%04d,\"ask\":%d.%04d,\"size\":%d,"
                            + "\"feed\":\"level1\",\"lane\":%d,\"seq\":%d}",
                    Math.floorMod(h, 500L), System.currentTimeMillis(), 10 + Math.floorMod(h >>> 12, 90L),
                    Math.floorMod(h >>> 20, 10_000L), 10 + Math.floorMod(h >>> 12, 90L), Math.floorMod(h >>> 34, 10_000L),
                    Math.floorMod(h >>> 48, 1000L), lane, seq);
        }
    }

    public static String parseTick(String json) {
        return Json.string(json, "symbol") + "@" + Json.raw(json, "bid");
    }
}
