package org.apache.flink.runtime.scheduler;

import org.apache.flink.api.common.time.Time;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotProvider;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotRequestBulkChecker;

/**
 * REPLACES Flink's class of the same name (this jar sits in lib/, before flink-dist on the classpath); the work is
 * {@link PlacementAllocatorFactory}'s. Flink 1.19 and 1.20: {@code DefaultSchedulerComponents} calls this
 * four-argument constructor with a {@code Time} (Flink 2.0 removed that class for {@code Duration}), and a job
 * without a schedulercfg gets the strategy Flink's own four-argument constructor picks: local-input-preferred.
 */
public class SlotSharingExecutionSlotAllocatorFactory extends PlacementAllocatorFactory {
    public SlotSharingExecutionSlotAllocatorFactory(
            PhysicalSlotProvider slotProvider,
            boolean slotWillBeOccupiedIndefinitely,
            PhysicalSlotRequestBulkChecker bulkChecker,
            Time allocationTimeout) {
        super(slotProvider, slotWillBeOccupiedIndefinitely, bulkChecker, allocationTimeout.toDuration(),
                new LocalInputPreferredSlotSharingStrategy.Factory());
    }
}
