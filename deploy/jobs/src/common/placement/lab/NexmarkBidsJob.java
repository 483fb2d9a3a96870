package placement.lab;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.typeinfo.Types;
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
 * (b) A Nexmark-style bids query: Q1's currency conversion, Q2's auction filter and a Q5-like hot-items count.
 *
 * <pre>
 * Source: Bids -> Parse Bids -> Currency Convert -> Filter Auctions ==HASH(auction)==> Hot Items -> Sink: HotItems
 * </pre>
 *
 * Bids arrive as ~200-byte CSV lines like the Nexmark generator's (auction, bidder, price, channel, url, time, extra);
 * Filter Auctions keeps the auctions whose id is divisible by {@code --auction-modulus} (default 5, ~20%); Hot Items
 * counts bids per auction in a tumbling processing-time window ({@code --work-per-bid} rounds of a hash mix per bid
 * make it as costly per record as a scenario needs: an operator that one slow core cannot keep up with).
 *
 * <p>Arguments: {@code --rate} bids/s per source subtask (default 500; or {@code --rate-schedule}, see
 * {@link RateSchedule}), {@code --parallelism} (default 2),
 * {@code --window-parallelism} (default 1), {@code --window-ms} (default 2000), {@code --auctions} (default 1000),
 * {@code --work-per-bid} (default 0), {@code --filter-work} (default 0: hash rounds Filter Auctions spends per bid),
 * {@code --sink legacy|v2}, {@code --placement '<json>'} (see {@link Placement}).
 */
public final class NexmarkBidsJob {
    public static final String[] CHAIN = {"Source: Bids", "Parse Bids", "Currency Convert", "Filter Auctions"};
    public static final String WINDOW = "Hot Items";
    private static final String[] CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};

    public static void main(String[] args) throws Exception {
        Params params = Params.fromArgs(args);
        Placement placement = Placement.fromArgs(params);
        int auctions = params.getInt("auctions", 1000);
        int modulus = params.getInt("auction-modulus", 5);
        int filterWork = params.getInt("filter-work", 0);
        String sinkMode = params.get("sink", "legacy");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.disableOperatorChaining();
        env.setMaxParallelism(128);

        List<DataStream<Bid>> lanes = new ArrayList<>();
        for (Placement.Lane lane : placement.lanes(params.getInt("parallelism", 2), CHAIN)) {
            DataGeneratorSource<String> source = new DataGeneratorSource<>(new BidGenerator(auctions, lane.ordinal),
                    Long.MAX_VALUE, RateSchedule.fromArgs(params, "rate", 500, lane.parallelism), Types.STRING);
            SingleOutputStreamOperator<String> raw =
                    lane.place(env.fromSource(source, WatermarkStrategy.noWatermarks(), "Bids"), 0, "bids");
            SingleOutputStreamOperator<Bid> bids = lane.place(raw.map(NexmarkBidsJob::parse).name("Parse Bids"), 1, "parse-bids");
            SingleOutputStreamOperator<Bid> euros = lane.place(bids.map(b -> {
                b.price = b.price * 908 / 1000; // Q1: dollars to euros
                b.extra = null; // the padding is not needed downstream
                return b;
            }).name("Currency Convert"), 2, "currency-convert");
            lanes.add(lane.place(euros.filter(new FilterAuctions(modulus, filterWork)).name("Filter Auctions"), 3,
                    "filter-auctions"));
        }
        DataStream<Bid> all = lanes.get(0);
        if (lanes.size() > 1) {
            all = all.union(lanes.subList(1, lanes.size()).toArray(new DataStream[0]));
        }
        SingleOutputStreamOperator<String> hot = all.keyBy(b -> b.auction, Types.LONG)
                .window(TumblingProcessingTimeWindows.of(java.time.Duration.ofMillis(params.getLong("window-ms", 2000))))
                .aggregate(new CountBids(params.getInt("work-per-bid", 0)), new Label())
                .name(WINDOW)
                .uid("hot-items");
        placement.pin(hot, WINDOW, params.getInt("window-parallelism", 1));
        placement.pin(Sinks.discard(hot, "HotItems", "sink-hot-items", sinkMode, Label::created),
                Sinks.vertexName("HotItems", sinkMode), hot.getParallelism());
        placement.checkAllUsed();
        env.execute(params.get("job-name", "nexmark-bids"));
    }

    /** Nexmark-like bids as CSV, ~200 bytes each; auction ids skewed towards a few hot auctions. */
    public static final class BidGenerator implements GeneratorFunction<Long, String> {
        private final int auctions;
        private final int lane;

        public BidGenerator(int auctions, int lane) {
            this.auctions = auctions;
            this.lane = lane;
        }

        @Override
        public String map(Long seq) {
            long h = IotSensorJob.SensorGenerator.mix(seq * 131 + lane);
            long auction = Math.floorMod(h, 10L) < 3 ? Math.floorMod(h >>> 4, 10L) : Math.floorMod(h >>> 4, (long) auctions);
            long bidder = Math.floorMod(h >>> 16, 50_000L);
            long price = 100 + Math.floorMod(h >>> 24, 100_000L);
            String channel = CHANNELS[(int) Math.floorMod(h >>> 40, (long) CHANNELS.length)];
            return String.format(Locale.ROOT, "%d,%d,%d,%s,https://www.nexmark.com/%s/item.htm?query=1&channel_id=%d,%d,%s",
                    auction, bidder, price, channel, channel.toLowerCase(Locale.ROOT), Math.floorMod(h >>> 8, 1000L),
                    System.currentTimeMillis(), "padpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpad");
        }
    }

    public static Bid parse(String line) {
        String[] f = line.split(",", 7);
        Bid b = new Bid();
        b.auction = Long.parseLong(f[0]);
        b.bidder = Long.parseLong(f[1]);
        b.price = Long.parseLong(f[2]);
        b.channel = f[3];
        b.url = f[4];
        b.dateTime = Long.parseLong(f[5]);
        b.extra = f[6];
        return b;
    }

    /** A Nexmark bid (Flink POJO). */
    public static final class Bid {
        public long auction;
        public long bidder;
        public long price;
        public String channel;
        public String url;
        public long dateTime;
        public String extra;

        public Bid() {}
    }

    /**
     * Keeps the bids of auctions divisible by {@code modulus}, after {@code work} rounds of a hash mix per bid
     * ({@code --filter-work}, default 0): a filter that costs CPU per record, so that a scenario can make the
     * operator before the keyBy expensive.
     */
    public static final class FilterAuctions implements FilterFunction<Bid> {
        private final int modulus;
        private final int work;

        public FilterAuctions(int modulus, int work) {
            this.modulus = modulus;
            this.work = work;
        }

        @Override
        public boolean filter(Bid b) {
            long h = b.bidder;
            for (int i = 0; i < work; i++) {
                h = IotSensorJob.SensorGenerator.mix(h);
            }
            // the comparison uses the mixed value, so the JIT cannot drop the loop; it is practically never true
            return b.auction % modulus == 0 && h != Long.MIN_VALUE;
        }
    }

    /** Bids in the window and the freshest bid's creation time ({@code dateTime}): {count, created}. */
    public static final class CountBids implements AggregateFunction<Bid, long[], long[]> {
        private final int work;

        public CountBids(int work) {
            this.work = work;
        }

        @Override
        public long[] createAccumulator() {
            return new long[] {0L, 0L};
        }

        @Override
        public long[] add(Bid b, long[] acc) {
            long h = b.bidder;
            for (int i = 0; i < work; i++) {
                h = IotSensorJob.SensorGenerator.mix(h);
            }
            // the comparison uses the mixed value, so the JIT cannot drop the loop; it is practically never true
            acc[0] += h == Long.MIN_VALUE ? 0 : 1;
            acc[1] = Math.max(acc[1], b.dateTime);
            return acc;
        }

        @Override
        public long[] getResult(long[] acc) {
            return acc;
        }

        @Override
        public long[] merge(long[] a, long[] b) {
            return new long[] {a[0] + b[0], Math.max(a[1], b[1])};
        }
    }

    /**
     * "auction,windowEnd,count,created": the last field (+14 bytes) is the freshest bid's creation time, for the sink's
     * event-time latency (which so includes the wait from that bid to the window's end; markers skip windows).
     */
    public static final class Label extends ProcessWindowFunction<long[], String, Long, TimeWindow> {
        @Override
        public void process(Long auction, Context ctx, Iterable<long[]> accs, Collector<String> out) {
            long[] acc = accs.iterator().next();
            out.collect(auction + "," + ctx.window().getEnd() + "," + acc[0] + "," + acc[1]);
        }

        public static long created(String line) {
            return Long.parseLong(line.substring(line.lastIndexOf(',') + 1));
        }
    }
}
