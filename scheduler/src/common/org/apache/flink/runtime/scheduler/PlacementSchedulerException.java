package org.apache.flink.runtime.scheduler;

/**
 * A failure of the placement scheduler extension that a user can fix (a malformed schedulercfg, an unlisted subtask,
 * an unknown TaskManager, a jar built for another Flink). Its message starts with {@link #PREFIX}, so it stands out in
 * a job's exception history and the JobManager log.
 */
public class PlacementSchedulerException extends RuntimeException {
    public static final String PREFIX = "placement scheduler: ";

    public PlacementSchedulerException(String message) {
        super(PREFIX + message);
    }

    public PlacementSchedulerException(String message, Throwable cause) {
        super(PREFIX + message, cause);
    }
}
