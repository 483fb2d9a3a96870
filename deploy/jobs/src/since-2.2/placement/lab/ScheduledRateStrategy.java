package placement.lab;

import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;

/**
 * A {@link RateSchedule} as Flink's rate limiter strategy. Flink 2.2 and later: the API is generic over the split type
 * and a source reader asks for several records at a time ({@code acquire(int)}).
 */
final class ScheduledRateStrategy implements RateLimiterStrategy<SourceSplit> {
    private static final long serialVersionUID = 1L;

    private final RateSchedule schedule;

    ScheduledRateStrategy(RateSchedule schedule) {
        this.schedule = schedule;
    }

    @Override
    public RateLimiter<SourceSplit> createRateLimiter(int parallelism) {
        return new RateSchedule.Pacer(schedule)::acquire;
    }

    @Override
    public String toString() {
        return schedule.toString();
    }
}
