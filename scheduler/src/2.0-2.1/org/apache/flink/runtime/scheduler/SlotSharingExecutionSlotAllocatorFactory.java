package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotProvider;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotRequestBulkChecker;

import java.time.Duration;

/**
 * REPLACES Flink's class of the same name (this jar sits in lib/, before flink-dist on the classpath); the work is
 * {@link PlacementAllocatorFactory}'s. Flink 2.0 and 2.1: {@code DefaultSchedulerComponents} calls this four-argument
 * constructor (a missing one is a NoSuchMethodError at the first job), and a job without a schedulercfg gets the
 * strategy Flink's own four-argument constructor picks: local-input-preferred.
 */
public class SlotSharingExecutionSlotAllocatorFactory extends PlacementAllocatorFactory {
    public SlotSharingExecutionSlotAllocatorFactory(
            PhysicalSlotProvider slotProvider,
            boolean slotWillBeOccupiedIndefinitely,
            PhysicalSlotRequestBulkChecker bulkChecker,
            Duration allocationTimeout) {
        super(slotProvider, slotWillBeOccupiedIndefinitely, bulkChecker, allocationTimeout,
                new LocalInputPreferredSlotSharingStrategy.Factory());
    }
}
