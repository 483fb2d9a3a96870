package placement.lab;

import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;

/**
 * A {@link RateSchedule} as Flink's rate limiter strategy. Flink 1.19 to 2.1: the API is not generic and a source
 * reader asks for one record at a time ({@code acquire()}).
 */
final class ScheduledRateStrategy implements RateLimiterStrategy {
    private static final long serialVersionUID = 1L;

    private final RateSchedule schedule;

    ScheduledRateStrategy(RateSchedule schedule) {
        this.schedule = schedule;
    }

    @Override
    public RateLimiter createRateLimiter(int parallelism) {
        RateSchedule.Pacer pacer = new RateSchedule.Pacer(schedule);
        return () -> pacer.acquire(1);
    }

    @Override
    public String toString() {
        return schedule.toString();
    }
}
