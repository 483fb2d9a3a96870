package placement.lab;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;

/**
 * A source rate that changes over time without resubmitting the job: {@code --rate-schedule "0:200,300:400,600:200"}
 * means 200 records/s per source subtask from second 0, 400 from second 300, 200 again from second 600 (the last step
 * holds forever). Seconds count from {@code --rate-schedule-start-ms} (epoch milliseconds) when given, else from the
 * moment the job's main() ran. Pass the start to keep the schedule's clock across a resubmission (a redeploy by
 * {@code placement apply} runs main() again): the resubmitted job then continues the schedule where it is.
 *
 * <p>A job with several rate options has one schedule option per rate, named after it ({@code --camera-rate-schedule}
 * beside {@code --camera-rate}). Without the schedule option the fixed rate applies, exactly as before.
 *
 * <p>Each subtask paces itself at the current step's rate (Flink's {@code perSecond} strategy divides one rate over
 * the subtasks; here the rate is per subtask, like the jobs' {@code --rate}). Pacing is by a reservation clock: every
 * acquire books its records after the previous booking and completes when that time has come, through the JDK's
 * shared delayed executor (no thread of our own, so nothing leaks when a job is cancelled). Idle time earns at most
 * 100 ms of records (what a late wake-up missed).
 * What pacing costs is kept small, because it is CPU no operator of the job spends and the lab measures a Pi's CPU
 * against the model: a booking due within {@link Pacer#AHEAD_NANOS} completes at once (one wake-up per 10 ms, not one
 * per record), and a delayed one completes on the delay scheduler's own thread — the JDK's default would hand each
 * completion to the common pool, and a JVM that sees one CPU (a lab Pi's cgroup) has none and starts a thread per
 * record: 0.25 of a 0.15-core Pi at 400 records/s, more than the source itself used.
 *
 * <p>{@link ScheduledRateStrategy} hands a schedule to Flink: one per Flink line in the overlays, as Flink's rate
 * limiter API became generic (and asks for several permits at a time) in 2.2.
 */
public final class RateSchedule implements Serializable {
    private static final long serialVersionUID = 1L;

    private final long[] startsMs; // step offsets from the schedule's start, ascending, first 0
    private final double[] rates; // records/s per subtask from that offset on
    private final long originEpochMs;

    RateSchedule(long[] startsMs, double[] rates, long originEpochMs) {
        this.startsMs = startsMs;
        this.rates = rates;
        this.originEpochMs = originEpochMs;
    }

    /**
     * The strategy for the rate option {@code name}: the schedule {@code --<name>-schedule} when given, else the
     * fixed {@code --<name>} (default {@code fallback}) per subtask for a source of {@code parallelism} subtasks.
     */
    @SuppressWarnings("rawtypes") // generic from Flink 2.2 on; DataGeneratorSource takes it raw on every line
    public static RateLimiterStrategy fromArgs(Params params, String name, double fallback, int parallelism) {
        String spec = params.get(name + "-schedule");
        if (spec == null) {
            return RateLimiterStrategy.perSecond(params.getDouble(name, fallback) * parallelism);
        }
        long origin = params.getLong("rate-schedule-start-ms", System.currentTimeMillis());
        return new ScheduledRateStrategy(parse(spec, origin, "--" + name + "-schedule"));
    }

    /** {@code "s:rate,s:rate,..."}; seconds ascending from 0, rates >= 0. Errors name the option and the bad step. */
    static RateSchedule parse(String spec, long originEpochMs, String option) {
        List<Long> starts = new ArrayList<>();
        List<Double> rates = new ArrayList<>();
        for (String step : spec.split(",")) {
            String[] parts = step.trim().split(":");
            if (parts.length != 2) {
                throw new IllegalArgumentException(option + ": step '" + step.trim() + "' is not SECONDS:RATE");
            }
            double seconds;
            double rate;
            try {
                seconds = Double.parseDouble(parts[0].trim());
                rate = Double.parseDouble(parts[1].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(option + ": step '" + step.trim() + "' is not SECONDS:RATE");
            }
            long ms = Math.round(seconds * 1000);
            if (rate < 0 || seconds < 0 || Double.isNaN(rate) || Double.isInfinite(rate)) {
                throw new IllegalArgumentException(option + ": step '" + step.trim() + "' needs seconds >= 0 and a finite rate >= 0");
            }
            if (starts.isEmpty() ? ms != 0 : ms <= starts.get(starts.size() - 1)) {
                throw new IllegalArgumentException(option + ": steps must start at 0 and ascend (at '" + step.trim() + "')");
            }
            starts.add(ms);
            rates.add(rate);
        }
        long[] s = new long[starts.size()];
        double[] r = new double[rates.size()];
        for (int i = 0; i < s.length; i++) {
            s[i] = starts.get(i);
            r[i] = rates.get(i);
        }
        return new RateSchedule(s, r, originEpochMs);
    }

    /** The rate in force at wall-clock time {@code epochMs}. */
    double rateAt(long epochMs) {
        long t = epochMs - originEpochMs;
        double rate = rates[0];
        for (int i = 0; i < startsMs.length && startsMs[i] <= t; i++) {
            rate = rates[i];
        }
        return rate;
    }

    /** When the step after the one in force at {@code epochMs} begins (Long.MAX_VALUE after the last). */
    long nextStepAt(long epochMs) {
        long t = epochMs - originEpochMs;
        for (long start : startsMs) {
            if (start > t) {
                return originEpochMs + start;
            }
        }
        return Long.MAX_VALUE;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < startsMs.length; i++) {
            b.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.3f:%s", startsMs[i] / 1000.0, rates[i]));
        }
        return b.toString();
    }

    /** One subtask's limiter. The source reader asks again only once the previous acquire completed, so calls never
     * overlap (a paused step's retry runs on the delayed executor; the future's completion orders the accesses). */
    static final class Pacer {
        /** How far ahead of its booked time a record may leave: the average rate stays exact (the clock books every
         * record), records leave in bursts of at most 10 ms worth. */
        static final long AHEAD_NANOS = 10_000_000L;
        /** How far behind the clock a booking may start: the records a late wake-up missed, at most 100 ms of them. */
        static final long CATCH_UP_NANOS = 100_000_000L;
        /** Completes a delayed booking on the scheduler's thread: the completion only wakes the source's mailbox. */
        private static final Executor ON_SCHEDULER = Runnable::run;

        private final RateSchedule schedule;
        private long bookedUntilNanos = Long.MIN_VALUE;

        Pacer(RateSchedule schedule) {
            this.schedule = schedule;
        }

        CompletionStage<Void> acquire(int permits) {
            long nowNanos = System.nanoTime();
            long nowMs = System.currentTimeMillis();
            double rate = schedule.rateAt(nowMs);
            if (rate <= 0) { // a paused step: wait for the next one (or a second, and look again)
                long next = schedule.nextStepAt(nowMs);
                long waitMs = next == Long.MAX_VALUE ? 1000 : Math.max(1, Math.min(1000, next - nowMs));
                bookedUntilNanos = Long.MIN_VALUE;
                return CompletableFuture.runAsync(() -> {}, CompletableFuture.delayedExecutor(waitMs, TimeUnit.MILLISECONDS, ON_SCHEDULER))
                        .thenCompose(ignored -> acquire(permits));
            }
            // a booking woken late (the delay scheduler, the mailbox, a throttled cgroup) may catch up by CATCH_UP:
            // without it every late wake-up is lost for good; longer idle time earns no more (Flink's
            // GuavaRateLimiter stores up to a second)
            long start = Math.max(nowNanos - CATCH_UP_NANOS, bookedUntilNanos);
            bookedUntilNanos = start + (long) (permits * 1e9 / rate);
            long delay = start - nowNanos;
            if (delay <= AHEAD_NANOS) {
                return CompletableFuture.completedFuture(null);
            }
            return CompletableFuture.runAsync(() -> {}, CompletableFuture.delayedExecutor(delay, TimeUnit.NANOSECONDS, ON_SCHEDULER));
        }
    }
}
