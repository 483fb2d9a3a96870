package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotProvider;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotRequestBulkChecker;

import java.time.Duration;

/**
 * REPLACES Flink's class of the same name (this jar sits in lib/, before flink-dist on the classpath); the work is
 * {@link PlacementAllocatorFactory}'s. Flink 2.2 and later: {@code DefaultSchedulerComponents} calls this five-argument
 * constructor, passing the slot sharing strategy the job's configuration chose (task-balanced or local-input).
 */
public class SlotSharingExecutionSlotAllocatorFactory extends PlacementAllocatorFactory {
    SlotSharingExecutionSlotAllocatorFactory(
            PhysicalSlotProvider slotProvider,
            boolean slotWillBeOccupiedIndefinitely,
            PhysicalSlotRequestBulkChecker bulkChecker,
            Duration allocationTimeout,
            SlotSharingStrategy.Factory slotSharingStrategyFactory) {
        super(slotProvider, slotWillBeOccupiedIndefinitely, bulkChecker, allocationTimeout, slotSharingStrategyFactory);
    }
}
